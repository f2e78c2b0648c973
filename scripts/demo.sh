#!/usr/bin/env bash
# One command from a fresh clone: set up .venv, then make an env by name, roll it out, print it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh test
exec .venv/bin/python -m torchenv.cli rollout "${1:-builtin:Pendulum}" --steps "${2:-10}"
