"""Fixtures of the jax plugin's tests: envs are compiled once per module (JIT compiling a
batched step takes seconds to minutes on CPU), and the compiled functions are shared by every
env made with the same arguments (``torchenv_jax._base._CACHE``)."""

from __future__ import annotations
