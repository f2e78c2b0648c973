#!/usr/bin/env bash
# One command from a fresh clone: set up .venv, then list the installed backends, make an env by
# name, roll it out and print what came back.
# Usage: bash scripts/demo.sh [NAME [STEPS [KEY=VALUE ...]]]   (KEY=VALUE: make() keywords)
#   bash scripts/demo.sh vmas:balance 20 num_envs=4
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh test
.venv/bin/python -m torchenv.cli backends
echo
name="${1:-builtin:Pendulum}"
steps="${2:-10}"
shift $(($# < 2 ? $# : 2))
if (($#)); then
    exec .venv/bin/python -m torchenv.cli rollout "$name" --steps "$steps" --seed 0 --kwargs "$@"
fi
exec .venv/bin/python -m torchenv.cli rollout "$name" --steps "$steps" --seed 0
