"""``SerialEnv``: the sub-environments run one after the other in this process."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from torchenv.batched import _worker as W
from torchenv.batched._base import BatchedEnvBase, check_generation, closed_error
from torchenv.batched._view import make_view
from torchenv.batched._worker import EnvRunner, _close_env

__all__ = ["SerialEnv"]


def _closed_guard(method: Callable) -> Callable:
    """A call that fails, or returns, after another thread closed the env raises
    ``EnvClosedError`` (its result may come from closed sub-environments)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        generation = self.__dict__["_generation"]
        try:
            out = method(self, *args, **kwargs)
        except Exception as err:
            closed_error(self, generation, err)
            raise
        check_generation(self, generation)
        return out

    return wrapper


class SerialEnv(BatchedEnvBase):
    """Runs ``num_workers`` environments in this process, one after the other, as one batched env.

    Same API and same results, seed for seed, as :class:`ParallelEnv` (both drive each
    sub-environment through the same runner); useful for tests and for envs too cheap to be
    worth a process. See :class:`~torchenv.batched._base.BatchedEnvBase` for the arguments.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> env = SerialEnv(2, PendulumEnv)
        >>> next_seed = env.set_seed(0)
        >>> env.rollout(3).batch_size
        torch.Size([2, 3])
        >>> env.close()
    """

    def _start(self) -> None:
        d = self.__dict__
        groups = d["_groups"]
        if groups is not None:
            d["_buffer"] = self._alloc(shared=False)
        runners = []
        seen: set[int] = set()
        try:
            for i in range(self.num_workers):
                env = self.create_env_fn[i](**self.create_env_kwargs[i])
                if id(env) in seen:
                    raise RuntimeError(
                        f"create_env_fn returned the same env object for workers {sorted(seen)} "
                        f"and {i}: each sub-environment must be a distinct object."
                    )
                seen.add(id(env))
                if hasattr(env, "set_spec_lock_"):
                    env.set_spec_lock_(True)
                runners.append(EnvRunner(env, groups, i))
        except BaseException:
            for runner in runners:
                _close_env(runner.env)
            raise
        d["_runners"] = runners

    def _shutdown(self) -> None:
        d = self.__dict__
        runners = d.pop("_runners", [])
        d.pop("_buffer", None)
        errors = []
        for runner in runners:
            try:
                _close_env(runner.env)
            except Exception as err:  # close them all, report the first failure
                errors.append(err)
        if errors:
            raise errors[0]

    @property
    def envs(self) -> list:
        """The sub-environments (starts them if needed)."""
        self._ensure_started()
        link = self.__dict__.get("_view_link")
        if link is not None:  # a view: the parent's sub-environments it selects
            envs = link.root.envs
            return [envs[i] for i in link.workers]
        return [r.env for r in self.__dict__["_runners"]]

    def __getitem__(self, item: Any) -> SerialEnv:
        """A ``SerialEnv`` view over the sub-environments ``item`` selects (int, slice, list).

        The view shares this env's sub-environments; see :func:`~torchenv.batched._view.make_view`.

        Examples:
            >>> from torchenv.envs import PendulumEnv
            >>> env = SerialEnv(3, PendulumEnv)
            >>> env[1:].batch_size, env[0].batch_size, env[[0, 2]].batch_size
            (torch.Size([2]), torch.Size([1]), torch.Size([2]))
            >>> env.close()
        """
        return make_view(self, item)

    def _dispatch(
        self,
        op: int,
        workers: Sequence[int],
        args: Sequence[Any] | None = None,
        reply: bool = False,
    ) -> list | None:
        runners = self.__dict__.get("_runners")
        if runners is None:
            raise W.EnvClosedError(
                "the SerialEnv was closed (from another thread?); reset() starts new "
                "sub-environments"
            )
        out, flagged = [], []
        for n, i in enumerate(workers):
            runner = runners[i]
            arg = args[n] if args is not None else None
            if op == W.OP_STEP:
                runner.step()
            elif op == W.OP_STEP_AND_MAYBE_RESET:
                if runner.step_and_maybe_reset():
                    flagged.append(i)
            elif op == W.OP_RESET:
                runner.reset(*arg)
            elif op == W.OP_STEP_NO_BUFFERS:
                out.append(runner.step_td(arg))
            elif op == W.OP_RESET_NO_BUFFERS:
                out.append(runner.reset_td(*arg))
            elif op == W.OP_SMR_NO_BUFFERS:
                out.append(runner.step_and_maybe_reset_td(arg))
            elif op == W.OP_SEED:
                out.append(runner.set_seed(*arg))
            elif op == W.OP_GETATTR:
                out.append(runner.getattr(arg))
            elif op == W.OP_CALL:
                out.append(runner.call(*arg))
            else:  # pragma: no cover - internal misuse
                raise RuntimeError(f"unknown opcode {op}")
        return out if reply else flagged

    @_closed_guard
    def _step(self, tensordict):
        return super()._step(tensordict)

    @_closed_guard
    def _reset(self, tensordict, **kwargs):
        return super()._reset(tensordict, **kwargs)

    @_closed_guard
    def step_and_maybe_reset(self, tensordict):
        return super().step_and_maybe_reset(tensordict)

    @_closed_guard
    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the sub-environments as :meth:`BatchedEnvBase.set_seed`; a close from another
        thread meanwhile raises :class:`~torchenv.batched.EnvClosedError`."""
        return super().set_seed(seed, static_seed)
