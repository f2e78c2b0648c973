"""Fixtures and settings of the jax plugin's tests.

JIT compiling a batched Brax or Jumanji step takes seconds to minutes on a CPU. The tests keep
batches small, share compiled functions (envs made with the same arguments reuse them:
``torchenv_jax._base._CACHE``), and, unless ``XLA_FLAGS`` is already set, ask XLA for a quicker,
less optimised compilation (the tests check behaviour, not speed; the benchmark compiles with
XLA's defaults).
"""

from __future__ import annotations

import os
import sys

if "jax" not in sys.modules and "XLA_FLAGS" not in os.environ:
    os.environ["XLA_FLAGS"] = (
        "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
    )
