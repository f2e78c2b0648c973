"""Key, tensor, dtype and device transforms."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torchenv_transforms_helpers import CountingEnv

from torchenv.envs import EnvBase, check_env_specs
from torchenv.envs.builtin import CartPoleEnv, PendulumEnv
from torchenv.specs import Bounded, Composite, Unbounded
from torchenv.transforms import (
    CatTensors,
    ClipTransform,
    DeviceCastTransform,
    DoubleToFloat,
    DTypeCastTransform,
    ExcludeTransform,
    Hash,
    RemoveEmptySpecs,
    RenameTransform,
    SelectTransform,
    SignTransform,
    Stack,
    TransformedEnv,
    UnaryTransform,
)


# ----------------------------------------------------------------------------- rename / select / exclude
def test_rename_outputs_and_inputs():
    base = CountingEnv()
    env = TransformedEnv(base, RenameTransform(["observation"], ["obs"], ["action"], ["act"]))
    check_env_specs(env)
    td = env.reset()
    assert "obs" in td and "observation" not in td
    td["act"] = torch.full((1,), 0.5, dtype=torch.float64)
    out = env.step(td)
    assert base.actions[-1].item() == 0.5
    assert "act" in out and "action" not in out
    with pytest.raises(ValueError, match="overlap"):
        RenameTransform(["a"], ["a"])


def test_rename_create_copy_and_standalone():
    env = TransformedEnv(CartPoleEnv(), RenameTransform(["done"], ["done_copy"], create_copy=True))
    check_env_specs(env)
    assert {"done", "done_copy"} <= set(env.full_done_spec.keys())
    t = RenameTransform(["a"], ["b"], ["c"], ["d"])
    assert list(t(TensorDict(a=torch.zeros(1))).keys()) == ["b"]
    inv = t.inv(TensorDict(d=torch.zeros(1)))
    assert list(inv.keys()) == ["c"]


def test_exclude_and_inverse():
    env = TransformedEnv(CartPoleEnv(), ExcludeTransform("terminated"))
    check_env_specs(env)
    assert "terminated" not in env.rollout(2)["next"]
    with pytest.raises(KeyError, match="nope"):
        TransformedEnv(CartPoleEnv(), ExcludeTransform("nope")).output_spec  # noqa: B018
    td = TensorDict(a=torch.zeros(1), b=torch.zeros(1))
    assert set(ExcludeTransform("a")(td.clone()).keys()) == {"b"}
    t = ExcludeTransform("a", inverse=True)
    assert set(t(td.clone()).keys()) == {"a", "b"}
    assert set(t.inv(td).keys()) == {"b"}


def test_select(image_env):
    env = TransformedEnv(image_env(), SelectTransform("observation"))
    check_env_specs(env)
    out = env.rollout(2)["next"]
    assert set(out.keys()) == {"observation", "reward", "done", "terminated"}
    assert list(env.full_observation_spec.keys()) == ["observation"]
    # state entries are kept (a stateless env needs them to step)
    pendulum = TransformedEnv(PendulumEnv(), SelectTransform("observation"))
    check_env_specs(pendulum)
    assert "th" in pendulum.rollout(2)["next"]
    td = TensorDict(a=torch.zeros(1), b=torch.zeros(1), reward=torch.zeros(1))
    assert set(SelectTransform("a", keep_rewards=False)(td).keys()) == {"a"}


def test_remove_empty_specs():
    env = TransformedEnv(CartPoleEnv(), RemoveEmptySpecs())
    check_env_specs(env)
    td = TensorDict(a=torch.zeros(1), empty=TensorDict(), nested=TensorDict(inner=TensorDict()))
    assert list(RemoveEmptySpecs()(td).keys()) == ["a"]


# ----------------------------------------------------------------------------- cat / stack
def test_cat_tensors():
    env = TransformedEnv(CartPoleEnv(), CatTensors(["observation"], "vec"))
    check_env_specs(env)
    td = env.reset()
    assert td["vec"].shape == torch.Size([4]) and "observation" not in td
    keep = TransformedEnv(PendulumEnv(), CatTensors(["thdot", "th"], "vec", del_keys=False))
    check_env_specs(keep)
    td = keep.reset()
    assert td["vec"].tolist() == [td["th"].item(), td["thdot"].item()]
    out = CatTensors(["b", "a"], "ab", del_keys=False)(
        TensorDict(a=torch.zeros(2), b=torch.ones(1))
    )
    assert out["ab"].tolist() == [0.0, 0.0, 1.0]  # sorted keys: a then b
    assert "a" in out


def test_cat_tensors_default_keys_in_env():
    env = TransformedEnv(CartPoleEnv(), CatTensors(out_key="vec", del_keys=False))
    check_env_specs(env)
    assert env.reset()["vec"].shape == torch.Size([4])


def test_cat_tensors_bounded_spec():
    env = TransformedEnv(PendulumEnv(), CatTensors(["observation", "th"], "vec"))
    spec = env.observation_spec["vec"]
    assert isinstance(spec, Bounded) and spec.shape == torch.Size([4])


def test_stack_and_unstack():
    base = CountingEnv(obs_dim=2)
    env = TransformedEnv(
        base,
        RenameTransform(["observation"], ["o1"], create_copy=True),
    )
    env.append_transform(Stack(["observation", "o1"], "stacked", dim=-2))
    check_env_specs(env)
    assert env.reset()["stacked"].shape == torch.Size([2, 2])
    t = Stack(["a", "b"], "ab", in_key_inv="ab", out_keys_inv=["a", "b"], dim=-1)
    td = t(TensorDict(a=torch.zeros(3), b=torch.ones(3)))
    assert td["ab"].shape == torch.Size([3, 2]) and "a" not in td
    back = t.inv(td)
    assert torch.equal(back["b"], torch.ones(3)) and "ab" not in back


# ----------------------------------------------------------------------------- element-wise
def test_clip_transform():
    env = TransformedEnv(
        CartPoleEnv(), ClipTransform(["observation", "reward"], low=-0.01, high=0.01)
    )
    check_env_specs(env)
    td = env.rollout(5)
    assert (td["next", "observation"].abs() <= 0.01).all()
    assert (td["next", "reward"] == 0.01).all()
    base = CountingEnv()
    env = TransformedEnv(base, ClipTransform(in_keys_inv=["action"], low=-0.1, high=0.1))
    td = env.reset().set("action", torch.ones(1, dtype=torch.float64))
    env.step(td)
    assert base.actions[-1].item() == pytest.approx(0.1)
    with pytest.raises(ValueError, match="lower"):
        ClipTransform(["a"], low=1.0, high=0.0)


def test_sign_transform():
    env = TransformedEnv(PendulumEnv(), SignTransform(["observation", "reward"]))
    check_env_specs(env)
    td = env.rollout(3)
    assert set(td["next", "observation"].unique().tolist()) <= {-1.0, 0.0, 1.0}
    base = CountingEnv()
    env = TransformedEnv(base, SignTransform(in_keys_inv=["action"]))
    env.step(env.reset().set("action", torch.full((1,), -0.3, dtype=torch.float64)))
    assert base.actions[-1].item() == -1.0


def test_unary_transform():
    env = TransformedEnv(
        CartPoleEnv(), UnaryTransform(["observation"], ["obs_sq"], fn=lambda x: x.pow(2))
    )
    check_env_specs(env)
    td = env.reset()
    assert torch.allclose(td["obs_sq"], td["observation"].pow(2))
    base = CountingEnv()
    env = TransformedEnv(
        base, UnaryTransform([], [], ["action"], ["action"], fn=lambda x: x, inv_fn=lambda a: a * 3)
    )
    env.step(env.reset().set("action", torch.full((1,), 0.2, dtype=torch.float64)))
    assert base.actions[-1].item() == pytest.approx(0.6)


def test_hash():
    env = TransformedEnv(CartPoleEnv(batch_size=[2]), Hash(["observation"], ["hash"]))
    check_env_specs(env)
    td = env.reset()
    assert td["hash"].shape == torch.Size([2, 32]) and td["hash"].dtype == torch.uint8
    t = Hash(["s"], ["h"], ["s"], ["h"])
    data = TensorDict(s=torch.arange(6.0).reshape(2, 3), batch_size=[2])
    out = t(data)
    assert not torch.equal(out["h"][0], out["h"][1])
    again = Hash(["s"], ["h"])(TensorDict(s=torch.arange(6.0).reshape(2, 3), batch_size=[2]))
    assert torch.equal(again["h"], out["h"]), "the default hash is reproducible"
    back = t.inv(TensorDict(h=out["h"], batch_size=[2]))
    assert torch.equal(
        torch.stack(back["s"]) if isinstance(back["s"], list) else back["s"], data["s"]
    )


# ----------------------------------------------------------------------------- dtype / device
def test_double_to_float_automatic_keys():
    base = CountingEnv()
    env = TransformedEnv(base, DoubleToFloat())
    check_env_specs(env)
    assert env.observation_spec["observation"].dtype == torch.float32
    assert env.reward_spec.dtype == torch.float32
    assert env.action_spec.dtype == torch.float32
    td = env.rand_step()
    assert td["next", "observation"].dtype == torch.float32
    assert base.actions[-1].dtype == torch.float64
    assert env.transform[0].in_keys_inv == ["action"]


def test_double_to_float_standalone():
    td = TensorDict(a=torch.zeros(1, dtype=torch.float64), b=torch.zeros(1, dtype=torch.int64))
    out = DoubleToFloat()(td)
    assert out["a"].dtype == torch.float32 and out["b"].dtype == torch.int64
    inv = DoubleToFloat(in_keys=[], in_keys_inv=["a"]).inv(TensorDict(a=torch.zeros(1)))
    assert inv["a"].dtype == torch.float64


def test_dtype_cast_transform():
    env = TransformedEnv(
        CartPoleEnv(), DTypeCastTransform(torch.float32, torch.float64, in_keys=["observation"])
    )
    check_env_specs(env)
    assert env.reset()["observation"].dtype == torch.float64
    bad = DTypeCastTransform(torch.float32, torch.float16, in_keys=["observation"])
    with pytest.raises(TypeError, match="float32"):
        _ = TransformedEnv(CountingEnv(), bad).output_spec
    with pytest.raises(ValueError, match="out_keys"):
        DTypeCastTransform(torch.float32, torch.float64, out_keys=["x"])


def test_device_cast_transform():
    env = TransformedEnv(CartPoleEnv(), DeviceCastTransform("cpu"))
    check_env_specs(env)
    assert env.device == torch.device("cpu")
    assert env.reset().device == torch.device("cpu")
    td = DeviceCastTransform("cpu")(TensorDict(a=torch.zeros(1)))
    assert td.device == torch.device("cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_device_cast_transform_to_cuda():
    base = CountingEnv()
    env = TransformedEnv(base, DeviceCastTransform("cuda:0"))
    check_env_specs(env)
    assert env.device.type == "cuda"
    td = env.rand_step()
    assert td["next", "observation"].device.type == "cuda"
    assert base.actions[-1].device.type == "cpu"


# ----------------------------------------------------------------------------- ExpandAs
def test_expand_as_standalone_expands_to_the_right():
    from torchenv.transforms import ExpandAs

    td = TensorDict(a=torch.tensor([1.0, 2.0]), b=torch.zeros(2, 3, 4), batch_size=[2])
    out = ExpandAs("a", "b")(td)
    assert out["a"].shape == (2, 3, 4)
    assert (out["a"][1] == 2.0).all() and (out["a"][0] == 1.0).all()


def test_expand_as_done_under_a_new_key_is_an_observation():
    # TorchRL 0.14.1: done_x spec Categorical(shape=[3], bool) in the observation spec; reset
    # writes done_x of shape [3]; a rollout of 3 steps holds [3, 3] at the root and in "next".
    from torchenv.transforms import ExpandAs

    env = TransformedEnv(CountingEnv(), ExpandAs("done", "observation", out_key="done_x"))
    spec = env.observation_spec["done_x"]
    assert spec.shape == (3,) and spec.dtype == torch.bool
    assert sorted(env.full_done_spec.keys()) == ["done", "terminated", "truncated"]
    check_env_specs(env)
    assert env.reset()["done_x"].shape == (3,)
    rollout = env.rollout(3)
    assert rollout["done_x"].shape == (3, 3) and rollout["next", "done_x"].shape == (3, 3)


def test_expand_as_in_place_done_and_reward_from_spec():
    from torchenv.transforms import ExpandAs

    env = TransformedEnv(CountingEnv(batch_size=(2,)), ExpandAs("done", "observation"))
    assert env.full_done_spec["done"].shape == (2, 3)
    assert "done" not in env.observation_spec.keys(True, True)
    check_env_specs(env)
    assert env.reset()["done"].shape == (2, 3)
    assert env.rollout(2)["next", "done"].shape == (2, 2, 3)
    # a reward expanded under a new key is a reward; nothing is written at reset
    env = TransformedEnv(CountingEnv(), ExpandAs("reward", "observation", "rx"))
    assert env.full_reward_spec["rx"].shape == (3,)
    assert env.full_reward_spec["rx"].dtype == torch.float64
    check_env_specs(env)
    assert "rx" not in env.reset().keys(True, True)


def test_expand_as_errors_name_the_key():
    from torchenv.transforms import ExpandAs

    t = ExpandAs("a", "b")
    with pytest.raises(KeyError, match="'b'"):
        t(TensorDict(a=torch.tensor([1.0, 2.0]), batch_size=[2]))
    with pytest.raises(KeyError, match="'a'"):
        t(TensorDict(b=torch.tensor([1.0, 2.0]), batch_size=[2]))
    with pytest.raises(RuntimeError, match=r"\(2, 5\)"):
        t(TensorDict(a=torch.ones(2, 5), b=torch.zeros(2, 3, 4), batch_size=[2]))
    with pytest.raises(KeyError, match="zzz"):
        _ = TransformedEnv(CountingEnv(), ExpandAs("done", "zzz")).observation_spec
    with pytest.raises(KeyError, match="zzz"):
        _ = TransformedEnv(CountingEnv(), ExpandAs("zzz", "done")).observation_spec


class _MemoryEnv(EnvBase):
    """``pos = mem + action``; ``mem`` is an observation and a state (the next ``mem`` is ``pos``)."""

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(pos=Unbounded((1,)), mem=Unbounded((1,)))
        self.state_spec = Composite(mem=Unbounded((1,)))
        self.action_spec = Unbounded((1,))
        self.reward_spec = Unbounded((1,))

    def _reset(self, td):
        return TensorDict(pos=torch.zeros(1), mem=torch.full((1,), 10.0))

    def _step(self, td):
        pos = td["mem"] + td["action"]
        return TensorDict(
            pos=pos, mem=pos.clone(), reward=torch.zeros(1), done=torch.zeros(1, dtype=torch.bool)
        )

    def _set_seed(self, seed):
        pass


def test_select_drops_an_observation_that_is_a_state_from_the_observations_only():
    # TorchRL: the entry leaves the observation spec, stays a state, stays in the data, and
    # step_mdp then carries it from the input instead of taking it from "next"
    env = TransformedEnv(_MemoryEnv(), SelectTransform("pos"))
    assert list(env.observation_spec.keys()) == ["pos"]
    assert list(env.state_spec.keys()) == ["mem"]
    data = env.rollout(3, actions=[torch.ones(1)] * 3)
    assert data["next", "mem"].squeeze(-1).tolist() == [11.0, 11.0, 11.0]
    assert data["mem"].squeeze(-1).tolist() == [10.0, 10.0, 10.0]
    assert data["next", "pos"].squeeze(-1).tolist() == [11.0, 11.0, 11.0]
    # without the transform "mem" is an observation: taken from "next" at every step
    plain = _MemoryEnv().rollout(3, actions=[torch.ones(1)] * 3)
    assert plain["next", "pos"].squeeze(-1).tolist() == [11.0, 12.0, 13.0]
