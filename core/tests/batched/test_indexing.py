"""``env[i]`` / ``env[1:]`` / ``env[[0, 2]]``: views over some workers of a batched env.

The expected values are TorchRL 0.14.1's (``BatchedEnvBase.__getitem__``), checked by running
it: a view of the same type, batch size the number of selected workers, sharing the parent's
sub-environments; closing it leaves the parent running; closing the parent kills it.
"""

from __future__ import annotations

import os

import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import EnvClosedError, ParallelEnv, SerialEnv

BOTH = [SerialEnv, pytest.param(ParallelEnv, marks=pytest.mark.parallel)]
SCALES = [{"scale": 1.0}, {"scale": 2.0}, {"scale": 3.0}]  # tells the workers apart


@pytest.fixture(params=BOTH, ids=["serial", "parallel"])
def batched_cls(request):
    return request.param


@pytest.fixture
def make(batched_cls, noise_env_cls):
    made = []

    def _make(n=3, kwargs=SCALES):
        env = batched_cls(n, noise_env_cls, create_env_kwargs=kwargs[:n])
        made.append(env)
        return env

    yield _make
    for env in made:
        env.close()


def zeros_policy(td):
    return td.set("action", torch.zeros(*td.batch_size, 1))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def _children() -> set[int]:
    """The live child processes of this process."""
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                out.add(int(entry))
    return out


# ---------------------------------------------------------------------------- index kinds
@pytest.mark.parametrize(
    "item, workers",
    [
        (0, [0]),
        (2, [2]),
        (-1, [2]),
        (-3, [0]),
        (slice(1, None), [1, 2]),
        (slice(None, None, 2), [0, 2]),
        (slice(None, None, -1), [2, 1, 0]),
        ([0, 2], [0, 2]),
        ([2, 0], [2, 0]),
        ((0, 1), [0, 1]),
        (range(2), [0, 1]),
        ([-1, 0], [2, 0]),
        (torch.tensor([2, 0]), [2, 0]),
        (torch.tensor(1), [1]),
    ],
    ids=repr,
)
def test_index_selects_workers(make, batched_cls, item, workers):
    env = make()
    view = env[item]
    assert type(view) is batched_cls  # TorchRL: type(self)
    assert view.batch_size == torch.Size([len(workers)])
    assert view.num_workers == len(workers)
    assert view.scale == [SCALES[i]["scale"] for i in workers]
    assert view.reset().batch_size == torch.Size([len(workers)])


def test_view_specs_are_the_parents_restricted(make, batched_cls, noise_env_cls):
    env = make()
    view = env[[0, 2]]
    ref = batched_cls(2, noise_env_cls)
    try:
        assert view.action_spec.shape == torch.Size([2, 1])
        assert view.full_observation_spec["obs"].shape == torch.Size([2, 3])
        assert view.full_done_spec["done"].shape == torch.Size([2, 1])
        assert view.output_spec == ref.output_spec
        assert view.input_spec == ref.input_spec
        assert view.done_keys == env.done_keys
        assert view.device == env.device
    finally:
        ref.close()


def test_view_of_a_view(make):
    env = make()
    inner = env[1:][1]  # TorchRL: worker 2 of the parent
    assert inner.batch_size == torch.Size([1])
    assert inner.scale == [3.0]
    inner.reset()
    assert env.count == [0, 0, 0]


@pytest.mark.parametrize(
    "item, error, match",
    [
        (True, NotImplementedError, r"Boolean masks are not supported .*True"),
        ([True, False, True], NotImplementedError, r"Boolean masks are not supported"),
        (torch.tensor([True, False, True]), NotImplementedError, r"Boolean masks"),
        (3, IndexError, r"index 3 is out of range .* 3 envs \(expected -3 <= index < 3\)"),
        (-4, IndexError, r"index -4 is out of range .* 3 envs \(expected -3 <= index < 3\)"),
        ([0, 3], IndexError, r"index 3 is out of range"),
        ([], IndexError, r"Empty batched env indexing is not supported: \[\]"),
        (slice(5, None), IndexError, r"Empty batched env indexing .*slice\(5, None, None\)"),
        (torch.zeros(2, 2, dtype=torch.long), IndexError, r"scalar or 1D, got shape \(2, 2\)"),
        ("a", TypeError, r"must be an int, a slice, .*got str 'a'"),
        (None, RuntimeError, r"must be an int, a slice, .*got NoneType None"),
        (..., RuntimeError, r"must be an int, a slice, .*got ellipsis"),
        # TorchRL reads a float as int(item) (env[1.5] is env[1]); we refuse it
        (1.5, TypeError, r"must be an int, a slice, .*got float 1.5"),
        ([0.0, 1.0], TypeError, r"dtype torch.float32"),
    ],
    ids=repr,
)
def test_bad_index_raises(make, item, error, match):
    env = make()
    with pytest.raises(error, match=match):
        env[item]


def test_duplicate_index_runs_the_worker_twice(make):
    env = make()
    view = env[[1, 1]]  # TorchRL accepts it
    assert view.batch_size == torch.Size([2])
    td = view.reset()
    out = view.step(td.set("action", torch.zeros(2, 1)))
    assert out["next", "count"].flatten().tolist() == [1, 2]  # one step after the other
    assert env.count == [0, 2, 0]


# ---------------------------------------------------------------------------- stepping
def test_step_and_reset_touch_only_the_selected_workers(make):
    env = make()
    env.set_seed(0)
    td = env.reset()
    env.step(td.set("action", torch.zeros(3, 1)))
    assert env.count == [1, 1, 1]
    view = env[[0, 2]]
    vtd = view.reset()
    assert env.count == [0, 1, 0]
    view.step(vtd.set("action", torch.zeros(2, 1)))
    view.step(vtd.set("action", torch.zeros(2, 1)))
    assert env.count == [2, 1, 2]
    assert view.count == [2, 2]


def test_view_results_equal_the_parents(make):
    """Steps through a view equal what the same workers give through the parent (partial
    steps and resets), and the parent carries on from there."""
    a, b = make(), make()
    a.set_seed(7)
    b.set_seed(7)
    a.reset()
    tb = b.reset()
    actions = torch.tensor([[0.1], [0.2], [0.3]])
    view = a[[0, 2]]
    mask = torch.tensor([True, False, True])
    for _ in range(3):
        vout = view.step(TensorDict(action=actions[[0, 2]], batch_size=[2]))
        bout = b.step(TensorDict(action=actions, _step=mask, batch_size=[3]))
        torch.testing.assert_close(vout["next"].to_dict(), bout["next"][[0, 2]].to_dict())
    vreset = view.reset()
    breset = b.reset(tb.exclude("_step").set("_reset", torch.tensor([[True], [False], [True]])))
    torch.testing.assert_close(vreset["obs"], breset["obs"][[0, 2]])
    # the parent's own steps: all workers agree, worker 1 kept its state
    full = torch.zeros(3, 1)
    oa = a.step(a.reset().set("action", full))
    ob = b.step(b.reset().set("action", full))
    torch.testing.assert_close(oa["next"].to_dict(), ob["next"].to_dict())


def test_rollout_on_a_view_equals_the_parents(make):
    a, b = make(), make()
    a.set_seed(3)
    b.set_seed(3)
    view = a[[2, 0]]
    r_view = view.rollout(8, zeros_policy, break_when_any_done=False)
    r_full = b.rollout(8, zeros_policy, break_when_any_done=False)
    assert r_view.batch_size == torch.Size([2, 8])
    torch.testing.assert_close(r_view.to_dict(), r_full[[2, 0]].to_dict())
    assert a.count[1] == 0  # worker 1 was neither reset nor stepped by the view's rollout


def test_step_and_maybe_reset_on_a_view(make):
    a, b = make(), make()
    a.set_seed(5)
    b.set_seed(5)
    view = a[1:]
    vtd, btd = view.reset(), b.reset()
    for _ in range(10):  # episodes end after 3..7 steps: resets happen
        vtd.set("action", torch.full((2, 1), 0.5))
        btd.set("action", torch.full((3, 1), 0.5))
        vout, vtd = view.step_and_maybe_reset(vtd)
        bout, btd = b.step_and_maybe_reset(btd)
        assert vout.batch_size == vtd.batch_size == torch.Size([2])
        torch.testing.assert_close(vout["next"].to_dict(), bout["next"][1:].to_dict())
        torch.testing.assert_close(vtd["obs"], btd["obs"][1:])
    assert a.count[0] == 0


def test_partial_reset_on_a_view(make):
    env = make()
    view = env[[0, 1]]
    td = view.reset()
    view.step(td.set("action", torch.zeros(2, 1)))
    view.reset(td.set("_reset", torch.tensor([[True], [False]])))
    assert env.count == [0, 1, 0]


def test_set_seed_on_a_view_chains_over_its_workers(make, batched_cls, noise_env_cls):
    env = make()
    view = env[[1, 2]]
    ref = batched_cls(2, noise_env_cls, create_env_kwargs=SCALES[1:])
    try:
        assert view.set_seed(11) == ref.set_seed(11)
        torch.testing.assert_close(view.reset()["obs"], ref.reset()["obs"])
    finally:
        ref.close()


# ---------------------------------------------------------------------------- lifecycle
def test_indexing_starts_a_not_started_env(batched_cls, noise_env_cls):
    env = batched_cls(3, noise_env_cls)
    try:
        view = env[0]  # TorchRL starts the parent; the view starts nothing of its own
        assert not env.is_closed and not view.is_closed
        if batched_cls is ParallelEnv:
            assert len(env.worker_pids) == 3
            assert view.worker_pids == env.worker_pids[:1]
        else:
            assert view.envs == env.envs[:1]
        assert view.reset().batch_size == torch.Size([1])
    finally:
        env.close()


def test_indexing_a_closed_env_restarts_it(make):
    env = make()
    env.reset()
    env.close()
    view = env[1:]  # TorchRL: the parent is started again
    assert not env.is_closed
    assert view.reset().batch_size == torch.Size([2])


def test_closing_a_view_leaves_the_parent_running(make, batched_cls):
    env = make()
    env.reset()
    pids = list(env.worker_pids) if batched_cls is ParallelEnv else []
    view = env[:2]
    view.reset()
    view.close()
    view.close()  # idempotent, as every env here (TorchRL raises unless raise_if_closed=False)
    assert view.is_closed and not env.is_closed
    assert all(_alive(pid) for pid in pids)
    assert env.reset().batch_size == torch.Size([3])
    assert env.count == [0, 0, 0]
    for use in (view.reset, lambda: view.rollout(2), lambda: view[0], view.set_seed):
        with pytest.raises(RuntimeError, match="closed indexed batched environment view"):
            use()
    with pytest.raises(EnvClosedError):
        view.step(env.reset()[:2].set("action", torch.zeros(2, 1)))
    with pytest.raises(RuntimeError, match="already closed"):
        view.close(raise_if_closed=True)
    assert env[0].reset().batch_size == torch.Size([1])  # a new view works


def test_closing_the_parent_kills_the_view(make, batched_cls):
    env = make()
    view = env[[0, 2]]
    td = view.reset()
    pids = list(env.worker_pids) if batched_cls is ParallelEnv else []
    env.close()
    assert not any(_alive(pid) for pid in pids)  # nothing left running
    with pytest.raises(RuntimeError, match="after its parent environment has been closed"):
        view.step(td.set("action", torch.zeros(2, 1)))
    assert view.is_closed  # as TorchRL: the view knows it is closed once used
    with pytest.raises(RuntimeError, match="closed indexed batched environment view"):
        view.reset()
    if batched_cls is ParallelEnv:
        assert view.worker_pids == []
    # restarting the parent does not revive old views
    view2 = env[0]
    env.close()
    env.reset()
    with pytest.raises(RuntimeError, match="after its parent environment has been closed"):
        view2.reset()


@pytest.mark.parallel
def test_views_start_no_process(noise_env_cls):
    env = ParallelEnv(3, noise_env_cls)
    env.reset()
    before = _children()
    views = [env[i] for i in range(3)] + [env[1:], env[[0, 0]]]
    for view in views:
        view.rollout(3, zeros_policy)
        view.close()
    assert _children() == before  # the views started nothing and left nothing behind
    pids = env.worker_pids
    env.close()
    assert not any(_alive(pid) for pid in pids)
    assert not _children() & set(pids)


def test_view_without_buffers(batched_cls, dynamic_env_cls):
    env = batched_cls(3, dynamic_env_cls)  # dynamic specs: the parent moves TensorDicts too
    try:
        view = env[[2, 1]]
        out = view.rollout(3, break_when_any_done=False, return_contiguous=False)
        assert out.batch_size == torch.Size([2, 3])
        assert env.count == [0, 3, 3]
    finally:
        env.close()


def test_view_of_a_multi_task_env(batched_cls, noise_env_cls):
    def make_a():
        return noise_env_cls(obs_dim=3)

    def make_b():
        return noise_env_cls(obs_dim=4)

    env = batched_cls(3, [make_a, make_b, make_a])
    try:
        same = env[[0, 2]]  # identical specs: dense outputs
        assert same.reset()["obs"].shape == torch.Size([2, 3])
        mixed = env[1:]  # different specs: a lazy stack, as the parent's
        out = mixed.rollout(2, zeros_policy, break_when_any_done=False)
        assert [td["obs"].shape[-1] for td in out.unbind(0)] == [4, 3]
        assert env.count == [0, 2, 2]
    finally:
        env.close()
