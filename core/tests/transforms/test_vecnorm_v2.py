"""VecNormV2 and ``VecNorm(new_api=...)``, written the way a TorchRL 0.14.1 user writes them.

Expected numbers come from the running-statistics recursion written out below in float64
(``_reference``): first and second moments as exponential moving averages, bias-corrected by
``1 - decay**n`` (plain averages for ``decay=1``), ``scale`` floored at ``eps``.
"""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest
import torch
from tensordict import TensorDict

import torchenv
from torchenv import check_env_specs
from torchenv.batched import EnvCreator, ParallelEnv, SerialEnv
from torchenv.envs import PendulumEnv
from torchenv.specs import Bounded, Categorical, Composite, Unbounded
from torchenv.transforms import (
    Compose,
    ObservationNorm,
    TransformedEnv,
    VecNorm,
    VecNormV2,
)

EPS = 1e-4


def _reference(xs, decay: float, eps: float = EPS, batch: int = 1):
    """Outputs, loc and scale after each element of ``xs`` (arrays of shape ``[batch, ...]`` when
    the batch is reduced, else one array per step).

    With ``batch > 1`` the batch is averaged first and counts ``batch`` steps.
    """
    m = s = 0.0
    count = 0
    outs, locs, scales = [], [], []
    for x in xs:
        x = np.asarray(x, dtype=np.float64)
        if batch > 1:
            count += batch
            mean, sq = x.mean(0), (x**2).mean(0)
            w = 1 - decay**batch if decay != 1 else batch / count
        else:
            count += 1
            mean, sq = x, x**2
            w = 1 - decay if decay != 1 else 1 / count
        m = m + w * (mean - m)
        s = s + w * (sq - s)
        corr = 1 - decay**count if decay < 1 else 1.0
        loc = m / corr
        scale = np.maximum(np.sqrt((s - m * m) / corr), eps)
        outs.append((x - loc) / scale)
        locs.append(loc)
        scales.append(scale)
    return outs, locs, scales


def _close(actual: torch.Tensor, expected) -> None:
    expected = torch.as_tensor(np.asarray(expected), dtype=actual.dtype)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)


XS = [[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0], [2.0, 2.0], [0.0, -3.0]]


# ------------------------------------------------------------------ numbers
@pytest.mark.parametrize("decay", [0.9, 0.99, 1.0])
def test_stateful_running_statistics_follow_the_recursion(decay):
    t = VecNormV2(in_keys=["obs"], out_keys=["obs_norm"], decay=decay)
    outs, locs, scales = _reference(XS, decay)
    for x, out in zip(XS, outs):
        td = t(TensorDict(obs=torch.tensor(x)))
        _close(td["obs_norm"], out)
        torch.testing.assert_close(td["obs"], torch.tensor(x))  # the input is kept
    _close(t.loc["obs"], locs[-1])
    _close(t.scale["obs"], scales[-1])
    assert t.standard_normal is True


def test_first_value_is_normalised_to_zero():
    # after one update loc is the value itself: the bias correction undoes the decay
    t = VecNormV2(in_keys=["obs"], decay=0.9)
    out = t(TensorDict(obs=torch.tensor([5.0, -7.0])))["obs"]
    torch.testing.assert_close(out, torch.zeros(2), atol=1e-5, rtol=0)
    _close(t.scale["obs"], math.sqrt(0.9) * np.array([5.0, 7.0]))


@pytest.mark.parametrize("decay", [0.9, 1.0])
def test_reduce_batch_dims_averages_the_batch(decay):
    xs = [np.array([[1.0, 2.0], [3.0, -1.0]]) * (i + 1) for i in range(4)]
    t = VecNormV2(in_keys=["obs"], decay=decay, reduce_batch_dims=True)
    outs, locs, scales = _reference(xs, decay, batch=2)
    for x, out in zip(xs, outs):
        td = t(TensorDict(obs=torch.tensor(x, dtype=torch.float32), batch_size=[2]))
        _close(td["obs"], out)
    assert t.loc["obs"].shape == (2,)  # one set of statistics for the whole batch
    _close(t.loc["obs"], locs[-1])
    assert t.state_dict()["_extra_state"]["count.-|-.obs"].item() == 8


def test_without_reduce_each_batch_element_has_its_statistics():
    xs = [np.array([[1.0], [10.0]]) * (i + 1) for i in range(3)]
    t = VecNormV2(in_keys=["obs"], decay=0.9)
    for x in xs:
        t(TensorDict(obs=torch.tensor(x, dtype=torch.float32), batch_size=[2]))
    _, locs, _ = _reference([x[0] for x in xs], 0.9)
    _, locs1, _ = _reference([x[1] for x in xs], 0.9)
    _close(t.loc["obs"], np.stack([locs[-1], locs1[-1]]))
    assert t.state_dict()["_extra_state"]["count.-|-.obs"].item() == 3


def test_integer_entries_are_normalised_as_floats():
    t = VecNormV2(in_keys=["obs"], decay=1.0)
    for x in ([1, 2], [3, 6]):
        out = t(TensorDict(obs=torch.tensor(x)))["obs"]
    assert out.dtype == torch.get_default_dtype()
    _close(out, _reference([[1, 2], [3, 6]], 1.0)[0][-1])


# ---------------------------------------------------------------- in an env
def _pendulum(**kwargs) -> TransformedEnv:
    env = TransformedEnv(PendulumEnv(), VecNormV2(**kwargs))
    env.set_seed(0)
    return env


@pytest.mark.filterwarnings("ignore:Support of VecNormV2")
def test_env_rollout_normalises_observation_and_reward():
    env = _pendulum(
        in_keys=["observation", "reward"], out_keys=["obs_norm", "reward_norm"], decay=0.9
    )
    r = env.rollout(4)
    # the reset observation is the first update of the observation statistics
    obs = [r["observation"][0], *r["next", "observation"]]
    expected_obs, _, _ = _reference([o.numpy() for o in obs], 0.9)
    _close(r["obs_norm"][0], expected_obs[0])
    _close(r["next", "obs_norm"], np.stack(expected_obs[1:]))
    expected_rew, locs, scales = _reference([x.numpy() for x in r["next", "reward"]], 0.9)
    _close(r["next", "reward_norm"], np.stack(expected_rew))
    vecnorm = env.transform[0]
    _close(vecnorm.loc["reward"], locs[-1])
    _close(vecnorm.scale["reward"], scales[-1])
    extra = env.state_dict()["transforms.0._extra_state"]
    assert extra["count.-|-.observation"].item() == 5  # reset + 4 steps
    assert extra["count.-|-.reward"].item() == 4  # no reward at reset


@pytest.mark.filterwarnings("ignore:Support of VecNormV2")
def test_specs_become_unbounded_and_out_keys_are_declared():
    base = PendulumEnv()
    assert isinstance(base.observation_spec["observation"], Bounded)
    env = TransformedEnv(base, VecNormV2(in_keys=["observation"], out_keys=["obs_norm"]))
    spec = env.observation_spec
    assert isinstance(spec["observation"], Bounded)  # kept when written elsewhere
    assert isinstance(spec["obs_norm"], Unbounded)
    assert spec["obs_norm"].shape == spec["observation"].shape
    env = TransformedEnv(PendulumEnv(), VecNormV2(in_keys=["observation"]))
    assert isinstance(env.observation_spec["observation"], Unbounded)
    check_env_specs(env)


def test_integer_specs_are_cast_to_float():
    t = VecNormV2(in_keys=["cat"], out_keys=["cat_norm"])
    spec = t.transform_observation_spec(Composite(cat=Categorical(5, shape=(2,))))
    assert isinstance(spec["cat"], Categorical)
    assert isinstance(spec["cat_norm"], Unbounded)
    assert spec["cat_norm"].dtype == torch.get_default_dtype()


@pytest.mark.filterwarnings("ignore:Support of VecNormV2")
def test_statistics_exist_once_in_an_env():
    env = _pendulum(in_keys=["observation", "reward"])
    state = env.transform[0].state_dict()
    assert state["initialized"].item() is True
    assert sorted(state["_extra_state"]) == [
        "count.-|-.observation",
        "count.-|-.reward",
        "loc.-|-.observation",
        "loc.-|-.reward",
        "var.-|-.observation",
        "var.-|-.reward",
    ]
    assert state["_extra_state"]["count.-|-.reward"].dtype == torch.int64
    assert not state["_extra_state"]["loc.-|-.observation"].any()


# ------------------------------------------------------------------ stateless
@pytest.mark.filterwarnings("ignore:Support of VecNormV2")
def test_stateless_statistics_travel_with_the_data():
    env = _pendulum(in_keys=["observation"], out_keys=["obs_norm"], stateful=False, decay=0.9)
    spec = env.observation_spec
    for name in ("_vecnorm_loc", "_vecnorm_var", "_vecnorm_count"):
        assert isinstance(spec[name], Composite)
        assert spec[name, "observation"].shape == (3,)
    assert spec["_vecnorm_count", "observation"].dtype == torch.int64
    assert isinstance(spec["_vecnorm_loc", "observation"], Unbounded)
    assert env.transform[0].in_keys == [
        "observation",
        "_vecnorm_count",
        "_vecnorm_loc",
        "_vecnorm_var",
    ]
    check_env_specs(env)
    r = env.rollout(3)
    for where in ((), ("next",)):
        for name in ("_vecnorm_loc", "_vecnorm_var", "_vecnorm_count"):
            assert (*where, name, "observation") in r.keys(True, True)
    # per element counts: reset, then one per step
    assert r["next", "_vecnorm_count", "observation"][:, 0].tolist() == [2, 3, 4]
    obs = [r["observation"][0], *r["next", "observation"]]
    expected, _, _ = _reference([o.numpy() for o in obs], 0.9)
    _close(r["next", "obs_norm"], np.stack(expected[1:]))
    # the statistics restart with each episode (they are in the reset data)
    assert env.reset()["_vecnorm_count", "observation"].tolist() == [1, 1, 1]
    assert env.transform[0].state_dict() == {"_extra_state": {}}
    # a step whose input lacks them starts from zeros, as TorchRL's (nothing is kept aside)
    td = env.reset().exclude("_vecnorm_loc", "_vecnorm_var", "_vecnorm_count")
    stepped = env.step(td.set("action", torch.zeros(1)))
    assert stepped["next", "_vecnorm_count", "observation"].tolist() == [1, 1, 1]


@pytest.mark.filterwarnings("ignore:Support of VecNormV2")
def test_stateless_reward_keys_are_zero_at_reset_then_updated():
    env = _pendulum(in_keys=["observation", "reward"], stateful=False, decay=0.9)
    td = env.reset()
    assert td["_vecnorm_count", "reward"].tolist() == [0]
    r = env.rollout(2)
    assert r["next", "_vecnorm_count", "reward"][:, 0].tolist() == [1, 2]


@pytest.mark.filterwarnings("ignore:Support of VecNormV2")
def test_two_stateless_vecnorms_get_distinct_entries():
    env = TransformedEnv(
        PendulumEnv(),
        Compose(
            VecNormV2(in_keys=["observation"], stateful=False),
            VecNormV2(in_keys=["reward"], stateful=False),
        ),
    )
    first, second = env.transform
    assert first.prefix == "_vecnorm"
    assert second.prefix.startswith("_vecnorm") and second.prefix != "_vecnorm"
    r = env.rollout(2)
    assert ("next", f"{second.prefix}_loc", "reward") in r.keys(True, True)


def test_stateless_refusals():
    with pytest.raises(RuntimeError, match="reduce_batch_dims"):
        VecNormV2(in_keys=["obs"], stateful=False, reduce_batch_dims=True)
    t = VecNormV2(in_keys=["obs"], stateful=False)
    t(TensorDict(obs=torch.ones(2)))
    with pytest.raises(RuntimeError):
        _ = t.loc
    with pytest.raises(RuntimeError):
        _ = t.scale
    with pytest.raises(NotImplementedError):
        t.denorm(TensorDict(obs=torch.ones(2)))
    with pytest.raises(NotImplementedError):
        t.to_observation_norm()
    with pytest.raises(RuntimeError, match="frozen copy"):
        t.frozen_copy()


# --------------------------------------------------------- state and copies
def _fed(decay: float = 0.9, values=XS) -> VecNormV2:
    t = VecNormV2(in_keys=["obs"], out_keys=["obs_norm"], decay=decay)
    for x in values:
        t(TensorDict(obs=torch.tensor(x)))
    return t


def test_state_dict_round_trip():
    trained = _fed()
    state = trained.state_dict()
    assert list(state) == ["initialized", "_extra_state"]
    assert state["_extra_state"]["count.-|-.obs"].item() == len(XS)
    fresh = VecNormV2(in_keys=["obs"], out_keys=["obs_norm"], decay=0.9)
    fresh.load_state_dict(state)
    torch.testing.assert_close(fresh.loc["obs"], trained.loc["obs"])
    torch.testing.assert_close(fresh.scale["obs"], trained.scale["obs"])
    x = TensorDict(obs=torch.tensor([0.3, -0.2]))
    torch.testing.assert_close(fresh(x.clone())["obs_norm"], trained(x.clone())["obs_norm"])
    # loading copies: the two transforms do not share their statistics afterwards
    fresh(TensorDict(obs=torch.tensor([9.0, 9.0])))
    assert not torch.equal(fresh.loc["obs"], trained.loc["obs"])


def test_uninitialized_state_dict_warns_and_is_refused_by_an_initialized_one():
    fresh = VecNormV2(in_keys=["obs"])
    with pytest.warns(UserWarning, match="uninitialized"):
        state = fresh.state_dict()
    assert state["_extra_state"] == {}
    with pytest.raises(RuntimeError, match="void state-dict"):
        _fed().load_state_dict(state)


def test_shared_data_is_used_in_place():
    shared = TensorDict(
        loc=TensorDict(obs=torch.zeros(2)),
        var=TensorDict(obs=torch.zeros(2)),
        count=TensorDict(obs=torch.zeros((), dtype=torch.int64)),
    )
    t = VecNormV2(in_keys=["obs"], decay=1.0, shared_data=shared)
    t(TensorDict(obs=torch.tensor([2.0, 4.0])))
    assert shared["count", "obs"].item() == 1
    torch.testing.assert_close(shared["loc", "obs"], torch.tensor([2.0, 4.0]))
    with pytest.raises(NotImplementedError):
        VecNormV2(in_keys=["obs"], stateful=False, shared_data=shared)


def test_denorm_inverts_the_normalisation():
    t = _fed().freeze()
    data = TensorDict(obs=torch.tensor([[0.5, 1.5], [-2.0, 3.0]]), batch_size=[2])
    normed = t(data.clone())
    restored = t.denorm(normed.exclude("obs"))
    torch.testing.assert_close(restored["obs"], data["obs"], rtol=1e-5, atol=1e-5)
    assert "obs" not in normed.exclude("obs")  # denorm works on a copy
    with pytest.raises(RuntimeError, match="initialized"):
        VecNormV2(in_keys=["obs"]).denorm(normed)


def test_freeze_stops_updates_and_unfreeze_resumes():
    t = _fed()
    loc, scale = t.loc["obs"].clone(), t.scale["obs"].clone()
    t.freeze()
    out = t(TensorDict(obs=torch.tensor([100.0, -100.0])))["obs_norm"]
    torch.testing.assert_close(t.loc["obs"], loc)
    torch.testing.assert_close(out, (torch.tensor([100.0, -100.0]) - loc) / scale)
    t.unfreeze()
    t(TensorDict(obs=torch.tensor([100.0, -100.0])))
    assert not torch.equal(t.loc["obs"], loc)


def test_frozen_copy_and_clone_hold_their_own_statistics():
    t = _fed()
    frozen = t.frozen_copy()
    clone = t.clone()
    assert frozen.frozen and not t.frozen and not clone.frozen
    loc = t.loc["obs"].clone()
    t(TensorDict(obs=torch.tensor([50.0, 50.0])))
    torch.testing.assert_close(frozen.loc["obs"], loc)
    torch.testing.assert_close(clone.loc["obs"], loc)
    with pytest.raises(RuntimeError, match="initialized"):
        VecNormV2(in_keys=["obs"]).frozen_copy()


def test_to_observation_norm_matches_the_frozen_transform():
    t = _fed()
    norm = t.to_observation_norm()
    assert isinstance(norm, ObservationNorm)
    x = TensorDict(obs=torch.tensor([0.7, -1.3]))
    expected = t.frozen_copy()(x.clone())["obs_norm"]
    torch.testing.assert_close(norm(x.clone())["obs_norm"], expected)
    two = VecNormV2(in_keys=["a", "b"])
    two(TensorDict(a=torch.ones(1), b=torch.zeros(1)))
    assert isinstance(two.to_observation_norm(), Compose)


def test_missing_entry_names_the_key():
    t = VecNormV2(in_keys=["obs"])
    with pytest.raises(KeyError, match="'obs'"):
        t(TensorDict(other=torch.ones(1)))


def test_pickles_with_a_lock():
    lock = torch.multiprocessing.Lock()
    t = _fed()
    t.lock = lock
    copy = pickle.loads(pickle.dumps(t))
    assert copy.lock is not None and copy.lock is not lock
    torch.testing.assert_close(copy.loc["obs"], t.loc["obs"])


def test_decay_out_of_range_is_refused():
    with pytest.raises(ValueError, match="decay"):
        VecNormV2(in_keys=["obs"], decay=1.5)


# ------------------------------------------------------------ new_api switch
def test_new_api_true_returns_a_vecnormv2():
    t = VecNorm(in_keys=["observation"], new_api=True, stateful=False, decay=0.5)
    assert isinstance(t, VecNormV2)
    assert not isinstance(t, VecNorm)
    assert t.stateful is False and t.decay == 0.5
    with pytest.raises(TypeError):
        VecNorm(new_api=True)  # VecNormV2 needs in_keys


def test_new_api_false_and_none_keep_the_old_class():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert type(VecNorm(in_keys=["observation"], new_api=False)) is VecNorm
    with pytest.warns(FutureWarning, match="new_api"):
        assert type(VecNorm(in_keys=["observation"])) is VecNorm
    with pytest.raises(TypeError):
        VecNorm(in_keys=["observation"], stateful=False, new_api=False)


def test_exported_from_the_facades():
    assert torchenv.VecNormV2 is VecNormV2
    assert "VecNormV2" in torchenv.transforms.__all__


# ------------------------------------------------------------ batched envs
def _make_env():
    return TransformedEnv(PendulumEnv(), VecNormV2(in_keys=["observation", "reward"], decay=0.99))


@pytest.mark.filterwarnings("ignore:Support of VecNormV2")
@pytest.mark.parametrize("batched", [SerialEnv, ParallelEnv])
def test_env_creator_shares_the_statistics(batched):
    creator = EnvCreator(_make_env)
    local = creator()
    env = batched(2, creator)
    try:
        env.rollout(5, break_when_any_done=False)
    finally:
        env.close()
    count = local.transform[0].state_dict()["_extra_state"]["count.-|-.observation"].item()
    if batched is SerialEnv:
        assert count == 12  # 2 sub-envs x (reset + 5 steps), in the one shared set
    else:  # workers update concurrently: an update may be lost
        assert 6 < count <= 12
    assert local.transform[0].loc["reward"].item() < 0  # Pendulum's rewards are negative


@pytest.mark.filterwarnings("ignore:Support of VecNormV2")
def test_over_a_batched_env_with_and_without_reduce_batch_dims():
    env = TransformedEnv(
        SerialEnv(2, PendulumEnv), VecNormV2(in_keys=["observation"], reduce_batch_dims=True)
    )
    env.rollout(3)
    extra = env.transform[0].state_dict()["_extra_state"]
    assert extra["loc.-|-.observation"].shape == (3,)
    assert extra["count.-|-.observation"].item() == 8  # 2 x (reset + 3 steps)
    env = TransformedEnv(SerialEnv(2, PendulumEnv), VecNormV2(in_keys=["observation"]))
    with pytest.warns(UserWarning, match="non-empty batch-size"):
        TransformedEnv(SerialEnv(2, PendulumEnv), VecNormV2(in_keys=["observation"]))
    env.rollout(3)
    extra = env.transform[0].state_dict()["_extra_state"]
    assert extra["loc.-|-.observation"].shape == (2, 3)
    assert extra["count.-|-.observation"].item() == 4


def _make_stateless_env():
    return TransformedEnv(
        PendulumEnv(),
        VecNormV2(in_keys=["observation"], out_keys=["obs_norm"], stateful=False, decay=0.9),
    )


@pytest.mark.filterwarnings("ignore:Support of VecNormV2")
@pytest.mark.parametrize("batched", [SerialEnv, ParallelEnv])
def test_stateless_statistics_continue_in_each_sub_env(batched):
    env = batched(2, _make_stateless_env)
    try:
        r = env.rollout(3)
    finally:
        env.close()
    assert r["next", "_vecnorm_count", "observation"][..., 0].tolist() == [[2, 3, 4]] * 2
    for i in range(2):
        obs = [r["observation"][i, 0], *r["next", "observation"][i]]
        expected, _, _ = _reference([o.numpy() for o in obs], 0.9)
        _close(r["next", "obs_norm"][i], np.stack(expected[1:]))
