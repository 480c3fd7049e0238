#!/usr/bin/env bash
# Runs upstream TileLang's tests (examples/**/test_*.py and testing/python/{language,kernel,jit,
# autotune,cpu}) under our package and, with --upstream-pkg, under upstream's package as a
# control; writes a summary table (passed by both / upstream only / ours only, failures grouped
# by their first error line) to OUT/summary.md and the details to OUT/results.json.
#
#   bash scripts/compat_run.sh UPSTREAM_CHECKOUT [--upstream-pkg DIR] [--out DIR] [--suites a,b]
#        [--filter REGEX] [--timeout SEC] [--jobs N] [--sides-at-once] [--collect-only] [--python PY]
#        [--no-provide-tvm]
#
# UPSTREAM_CHECKOUT: upstream's repository (git clone, or `git archive <tag> | tar -x`); use the
#   tag of the wheel you compare against, so the tests match the control's API.
# --upstream-pkg: an unpacked upstream wheel, e.g. after
#   tar -xJf .peer/upstream-tilelang.tar.xz -C /tmp   ->   --upstream-pkg /tmp/upstream-tilelang
#   (made by shared/tools/upstream-tilelang-pack.sh). The two packages run in separate processes.
# --collect-only: imports and collects only (works without a GPU: finds missing names).
# --sides-at-once: both packages' files at the same time, each in its own processes.
# Our package is the one installed in .venv (bash scripts/setup_env.sh), or --python's.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
PY="$ROOT/.venv/bin/python"
for a in "$@"; do
  case "$a" in --python|--python=*) PY="";; esac
done
if [ -n "$PY" ] && [ ! -x "$PY" ]; then
  echo "compat_run.sh: $PY is missing; run: bash scripts/setup_env.sh" >&2
  exit 2
fi
exec python3 "$ROOT/scripts/compat_run.py" "$@"
