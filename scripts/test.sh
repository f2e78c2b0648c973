#!/usr/bin/env bash
# One command from a fresh clone: set up .venv, then run the whole test suite, in parallel
# (pytest-xdist: TORCHENV_TEST_WORKERS processes, default 2; 0 runs in this process).
# Tests that share one expensive resource (a local Ray) carry the same xdist_group and run on
# one worker (--dist loadgroup).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh test
exec .venv/bin/python -m pytest -n "${TORCHENV_TEST_WORKERS:-2}" --dist loadgroup "$@"
