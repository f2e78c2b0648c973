#!/usr/bin/env bash
# One command from a fresh clone: set up .venv, then list the installed backends, make an env by
# name, roll it out and print what came back. Usage: bash scripts/demo.sh [NAME [STEPS]]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh test
.venv/bin/python -m torchenv.cli backends
echo
exec .venv/bin/python -m torchenv.cli rollout "${1:-builtin:Pendulum}" --steps "${2:-10}" --seed 0
