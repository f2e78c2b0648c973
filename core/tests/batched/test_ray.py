"""RayParallelEnv on a real local Ray: same data as ParallelEnv, async mode, faults, cleanup."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import EnvClosedError, ParallelEnv, RayParallelEnv, SerialEnv, WorkerError
from torchenv.envs import EnvBase
from torchenv.envs.builtin import CartPoleEnv, PendulumEnv
from torchenv.specs import Bounded, Composite, Unbounded
from torchenv.testing import BatchedEnvConformanceTests

# One local Ray per test process: under pytest-xdist (--dist loadgroup) every Ray test runs on the
# same worker, so the session starts one Ray, not one per worker.
pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_local"), pytest.mark.xdist_group("ray")]


@pytest.fixture(autouse=True)
def _conftest_by_value(ray_local, noise_env_cls):
    """The test envs live in a conftest that Ray's workers cannot import: ship them by value."""
    ray_local.cloudpickle.register_pickle_by_value(sys.modules[noise_env_cls.__module__])
    ray_local.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _wait_gone(pids, timeout=15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _collect(env, steps: int, seed: int, discrete: bool = False) -> list:
    """``step_and_maybe_reset`` with the same pre-drawn actions for every env compared."""
    env.set_seed(seed)
    td = env.reset()
    g = torch.Generator().manual_seed(99)
    shape = env.full_action_spec[env.action_key].shape
    out = []
    for _ in range(steps):
        if discrete:
            action = torch.randint(0, 2, shape, generator=g)
        else:
            action = torch.rand(shape, generator=g) * 2 - 1
        td.set(env.action_key, action)
        data, td = env.step_and_maybe_reset(td)
        out.append(data.clone())
    return out


def _assert_same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert set(x.keys(True, True)) == set(y.keys(True, True))
        for key in x.keys(True, True):
            torch.testing.assert_close(x.get(key), y.get(key), rtol=0, atol=0, msg=str(key))


@pytest.mark.parametrize(
    ("make", "kwargs", "discrete"),
    [
        ("noise", {}, False),  # episodes end and reset inside the workers
        (CartPoleEnv, {"batch_size": [3]}, True),  # a natively batched sub-env
    ],
    ids=["noise", "cartpole-batched"],
)
def test_same_data_as_parallel_env(make, kwargs, discrete, noise_env_cls):
    make = noise_env_cls if make == "noise" else make
    ray_env = RayParallelEnv(2, make, kwargs)
    par_env = ParallelEnv(2, make, kwargs)
    try:
        assert ray_env.batch_size == par_env.batch_size
        assert ray_env.output_spec == par_env.output_spec
        got, expected = _collect(ray_env, 15, 3, discrete), _collect(par_env, 15, 3, discrete)
        assert any(bool(d["next", "done"].any()) for d in expected)  # resets were exercised
        _assert_same(got, expected)
        # rollout and the chained seeds too
        assert ray_env.set_seed(11) == par_env.set_seed(11)
        torch.manual_seed(0)
        r1 = ray_env.rollout(6, break_when_any_done=False)
        torch.manual_seed(0)
        r2 = par_env.rollout(6, break_when_any_done=False)
        _assert_same([r1], [r2])
    finally:
        ray_env.close()
        par_env.close()


def test_gym_vector_env_shards_match_parallel_env():
    """One actor per shard of a gymnasium vector env (natively batched)."""
    gym_plugin = pytest.importorskip("torchenv_gym")
    pytest.importorskip("gymnasium")
    make = functools.partial(gym_plugin.GymEnv, "CartPole-v1", num_envs=4)
    ray_env = RayParallelEnv(2, make)
    par_env = ParallelEnv(2, make)
    try:
        assert ray_env.batch_size == torch.Size([2, 4])
        _assert_same(_collect(ray_env, 30, 5, True), _collect(par_env, 30, 5, True))
    finally:
        ray_env.close()
        par_env.close()


def test_registry_name_and_partial_step_and_reset(noise_env_cls):
    env = RayParallelEnv(2, "builtin:Pendulum")
    assert env.batch_size == torch.Size([2])
    assert isinstance(env.reset()["observation"], torch.Tensor)
    env.close()

    env = RayParallelEnv(3, noise_env_cls, num_cpus=0.5)  # the local Ray has 2 CPUs
    td = env.reset().set("action", torch.zeros(3, 1))
    td.set("_step", torch.tensor([True, False, True]))
    out = env.step(td)
    assert env.count == [1, 0, 1]
    torch.testing.assert_close(out["next", "obs"][1], td["obs"][1])
    td = out["next"].exclude("reward").set("_reset", torch.tensor([[False], [True], [False]]))
    before = td["obs"].clone()
    out = env.reset(td)
    assert env.count == [1, 0, 1]
    torch.testing.assert_close(out["obs"][0], before[0])
    env.close()


def test_fan_out_state_dict_and_kwargs(noise_env_cls):
    env = RayParallelEnv(2, noise_env_cls, [{"scale": 1.0}, {"scale": 2.0}])
    assert env.g == pytest.approx([9.81, 19.62])
    assert env.get_count(offset=5) == [5, 5]
    assert env.bump(3.0) == [3.0, 3.0]
    with pytest.raises(AttributeError, match="no_such_attribute"):
        _ = env.no_such_attribute
    env.load_state_dict({"stat": torch.tensor([2.0])})
    assert [float(sd["stat"]) for sd in env.state_dict().values()] == [2.0, 2.0]
    env.reset(list_of_kwargs=[{"scale": 0.0}, {"scale": 1.0}])
    assert env.scale == [0.0, 1.0]
    env.close()


def test_no_buffers_path_matches_serial(dynamic_env_cls):
    ray_env = RayParallelEnv(2, dynamic_env_cls)
    serial = SerialEnv(2, dynamic_env_cls)
    assert not ray_env._use_buffers
    torch.manual_seed(0)
    a = ray_env.rollout(3, break_when_any_done=False, return_contiguous=False)
    torch.manual_seed(0)
    b = serial.rollout(3, break_when_any_done=False, return_contiguous=False)
    for i in range(2):
        for t in range(3):
            x, y = a[i, t]["next", "observation"], b[i, t]["next", "observation"]
            assert x.shape == y.shape
            torch.testing.assert_close(x, y)
    ray_env.close()
    serial.close()


def test_async_mode_returns_ready_shards_with_env_ids(noise_env_cls):
    env = RayParallelEnv(3, noise_env_cls, num_cpus=0.5)
    ref = SerialEnv(3, noise_env_cls)
    env.set_seed(0)
    ref.set_seed(0)
    td = env.reset()
    torch.testing.assert_close(td, ref.reset())
    td.set("action", torch.full((3, 1), 0.5))
    expected = ref.step(td.clone())

    env.async_step_send(td[[2, 0]], env_index=[2, 0])
    assert env.async_pending == [0, 2]
    with pytest.raises(RuntimeError, match="already have"):
        env.async_step_send(td[[0]], env_index=[0])
    with pytest.raises(RuntimeError, match="in flight"):
        env.reset()  # synchronous commands wait for the async ones to be collected
    got = []
    while env.async_pending:
        out = env.async_step_recv(min_get=1, timeout=60)
        assert out.batch_size[0] == out["env_index"].shape[0] >= 1
        got.append(out)
    rows = {int(i): (out, n) for out in got for n, i in enumerate(out["env_index"])}
    assert sorted(rows) == [0, 2]
    for i, (out, n) in rows.items():
        torch.testing.assert_close(out["next", "obs"][n], expected["next", "obs"][i])
        torch.testing.assert_close(out["next", "reward"][n], expected["next", "reward"][i])
        torch.testing.assert_close(out["action"][n], td["action"][i])

    env.async_reset_send(env_index=[1])
    out = env.async_reset_recv(timeout=60)
    assert out["env_index"].tolist() == [1]
    assert env.count[1] == 0
    with pytest.raises(RuntimeError, match="no async step in flight"):
        env.async_step_recv()
    with pytest.raises(IndexError, match="workers \\[5\\] do not exist"):
        env.async_step_send(td[[0]], env_index=[5])
    with pytest.raises(ValueError, match="leading batch dim of 2"):
        env.async_step_send(td, env_index=[0, 1])
    env.close()
    ref.close()


def test_async_batched_sub_envs_env_index_expanded():
    env = RayParallelEnv(2, CartPoleEnv, {"batch_size": [3]})
    td = env.reset().set("action", torch.ones(2, 3, dtype=torch.long))
    env.async_step_send(td)
    out = env.async_step_recv(min_get=2, timeout=60)
    assert out.batch_size == torch.Size([2, 3])
    assert out["env_index"].tolist() == [[0, 0, 0], [1, 1, 1]]
    assert out["next", "observation"].shape == torch.Size([2, 3, 4])
    env.close()


def test_raising_env_is_a_worker_error_with_remote_traceback(noise_env_cls):
    env = RayParallelEnv(2, noise_env_cls, [{}, {"fail_at": 2}])
    td = env.reset().set("action", torch.zeros(2, 1))
    td = env.step(td)["next"].set("action", torch.zeros(2, 1))
    with pytest.raises(WorkerError) as info:
        env.step(td)
    err = info.value
    assert err.worker_index == 1
    assert err.exc_type == "ValueError"
    assert "worker 1 (Ray actor, pid" in str(err)
    assert "deliberate failure at step 2" in str(err)
    assert "_step" in err.worker_traceback  # the remote frames
    env.close()


def test_env_that_cannot_be_built_fails_at_start(noise_env_cls):
    parent = os.getpid()

    def only_here(**kwargs):  # builds in this process (the specs), not in the actors
        if os.getpid() != parent:
            raise OSError("no simulator here")
        return noise_env_cls(**kwargs)

    env = RayParallelEnv(2, only_here)
    with pytest.raises(WorkerError, match="worker 0 .*OSError during start: no simulator here"):
        env.reset()
    env.close()
    assert env.actors == []


def test_dead_actor_is_a_worker_error_then_close_works(noise_env_cls):
    env = RayParallelEnv(2, noise_env_cls, [{"die_at": 1}, {}])
    td = env.reset().set("action", torch.zeros(2, 1))
    with pytest.raises(WorkerError, match="worker 0 \\(Ray actor\\) died during step") as info:
        env.step(td)
    assert info.value.worker_index == 0
    with pytest.raises(RuntimeError, match="can no longer be used"):
        env.step(td)
    pid = env.worker_pids[1]
    env.close()
    assert _wait_gone([pid]) == []
    # a closed env starts new actors when used again
    assert env.reset().batch_size == torch.Size([2])
    env.close()


def test_close_kills_the_actors(ray_local, noise_env_cls):
    env = RayParallelEnv(2, noise_env_cls)
    env.reset()
    pids, actors = env.worker_pids, env.actors
    assert len(set(pids)) == 2 and all(_alive(p) for p in pids)
    assert set(pids) <= set(_actor_processes())  # what the leak checks look for
    env.close()
    assert env.actors == [] and env.worker_pids == []
    assert _wait_gone(pids) == []  # ray.kill is asynchronous: the processes end soon after
    for actor in actors:
        with pytest.raises(ray_local.exceptions.RayActorError):
            ray_local.get(actor.ready.remote(), timeout=60)


def test_unschedulable_actor_times_out_as_worker_error(noise_env_cls):
    """An actor asking for more CPUs than the cluster has never starts: reported, not hung."""
    env = RayParallelEnv(1, noise_env_cls, num_cpus=64, start_timeout=3)
    with pytest.raises(WorkerError, match="worker 0 .*did not answer start within 3 s"):
        env.reset()
    env.close()


def test_bad_arguments(noise_env_cls):
    with pytest.raises(ValueError, match="num_cpus must be a number >= 0; got -1"):
        RayParallelEnv(2, noise_env_cls, num_cpus=-1)
    with pytest.raises(ValueError, match="timeout must be a positive"):
        RayParallelEnv(2, noise_env_cls, timeout=0)
    with pytest.raises(TypeError, match="is an env instance"):
        RayParallelEnv(2, PendulumEnv())


_UNREACHABLE = """
import socket, sys
from torchenv.batched import RayParallelEnv, WorkerError
from torchenv.envs.builtin import PendulumEnv
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]; sock.close()
for address in (f"127.0.0.1:{port}",):
    env = RayParallelEnv(2, PendulumEnv, address=address)
    try:
        env.reset()
    except WorkerError as err:
        print("WorkerError", err.worker_index, str(err).splitlines()[0])
    else:
        sys.exit("no error for " + address)
"""


@pytest.mark.slow
def test_unreachable_cluster_is_a_worker_error(tmp_path):
    """In a fresh process (this one is connected): nothing answers at host:port. (``"auto"``
    is not tried: it finds any Ray running on the machine, this session's included.)"""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "HOME": str(tmp_path)}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run(
        [sys.executable, "-c", _UNREACHABLE],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("WorkerError")]
    assert len(lines) == 1, proc.stdout
    assert "cannot connect to the Ray cluster at '127.0.0.1:" in lines[0]
    assert "nothing answers at 127.0.0.1:" in lines[0]
    assert not (tmp_path / ".ray").exists()


class SlowEnv(EnvBase):
    """Each step sleeps ``pause`` seconds (a simulator that takes its time, or hangs)."""

    def __init__(self, pause: float = 0.0):
        super().__init__()
        self.pause = pause
        self.observation_spec = Composite(observation=Unbounded((1,)))
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        self.reward_spec = Unbounded((1,))

    def _reset(self, tensordict=None, **kwargs):
        return TensorDict(observation=torch.zeros(1), done=torch.zeros(1, dtype=torch.bool))

    def _step(self, tensordict):
        time.sleep(self.pause)
        return TensorDict(
            observation=torch.ones(1), reward=torch.zeros(1), done=torch.zeros(1, dtype=torch.bool)
        )

    def _set_seed(self, seed):
        pass


def _actor_processes() -> list[int]:
    """Pids of the live processes running a ``RemoteWorker`` actor (Ray names them so)."""
    return [p for p in _processes_mentioning("ray::RemoteWorker") if _alive(p)]


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def test_reuses_the_connected_ray_and_ignores_address(ray_local):
    """Connected already: no second ``ray.init`` (``address`` is not even looked at)."""
    node = ray_local.get_runtime_context().get_node_id()
    env = RayParallelEnv(1, PendulumEnv, address="127.0.0.1:1")
    try:
        assert env.reset().batch_size == torch.Size([1])
        assert ray_local.get_runtime_context().get_node_id() == node
    finally:
        env.close()


def test_close_from_another_thread_during_a_rollout_says_env_closed():
    env = RayParallelEnv(2, SlowEnv, {"pause": 0.01})
    stepped = threading.Event()
    outcome = []

    def roll():
        try:
            env.rollout(5000, callback=lambda *_: stepped.set(), break_when_any_done=False)
            outcome.append("finished")
        except Exception as err:
            outcome.append(err)

    thread = threading.Thread(target=roll)
    thread.start()
    assert stepped.wait(60)
    pids = env.worker_pids
    env.close()
    thread.join(60)
    assert not thread.is_alive()
    (err,) = outcome
    assert isinstance(err, EnvClosedError), repr(err)
    assert "closed" in str(err) and "reset()" in str(err)
    assert _wait_gone(pids) == []
    td = env.reset()  # new actors; stepping works again
    assert env.step(td.set("action", torch.zeros(2, 1)))["next", "observation"].shape == (2, 1)
    env.close()


def test_step_after_close_is_refused_reset_restarts():
    env = RayParallelEnv(2, SlowEnv)
    td = env.reset().set("action", torch.zeros(2, 1))
    env.close()
    with pytest.raises(EnvClosedError, match="call reset"):
        env.step(td)
    with pytest.raises(EnvClosedError, match="call reset"):
        env.step_and_maybe_reset(td)
    with pytest.raises(EnvClosedError, match="call reset"):
        env.async_step_send(td)
    assert env.reset().batch_size == (2,)
    env.close()


def test_timeout_bounds_a_hung_actor_and_close_kills_it():
    env = RayParallelEnv(2, SlowEnv, [{}, {"pause": 600.0}], num_cpus=0.5, timeout=60)
    assert env.timeout == 60
    td = env.reset().set("action", torch.zeros(2, 1))
    env.timeout = 1.0  # once started (starting an actor takes seconds on a busy machine)
    pids = env.worker_pids
    with pytest.raises(
        WorkerError, match=r"worker 1 \(Ray actor, pid \d+\) did not answer step within 1 s"
    ) as info:
        env.step(td)
    assert info.value.worker_index == 1 and info.value.pid == pids[1]
    with pytest.raises(RuntimeError, match="can no longer be used"):
        env.step(td)
    env.close()  # the hung actor is killed without waiting for it to close its env
    assert _wait_gone(pids) == []


@pytest.mark.parametrize("bad", [0, -1.0, "10", True])
def test_timeout_argument_is_checked(bad):
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        RayParallelEnv(2, SlowEnv, timeout=bad)


def test_garbage_collection_without_close_kills_the_actors(noise_env_cls):
    import gc

    env = RayParallelEnv(2, noise_env_cls)
    env.reset()
    pids = env.worker_pids
    del env
    gc.collect()
    assert _wait_gone(pids) == []


@pytest.mark.slow
class TestRayParallelEnvConformance(BatchedEnvConformanceTests):
    """The batched-env contract (specs, rollouts, partial resets by mask, seeding, distinct
    sub-envs...) on one Ray actor per sub-env."""

    num_envs = 3

    def make_batched_env(self, num_envs):
        return RayParallelEnv(num_envs, PendulumEnv, num_cpus=0.25)


_OWN_RAY = """
import os, random, signal, sys, threading, time
import ray
from torchenv.batched import RayParallelEnv
from torchenv.envs.builtin import PendulumEnv

def listening(port):
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    return True
    return False

temp_dir = sys.argv[1]
env = RayParallelEnv(2, PendulumEnv, ray_init_kwargs={"num_cpus": 2, "_temp_dir": temp_dir})
env.reset()  # starts Ray: not connected yet
assert ray.is_initialized()
print("dashboard_listening", listening(8265))
env.close()
# Ctrl-C at random moments of start / step / close: the actors always end up killed
rng, interrupted = random.Random(0), 0
for i in range(8):
    timer = threading.Timer(rng.uniform(0, 1.5), os.kill, (os.getpid(), signal.SIGINT))
    env = RayParallelEnv(2, PendulumEnv, num_cpus=0.5)
    try:
        timer.start()
        env.rollout(50)
        env.close()
        timer.join()
    except KeyboardInterrupt:
        interrupted += 1
    while True:
        try:
            timer.cancel(); timer.join(); break
        except KeyboardInterrupt:
            interrupted += 1
    try:
        env.close()
    except RuntimeError:
        pass
print("interrupted", interrupted)

def actors():
    out = 0
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                out += f.read().startswith(b"ray::RemoteWorker")
        except OSError:
            pass
    return out

deadline = time.time() + 20
while actors() and time.time() < deadline:
    time.sleep(0.1)
print("actors_left", actors())
"""


@pytest.mark.slow
def test_own_ray_is_local_without_dashboard_and_gone_at_exit(tmp_path):
    """Not connected: the env starts Ray itself, without dashboard web server
    (nothing listens on 8265); Ctrl-C during start / steps / close is survived; at interpreter exit no
    Ray process is left. (Ray 2.60 turns ``_node_ip_address="127.0.0.1"`` into the machine's
    address and its servers listen on all interfaces: there is no loopback-only Ray to check.
    Its token goes to the test's own home directory.)"""
    import shutil
    import tempfile

    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # Ray's socket paths must be short
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "HOME": str(home)}
    for key in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_MODE"):
        env.pop(key, None)
    script = tmp_path / "own_ray.py"
    script.write_text(textwrap.dedent(_OWN_RAY))
    try:
        proc = subprocess.run(
            [sys.executable, str(script), temp_dir],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        deadline = time.monotonic() + 20
        while _processes_mentioning(temp_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _processes_mentioning(temp_dir)
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert out["dashboard_listening"] == "False"
    assert int(out["interrupted"]) >= 1
    assert out["actors_left"] == "0"  # after close(), before ray.shutdown()
    assert left == []


def test_no_actor_left_after_these_tests():
    """Runs last in this module: every env above was closed or collected."""
    deadline = time.monotonic() + 15
    while _actor_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _actor_processes() == []
