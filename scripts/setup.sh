#!/usr/bin/env bash
# Creates .venv (if missing) and installs the core, every plugin in plugins/ and the tools of
# requirements/<mode>.txt (mode: test (default) or dev), editable, with torch pinned to the local
# CPU build through constraints.txt. A stamp skips the install when nothing it depends on changed
# (constraints, requirements, pyproject files); FORCE_SETUP=1 reinstalls anyway.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mode="${1:-test}"
python="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$python" -m venv .venv

editable=(-e ./core)
for plugin in plugins/*/; do
  [ -f "$plugin/pyproject.toml" ] && editable+=(-e "./${plugin%/}")
done

stamp=".venv/.torchenv-setup-$mode"
digest="$(cat constraints.txt requirements/*.txt core/pyproject.toml plugins/*/pyproject.toml \
  2>/dev/null | .venv/bin/python -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
if [ "${FORCE_SETUP:-0}" != 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
  exit 0
fi

echo "setting up .venv: core + plugins (editable), requirements/$mode.txt, constraints.txt" >&2
pip=(.venv/bin/python -m pip install --quiet -c constraints.txt)
"${pip[@]}" --upgrade pip
"${pip[@]}" "${editable[@]}" -r "requirements/$mode.txt"
echo "$digest" > "$stamp"
