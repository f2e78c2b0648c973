#!/usr/bin/env bash
# One command from a fresh clone: set up .venv, then run the whole test suite.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh test
exec .venv/bin/python -m pytest "$@"
