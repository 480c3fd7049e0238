#!/usr/bin/env bash
# On the GPU machine, in one call: builds our package offline, then runs
# benchmarks/hopper_compare.py under ours and under upstream TileLang (two processes; the
# upstream wheel unpacked from .peer/upstream-tilelang.tar.xz, made by
# ../shared/tools/upstream-tilelang-pack.sh) and prints ours / upstream / yardstick ratios.
#   bash benchmarks/hopper_compare.sh [--only gemm|attn] [--quick]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUTDIR="${OUT:-/tmp/hopper-compare}"; mkdir -p "$OUTDIR"
export TILELANG_CACHE_DIR="${TILELANG_CACHE_DIR:-/tmp/tilelang-cache}" TILELANG_PRINT_ON_COMPILATION=0 PYTHONUNBUFFERED=1
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc; fi
if [ ! -x .venv/bin/python ] || [ "${REBUILD:-1}" = "1" ]; then
  t0=$(date +%s); rm -rf build/cp3*
  source scripts/setup_env.sh >/dev/null || exit 1
  echo "build: $(( $(date +%s) - t0 )) s"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader || true
timeout "${OURS_TIMEOUT:-300}" .venv/bin/python benchmarks/hopper_compare.py --label ours --dump-source "$OUTDIR" "$@" | tee "$OUTDIR/ours.jsonl"
if [ -f .peer/upstream-tilelang.tar.xz ] && [ "${SKIP_UPSTREAM:-0}" != "1" ]; then
  [ -d /tmp/upstream-tilelang ] || tar -xJf .peer/upstream-tilelang.tar.xz -C /tmp
  PYTHONPATH=/tmp/upstream-tilelang timeout "${UPSTREAM_TIMEOUT:-300}" python3 benchmarks/hopper_compare.py \
    --label upstream --dump-source "$OUTDIR" "$@" 2>&1 | grep -v Warning | tee "$OUTDIR/upstream.jsonl"
fi
python3 benchmarks/hopper_summary.py "$OUTDIR/ours.jsonl" "$OUTDIR/upstream.jsonl" | tee "$OUTDIR/summary.txt"
