#!/usr/bin/env bash
# Creates .venv (if missing) and installs the core, every plugin in plugins/ and the test tools,
# editable, with torch pinned to the local CPU build through constraints.txt.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip install --quiet -c constraints.txt)
"${pip[@]}" --upgrade pip
editable=(-e ./core)
for plugin in plugins/*/; do
  [ -f "$plugin/pyproject.toml" ] && editable+=(-e "./$plugin")
done
"${pip[@]}" "${editable[@]}" -r requirements/"${1:-test}".txt
