#!/usr/bin/env bash
# Smoke test of the course on one Python: a fresh venv, the README's install (CPU torch on
# Linux), `a2s doctor`, then two solutions graded full marks and two stubs graded 0.
#
#   bash scripts/smoke.sh python3.12            # one interpreter
#   bash scripts/smoke.sh                       # every python3.1x found on PATH and in pyenv
#
# Not part of .ci/run: on a machine whose package index has no CPU wheels this downloads the
# multi-GB CUDA build of torch. Prints one line per interpreter: version, venv size, time.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
index="${A2S_TORCH_INDEX-https://download.pytorch.org/whl/cpu}"   # empty: the default index

one() {
  local py="$1" dir start venv size ok=0
  dir=$(mktemp -d); venv="$dir/venv"; start=$(date +%s)
  "$py" -m venv "$venv" || return 1
  # shellcheck disable=SC1091
  . "$venv/bin/activate"
  python -m pip install -q --upgrade pip
  if [ -n "$index" ]; then
    python -m pip install -q "torch>=2.4,<2.14" --index-url "$index" || python -m pip install -q "torch>=2.4,<2.14"
  fi
  python -m pip install -q -e "$root" || { deactivate; return 1; }
  a2s doctor --no-kernel
  for lab in 00 01; do
    a2s grade "$root"/solutions/${lab}_*.ipynb --json "$dir/sol$lab.json" --fail-under 100 --quiet || ok=1
    a2s grade "$root"/labs/${lab}_*.ipynb --json "$dir/stub$lab.json" --quiet
    python - "$dir/stub$lab.json" <<'PY' || ok=1
import json, sys
doc = json.load(open(sys.argv[1]))
assert all(r["score"] == 0 and r["error"] is None for r in doc["results"]), doc
PY
  done
  size=$(du -sh "$venv" | cut -f1)
  echo "smoke $(python -V 2>&1): $([ $ok -eq 0 ] && echo ok || echo FAILED), venv $size, $(( $(date +%s) - start )) s"
  deactivate
  rm -rf "$dir"
  return $ok
}

pythons=("$@")
if [ ${#pythons[@]} -eq 0 ]; then
  for py in python3.11 python3.12 python3.13 ~/.pyenv/versions/3.1[123]*/bin/python; do
    # runs, not just found: a pyenv shim of a version that is not selected fails to start
    "$py" -c 'import sys' >/dev/null 2>&1 || continue
    v=$("$py" -c 'import sys; print(sys.version.split()[0])')
    case " ${seen:-} " in *" $v "*) continue ;; esac   # one run per version
    seen="${seen:-} $v"; pythons+=("$py")
  done
fi
status=0
for py in "${pythons[@]}"; do one "$py" || status=1; done
exit $status
