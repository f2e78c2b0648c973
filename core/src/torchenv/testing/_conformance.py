"""The env conformance tests: one mixin that checks any env against the torchenv contract.

In the spirit of dm_env's ``test_utils.EnvironmentTestMixin``: a test class subclasses
:class:`EnvConformanceTests`, says how to build the env in one factory method, and inherits
every contract test. pytest collects them like any test method.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

if TYPE_CHECKING:  # pragma: no cover
    from torchenv.envs import EnvBase

__all__ = ["EnvConformanceTests"]

NestedKey = Any


class EnvConformanceTests:
    """Contract tests every torchenv environment should pass; subclass it to run them.

    How a plugin author uses it: write one test class that subclasses this mixin and
    implements :meth:`make_env`. pytest collects the inherited ``test_*`` methods (name the
    class ``Test...``); nothing else is needed::

        # tests/test_conformance.py of plugin torchenv-toy
        from torchenv.testing import EnvConformanceTests
        from torchenv_toy import ToyEnv

        class TestToyEnvConformance(EnvConformanceTests):
            def make_env(self):
                return ToyEnv(batch_size=[4])

    Tune the tests with class attributes:

    - ``seed`` (``0``): seed given to ``env.set_seed`` (and to torch's global generator, which
      drives random actions) in the tests that seed.
    - ``rollout_steps`` (``8``): length of the rollouts the tests take.
    - ``deterministic`` (``True``): two envs seeded alike produce the same rollout. Set
      ``False`` for simulators that cannot be seeded.
    - ``stochastic`` (``True``): envs seeded differently produce different rollouts. Set
      ``False`` for envs with deterministic resets and dynamics (e.g. board games).
    - ``supports_partial_reset`` (``True``): a reset with a ``"_reset"`` mask resets only the
      masked sub-envs. Tested when the env has a non-empty batch size, or is batch-unlocked.
    - ``batch_sizes`` (``((3,),)``): input batch sizes tried on batch-unlocked envs.
    - ``direct_path`` (``None``): ``True`` asserts that the env takes the direct array I/O path
      (``torchenv.envs.ArrayEnv`` subclasses do), ``False`` that it does not, ``None`` checks
      nothing; where it is taken, its rollouts and ``step_and_maybe_reset`` loops must equal
      the TensorDict path's (``test_direct_path_matches_tensordict_path``).

    The inherited tests: ``test_check_env_specs``, ``test_reset_matches_specs``,
    ``test_step_writes_next``, ``test_step_without_action_raises``, ``test_rand_action_in_spec``,
    ``test_rollout_shapes`` (``[*batch, T]``, last dim named ``"time"``),
    ``test_rollout_chains_steps``, ``test_seeding_is_reproducible``,
    ``test_different_seeds_differ``, ``test_set_seed_returns_int``, ``test_partial_reset``,
    ``test_done_flanking`` (``done == terminated | truncated``), ``test_step_and_maybe_reset``
    (equals ``step`` + ``step_mdp`` + a reset of the done sub-envs),
    ``test_fake_tensordict_matches_specs``, ``test_direct_path_matches_tensordict_path`` and
    ``test_close_is_idempotent``. Envs with dynamic
    specs (a ``-1`` dim) are rolled out with ``return_contiguous=False``.

    Every test builds its own env(s) through :meth:`make_env` and closes them, so a test
    method can also be called directly (``TestToyEnvConformance().test_rollout_shapes()``);
    a failed check raises :class:`AssertionError` whose message names the key at fault.
    """

    seed: int = 0
    rollout_steps: int = 8
    deterministic: bool = True
    stochastic: bool = True
    supports_partial_reset: bool = True
    batch_sizes: Sequence[Sequence[int]] = ((3,),)
    direct_path: bool | None = None

    # ------------------------------------------------------------------ to override
    def make_env(self) -> EnvBase:
        """Returns a fresh env to test. Subclasses must implement it."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement make_env(self) returning the env to test"
        )

    # ------------------------------------------------------------------ helpers
    @contextlib.contextmanager
    def _env(self) -> Iterator[EnvBase]:
        env = self.make_env()
        try:
            yield env
        finally:
            with contextlib.suppress(Exception):
                env.close(raise_if_closed=False)

    @contextlib.contextmanager
    def _global_seed(self, seed: int) -> Iterator[None]:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield

    def _input_batches(self, env: EnvBase) -> list[torch.Size]:
        """Batch sizes to reset with: the env's own, plus ``batch_sizes`` if batch-unlocked."""
        sizes = [torch.Size(env.batch_size)]
        if not env.batch_locked:
            sizes += [torch.Size(size) for size in self.batch_sizes]
        return sizes

    def _reset(self, env: EnvBase, batch: torch.Size) -> TensorDictBase:
        if batch == env.batch_size:
            return env.reset()
        return env.reset(TensorDict(batch_size=batch, device=env.device))

    def _rollout(self, env: EnvBase, steps: int, **kwargs: Any) -> TensorDictBase:
        """``env.rollout`` without early stop; lazily stacked if the env has dynamic specs."""
        if getattr(env, "_has_dynamic_specs", False):
            kwargs.setdefault("return_contiguous", False)
        return env.rollout(steps, break_when_any_done=False, **kwargs)

    def _skip(self, reason: str) -> None:
        import pytest

        pytest.skip(reason)

    # ------------------------------------------------------------------ tests
    def test_check_env_specs(self) -> None:
        """``check_env_specs`` passes: a short rollout matches the env's specs."""
        from torchenv.envs import check_env_specs

        with self._env() as env:
            env.set_seed(self.seed)
            with self._global_seed(self.seed):
                try:
                    check_env_specs(env)
                except AssertionError:
                    raise
                except Exception as err:
                    raise AssertionError(f"check_env_specs failed: {err}") from err

    def test_reset_matches_specs(self) -> None:
        """``reset`` returns every observation and done entry, in spec, with done all False."""
        with self._env() as env:
            env.set_seed(self.seed)
            for batch in self._input_batches(env):
                td = self._reset(env, batch)
                assert td.batch_size == batch, (
                    f"reset: expected a tensordict of batch size {tuple(batch)}, "
                    f"got {tuple(td.batch_size)}"
                )
                _assert_in_spec(env.full_observation_spec, td, "reset output")
                _assert_in_spec(env.full_done_spec, td, "reset output")
                if not getattr(env, "_allow_done_after_reset", False):
                    for key in env.done_keys:
                        assert not td.get(key).any(), f"reset output: {key!r} is set after reset"
                for key in env.reset_keys:
                    assert key not in td.keys(True), f"reset output still holds {key!r}"

    def test_step_writes_next(self) -> None:
        """``step`` keeps the input, and writes observations, reward and done under "next"."""
        with self._env() as env:
            env.set_seed(self.seed)
            for batch in self._input_batches(env):
                td = self._reset(env, batch)
                with self._global_seed(self.seed):
                    env.rand_action(td)
                action = td.select(*env.action_keys).clone()
                out = env.step(td)
                assert "next" in out, "step: the output has no 'next' entry"
                nxt = out.get("next")
                assert nxt.batch_size == batch, (
                    f"step: 'next' has batch size {tuple(nxt.batch_size)}, expected {tuple(batch)}"
                )
                for key in env.action_keys:
                    assert key in out.keys(True), f"step: action {key!r} vanished from the input"
                    _assert_equal(out.get(key), action.get(key), f"step: action {key!r}")
                _assert_in_spec(env.full_observation_spec, nxt, "step output ('next')")
                _assert_in_spec(env.full_reward_spec, nxt, "step output ('next')")
                _assert_in_spec(env.full_done_spec, nxt, "step output ('next')")

    def test_step_without_action_raises(self) -> None:
        """``step`` on a tensordict without the action raises an error naming the action key."""
        with self._env() as env:
            td = env.reset().exclude(*env.action_keys)
            key = env.action_keys[0]
            name = key if isinstance(key, str) else key[-1]
            try:
                env.step(td)
            except Exception as err:  # any exception type, as long as it says what is missing
                assert name in str(err), (
                    f"step without {key!r}: the error does not name the action key: {err!r}"
                )
            else:
                raise AssertionError(f"step without the action {key!r} did not raise")

    def test_rand_action_in_spec(self) -> None:
        """``rand_action`` writes an action that its spec contains."""
        with self._env() as env:
            env.set_seed(self.seed)
            for batch in self._input_batches(env):
                td = self._reset(env, batch)
                with self._global_seed(self.seed):
                    out = env.rand_action(td)
                _assert_in_spec(env.full_action_spec, out, "rand_action output")

    def test_rollout_shapes(self) -> None:
        """``rollout`` stacks steps along a trailing "time" dim: batch size ``[*batch, T]``."""
        steps = self.rollout_steps
        with self._env() as env:
            env.set_seed(self.seed)
            for batch in self._input_batches(env):
                kwargs = {}
                if batch != env.batch_size:
                    kwargs["tensordict"] = self._reset(env, batch)
                with self._global_seed(self.seed):
                    data = self._rollout(env, steps, **kwargs)
                expected = torch.Size([*batch, steps])
                assert data.batch_size == expected, (
                    f"rollout({steps}): batch size {tuple(data.batch_size)}, expected {tuple(expected)}"
                )
                assert data.names[-1] == "time", (
                    f"rollout: the last dim should be named 'time', names are {data.names}"
                )
                _assert_in_spec(env.full_observation_spec, data, "rollout")
                _assert_in_spec(env.full_action_spec, data, "rollout")
                _assert_in_spec(env.full_observation_spec, data.get("next"), "rollout 'next'")
                _assert_in_spec(env.full_reward_spec, data.get("next"), "rollout 'next'")
                _assert_in_spec(env.full_done_spec, data.get("next"), "rollout 'next'")

    def test_rollout_chains_steps(self) -> None:
        """In a rollout, step ``t + 1`` starts from the observation of ``("next", ...)`` at ``t``."""
        with self._env() as env:
            if "done" not in env.done_keys:
                self._skip("no root 'done' key: which steps follow a reset is ambiguous")
            env.set_seed(self.seed)
            with self._global_seed(self.seed):
                data = self._rollout(env, self.rollout_steps)
            steps = data.unbind(data.ndim - 1)
            for t in range(len(steps) - 1):
                done = steps[t].get(("next", "done"))
                follows = ~done.reshape(*steps[t].batch_size, -1).any(-1)
                if follows.ndim == 0 and not follows:
                    continue  # reset between t and t + 1
                for key in env.observation_keys:
                    for now, before in zip(
                        _values(steps[t + 1], key), _values(steps[t], _next(key)), strict=True
                    ):
                        if follows.ndim:
                            now, before = now[follows], before[follows]
                        _assert_equal(
                            now,
                            before,
                            f"rollout: {key!r} at step {t + 1} vs ('next', {key!r}) at step {t}",
                        )

    def test_seeding_is_reproducible(self) -> None:
        """Two envs seeded alike (with the same random actions) give the same rollout."""
        if not self.deterministic:
            self._skip("env declared non-deterministic (deterministic = False)")
        rollouts = []
        for _ in range(2):
            with self._env() as env:
                env.set_seed(self.seed)
                with self._global_seed(self.seed):
                    rollouts.append(self._rollout(env, self.rollout_steps))
        assert_tensordict_equal(rollouts[0], rollouts[1], "two rollouts with the same seed")

    def test_different_seeds_differ(self) -> None:
        """Envs seeded differently (same random actions) give different rollouts."""
        if not self.stochastic:
            self._skip("env declared deterministic given its actions (stochastic = False)")
        rollouts = []
        for seed in (self.seed, self.seed + 1):
            with self._env() as env:
                env.set_seed(seed)
                _actions_from_global_generator(env)  # the same random actions for both seeds
                with self._global_seed(self.seed):
                    rollouts.append(self._rollout(env, self.rollout_steps))
        try:
            assert_tensordict_equal(rollouts[0], rollouts[1], "")
        except AssertionError:
            return
        raise AssertionError(
            f"env.set_seed({self.seed}) and env.set_seed({self.seed + 1}) gave identical rollouts; "
            "set stochastic = False if the env is deterministic given its actions"
        )

    def test_set_seed_returns_int(self) -> None:
        """``set_seed`` returns the next seed to use, an int."""
        with self._env() as env:
            nxt = env.set_seed(self.seed)
            assert isinstance(nxt, int), f"set_seed returned {nxt!r}, expected an int"

    def test_partial_reset(self) -> None:
        """A reset with a root ``"_reset"`` mask resets only the masked sub-envs.

        The kept sub-envs keep their data, and (for deterministic envs) go on exactly as those
        of a twin env that was not reset.
        """
        if not self.supports_partial_reset:
            self._skip("env declared without partial resets (supports_partial_reset = False)")
        from torchenv.envs import step_mdp

        with self._env() as env, self._env() as twin:
            if "_reset" not in env.reset_keys:
                self._skip(f"no root '_reset' key (reset keys: {env.reset_keys})")
            batch = torch.Size(env.batch_size)
            if batch.numel() < 2:
                if env.batch_locked:
                    self._skip("partial resets need a batch of more than one sub-env")
                batch = torch.Size(self.batch_sizes[0]) if self.batch_sizes else torch.Size([3])
            env.set_seed(self.seed)
            twin.set_seed(self.seed)
            td, td_twin = self._reset(env, batch), self._reset(twin, batch)
            with self._global_seed(self.seed):
                for _ in range(2):
                    env.rand_action(td)
                    td_twin.update(td.select(*env.action_keys))
                    td = step_mdp(env.step(td), keep_other=True)
                    td_twin = step_mdp(twin.step(td_twin), keep_other=True)
                mask = torch.zeros((*batch, 1), dtype=torch.bool, device=env.device)
                mask.view(-1)[0] = True
                reset = mask.squeeze(-1)
                before = td.clone()
                out = env.reset(td.set("_reset", mask))
                assert "_reset" not in out, "reset kept the '_reset' entry in its output"
                _assert_in_spec(env.full_observation_spec, out, "partial reset output")
                for key in env.observation_keys:
                    for now, then in zip(_values(out, key), _values(before, key), strict=True):
                        _assert_equal(
                            now[~reset],
                            then[~reset],
                            f"partial reset: {key!r} of a sub-env that was not reset",
                        )
                for key in env.done_keys:
                    assert not out.get(key)[reset].any(), (
                        f"partial reset: {key!r} is set on a sub-env that was just reset"
                    )
                if not self.deterministic:
                    return
                env.rand_action(out)
                td_twin.update(out.select(*env.action_keys))
                nxt = env.step(out).get("next")
                nxt_twin = twin.step(td_twin).get("next")
            for key in env.observation_keys:
                for now, twin_now in zip(_values(nxt, key), _values(nxt_twin, key), strict=True):
                    _assert_equal(
                        now[~reset],
                        twin_now[~reset],
                        f"step after a partial reset: {key!r} of a sub-env that was not reset "
                        "differs from the same sub-env of a twin env that was never reset",
                    )

    def test_done_flanking(self) -> None:
        """``done`` equals ``terminated | truncated`` (whichever of the two exist), everywhere."""
        with self._env() as env:
            env.set_seed(self.seed)
            groups = _done_groups(env.done_keys)
            if not groups:
                self._skip(f"no done key with a terminated/truncated sibling in {env.done_keys}")
            with self._global_seed(self.seed):
                data = self._rollout(env, max(self.rollout_steps, 32))
            for where, td in (("reset/rollout input", data), ("rollout 'next'", data.get("next"))):
                for done, parts in groups:
                    expected = td.get(parts[0])
                    for part in parts[1:]:
                        expected = expected | td.get(part)
                    _assert_equal(
                        td.get(done),
                        expected,
                        f"{where}: {done!r} vs {' | '.join(map(repr, parts))}",
                    )

    def test_step_and_maybe_reset(self) -> None:
        """``step_and_maybe_reset`` equals ``step``, ``step_mdp`` and a reset of the done sub-envs."""
        if not self.deterministic:
            self._skip("env declared non-deterministic (deterministic = False)")
        from torchenv.envs import step_mdp

        with self._env() as env_a, self._env() as env_b:
            if "done" not in env_a.done_keys or "_reset" not in env_a.reset_keys:
                self._skip("needs a root 'done' key and a root '_reset' key")
            env_a.set_seed(self.seed)
            env_b.set_seed(self.seed)
            compared = [*env_a.observation_keys, *env_a.done_keys]
            td_a = env_a.reset()
            td_b = env_b.reset()
            with self._global_seed(self.seed):
                for t in range(max(self.rollout_steps, 40)):
                    env_a.rand_action(td_a)
                    td_b.update(td_a.select(*env_a.action_keys))
                    out_a, td_a = env_a.step_and_maybe_reset(td_a)
                    out_b = env_b.step(td_b)
                    td_b = step_mdp(out_b, keep_other=True)
                    done = td_b.get("done")
                    if done.any():
                        td_b = env_b.reset(td_b.set("_reset", done.clone()))
                    for key in compared:
                        for a, b in zip(
                            _values(out_a, _next(key)), _values(out_b, _next(key)), strict=True
                        ):
                            _assert_equal(
                                a, b, f"step {t}: ('next', {key!r}) of step_and_maybe_reset vs step"
                            )
                        for a, b in zip(_values(td_a, key), _values(td_b, key), strict=True):
                            _assert_equal(a, b, f"step {t}: {key!r} after maybe-reset")

    def test_fake_tensordict_matches_specs(self) -> None:
        """``fake_tensordict`` holds every spec'd entry with the spec's shape and dtype."""
        with self._env() as env:
            fake = env.fake_tensordict()
            assert fake.batch_size == env.batch_size, (
                f"fake_tensordict: batch size {tuple(fake.batch_size)}, expected {tuple(env.batch_size)}"
            )
            _assert_in_spec(env.full_observation_spec, fake, "fake_tensordict", check_values=False)
            _assert_in_spec(env.full_action_spec, fake, "fake_tensordict", check_values=False)
            nxt = fake.get("next")
            _assert_in_spec(
                env.full_observation_spec, nxt, "fake_tensordict 'next'", check_values=False
            )
            _assert_in_spec(env.full_reward_spec, nxt, "fake_tensordict 'next'", check_values=False)
            _assert_in_spec(env.full_done_spec, nxt, "fake_tensordict 'next'", check_values=False)

    def test_direct_path_matches_tensordict_path(self) -> None:
        """Where the env takes the direct array I/O path (``torchenv.envs._direct``), rollouts
        and a ``step_and_maybe_reset`` loop give what the TensorDict path gives."""
        from torchenv.envs._direct import direct_plan

        with self._env() as env, self._env() as reference:
            taken = direct_plan(env) is not None
            if self.direct_path is not None:
                assert taken == self.direct_path, (
                    f"direct_path = {self.direct_path} declared, but direct_plan(env) is "
                    f"{'set' if taken else 'None'}"
                )
            if not taken:
                self._skip("the env does not take the direct array I/O path")
            if not self.deterministic:
                self._skip("env declared non-deterministic (deterministic = False)")
            reference._direct_io_supported = lambda: False
            assert direct_plan(reference) is None
            runs = []
            for e in (env, reference):
                e.set_seed(self.seed)
                with self._global_seed(self.seed):
                    rollout = self._rollout(e, 3 * self.rollout_steps)
                    td, steps = e.reset(), []
                    for _ in range(3 * self.rollout_steps):
                        step, td = e.step_and_maybe_reset(e.rand_action(td))
                        steps.append(step)
                    runs.append((rollout, torch.stack(steps), td))
        what = ("rollouts", "step_and_maybe_reset steps", "step_and_maybe_reset next inputs")
        for a, b, name in zip(*runs, what):
            assert_tensordict_equal(a, b, f"direct path vs TensorDict path {name}")

    def test_close_is_idempotent(self) -> None:
        """``close`` twice works (the second call does nothing); ``is_closed`` turns True."""
        env = self.make_env()
        assert not env.is_closed, "a fresh env says it is closed (is_closed is True)"
        env.close()
        env.close()
        assert env.is_closed, "env.is_closed is False after close()"

    def test_use_after_close_raises_env_closed_error(self) -> None:
        """``step`` and ``step_and_maybe_reset`` of a closed env raise
        :class:`~torchenv.envs.EnvClosedError` (never step on, never another error); so do
        ``reset`` and ``rollout``, except in envs that restart on reset (batched envs)."""
        from torchenv.envs import EnvClosedError

        env = self.make_env()
        td = env.rand_action(env.reset())
        env.close()
        calls = {
            "step": lambda: env.step(td.clone()),
            "step_and_maybe_reset": lambda: env.step_and_maybe_reset(td.clone()),
        }
        if not env._reset_reopens:  # batched envs restart on reset, as TorchRL's
            calls.update(reset=lambda: env.reset(), rollout=lambda: env.rollout(2))
        for name, call in calls.items():
            try:
                call()
            except EnvClosedError:
                continue
            except Exception as err:
                raise AssertionError(
                    f"{name} after close raised {type(err).__name__}: {err}, not EnvClosedError"
                ) from err
            raise AssertionError(f"{name} after close did not raise EnvClosedError")


# ---------------------------------------------------------------------- assertions
def _actions_from_global_generator(env: EnvBase) -> None:
    """Random actions of ``env`` (and of the envs it wraps) from torch's global generator again,
    instead of the generator ``set_seed`` seeded: what a test holding the actions fixed needs."""
    from torchenv.envs import EnvBase

    while isinstance(env, EnvBase):  # a wrapper's base_env may be the simulator's own object
        env._seed_action_generator(None)
        env = getattr(env, "base_env", None)


def _assert_in_spec(
    spec: Any, td: TensorDictBase, where: str, *, check_values: bool = True
) -> None:
    """Asserts every leaf of Composite ``spec`` is in ``td`` with the spec's dtype, shape, values.

    ``td`` may have more batch dims than the spec: leading ones (a batch-unlocked env run with
    a batch) or trailing ones (the time dim of a rollout). The leaf specs are expanded to match.
    """
    spec_batch = torch.Size(spec.shape)
    batch = td.batch_size
    assert batch[: len(spec_batch)] == spec_batch, (
        f"{where}: batch size {tuple(batch)} does not start with the specs' {tuple(spec_batch)}"
    )
    extra = batch[len(spec_batch) :]
    keys = td.keys(True, True)
    stacked = _stacked_composites(spec)
    for key, sub in stacked.items():
        assert key in td.keys(True), f"{where}: missing {key!r} (a lazily stacked Composite)"
        # the extra (time) dims of td sit right after the specs' batch dims
        dim = sub.dim + len(extra) if sub.dim >= len(spec_batch) else sub.dim
        for i, (member_spec, member_td) in enumerate(
            zip(sub.unbind(sub.dim), td.get(key).unbind(dim), strict=True)
        ):
            where_i = f"{where}, member {i} of the lazy stack {key!r}"
            _assert_in_spec(member_spec, member_td, where_i, check_values=check_values)
    for key in spec.keys(True, True):
        if any(key[: len(k)] == k for k in stacked):
            continue  # checked member by member above
        leaf = spec[key]
        assert key in keys, f"{where}: missing {key!r} (expected by its {type(leaf).__name__} spec)"
        if -1 in leaf.shape:
            _assert_dynamic_leaf(leaf, td, key, where)
            continue
        value = td.get(key)
        if not isinstance(value, torch.Tensor):
            continue
        shape = torch.Size([*extra, *leaf.shape])
        if extra:
            # bring the extra dims first, so that the value lines up with leaf.expand(*extra, ...)
            n, k = len(spec_batch), len(extra)
            order = [*range(n, n + k), *range(n), *range(n + k, value.ndim)]
            value = value.permute(order) if value.ndim >= n + k else value
            leaf = leaf.expand(shape)
        assert value.dtype == leaf.dtype, (
            f"{where}: {key!r} has dtype {value.dtype}, the spec says {leaf.dtype}"
        )
        assert value.shape == shape, (
            f"{where}: {key!r} has shape {tuple(value.shape)}, the spec says {tuple(shape)}"
        )
        if check_values:
            if getattr(leaf, "mask", None) is not None:
                # an action mask kept up to date by the env (TorchRL's PettingZoo wrapper does)
                # is the latest step's: values of earlier steps followed their own masks
                leaf = leaf.clone()
                leaf.update_mask(None)
            assert leaf.is_in(value), (
                f"{where}: {key!r} holds values outside its {type(leaf).__name__} spec"
                f" (shape {tuple(value.shape)}, dtype {value.dtype})"
            )


def _stacked_composites(spec: Any) -> dict[tuple[str, ...], Any]:
    """The lazily stacked Composites of ``spec`` (heterogeneous agents), by key, outermost only."""
    from torchenv.specs import Composite, StackedComposite

    found: dict[tuple[str, ...], Any] = {}

    def walk(node: Any, prefix: tuple[str, ...]) -> None:
        for name in node:
            sub = node[name]
            if isinstance(sub, StackedComposite):
                found[(*prefix, name)] = sub
            elif isinstance(sub, Composite):
                walk(sub, (*prefix, name))

    walk(spec, ())
    return found


def _assert_dynamic_leaf(leaf: Any, td: TensorDictBase, key: NestedKey, where: str) -> None:
    """Checks a leaf with ``-1`` dims: dtype, and the trailing dims that are not ``-1``."""
    for value in _values(td, key):
        if not isinstance(value, torch.Tensor):
            continue
        assert value.dtype == leaf.dtype, (
            f"{where}: {key!r} has dtype {value.dtype}, the spec says {leaf.dtype}"
        )
        tail = value.shape[value.ndim - len(leaf.shape) :] if value.ndim >= len(leaf.shape) else ()
        assert len(tail) == len(leaf.shape) and all(
            want in (-1, got) for want, got in zip(leaf.shape, tail)
        ), f"{where}: {key!r} has shape {tuple(value.shape)}, the spec says {tuple(leaf.shape)}"


def _values(td: TensorDictBase, key: NestedKey) -> list[Any]:
    """``[td.get(key)]``, or the values of its slices along the last dim if they cannot stack."""
    try:
        return [td.get(key)]
    except RuntimeError:
        if isinstance(td, LazyStackedTensorDict):
            return [value for sub in td.tensordicts for value in _values(sub, key)]
        tkey = (key,) if isinstance(key, str) else tuple(key)
        for i in range(1, len(tkey)):
            node = td.get(tkey[:i])
            if isinstance(node, LazyStackedTensorDict):  # heterogeneous agents
                return [value for sub in node.tensordicts for value in _values(sub, tkey[i:])]
        if td.ndim == 0:
            raise
        return [value for sub in td.unbind(td.ndim - 1) for value in _values(sub, key)]


def _assert_equal(actual: Any, expected: Any, what: str) -> None:
    try:
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
    except AssertionError as err:
        raise AssertionError(f"{what}: values differ\n{err}") from None


def assert_tensordict_equal(
    actual: TensorDictBase, expected: TensorDictBase, what: str = "tensordicts"
) -> None:
    """Asserts that two tensordicts hold the same data, bit for bit: the same keys, the same
    kind and batch size of tensordict at every level, and leaves of the same dtype and values
    (NaN equal to NaN). Heterogeneous (lazily stacked) groups are compared agent by agent.

    Args:
        actual: the tensordict under test.
        expected: the reference.
        what: how the failure message names them.

    Raises:
        AssertionError: naming the first key that differs.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> a = TensorDict({"agents": TensorDict({"x": torch.zeros(3, 2)}, [3])}, [])
    >>> assert_tensordict_equal(a, a.clone())
    >>> b = TensorDict({"agents": TensorDict({"x": torch.zeros(3, 2)}, [])}, [])
    >>> assert_tensordict_equal(a, b)
    Traceback (most recent call last):
    ...
    AssertionError: tensordicts: 'agents' has batch size torch.Size([3]) vs torch.Size([])
    """
    keys_a = set(actual.keys(True, True))
    keys_b = set(expected.keys(True, True))
    assert keys_a == keys_b, f"{what}: different keys: {sorted(map(str, keys_a ^ keys_b))}"
    assert actual.batch_size == expected.batch_size, (
        f"{what}: batch sizes {actual.batch_size} vs {expected.batch_size}"
    )
    for key in sorted(set(actual.keys(True)) - keys_a, key=str):  # the sub-tensordicts
        try:
            node_a, node_b = actual.get(key), expected.get(key)
        except RuntimeError:  # inside a heterogeneous lazy stack: compared by leaves below
            continue
        assert type(node_a) is type(node_b), (
            f"{what}: {key!r} is a {type(node_a).__name__} vs a {type(node_b).__name__}"
        )
        assert node_a.batch_size == node_b.batch_size, (
            f"{what}: {key!r} has batch size {node_a.batch_size} vs {node_b.batch_size}"
        )
    for key in sorted(keys_a, key=str):
        values_a, values_b = _values(actual, key), _values(expected, key)
        assert len(values_a) == len(values_b), f"{what}: {key!r} stacks differently"
        for value_a, value_b in zip(values_a, values_b):
            _assert_equal(value_a, value_b, f"{what}: {key!r}")


def _done_groups(done_keys: Sequence[NestedKey]) -> list[tuple[NestedKey, list[NestedKey]]]:
    """``[(done_key, [terminated_key, truncated_key present])]`` for each done with siblings."""
    keys = {(k,) if isinstance(k, str) else tuple(k) for k in done_keys}
    groups = []
    for key in sorted(keys):
        if key[-1] != "done":
            continue
        parts = [
            (*key[:-1], name) for name in ("terminated", "truncated") if (*key[:-1], name) in keys
        ]
        if parts:
            groups.append((_unwrap(key), [_unwrap(p) for p in parts]))
    return groups


def _unwrap(key: tuple[str, ...]) -> NestedKey:
    return key[0] if len(key) == 1 else key


def _next(key: NestedKey) -> tuple[str, ...]:
    return ("next", key) if isinstance(key, str) else ("next", *key)
