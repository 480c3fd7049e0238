#!/usr/bin/env bash
# On the GPU machine: one upstream regression function's kernel profiled by ncu under our
# package and under upstream's (two processes), to see where a kernel's time goes.
#   bash scripts/ncu_compare.sh <tag> <kernel-name regex> <family> <module> '<json kwargs>'
#   e.g. bash scripts/ncu_compare.sh smla_fwd "^sparse_mla_fwd" deepseek_v32 sparse_mla_fwd \
#          '{"S":256,"SKV":1024,"H":64,"HKV":1,"DQK":576,"DV":512,"topk":256}'
# An optional sixth argument names another function of the module to call (an example's
# test_* entry, for examples without run_regression_perf); NCU_SIDES="upstream" profiles one side.
# Needs .peer/upstream-src.tar.gz and .peer/upstream-tilelang.tar.xz (see scripts/gpu_run.sh).
# Writes to $OUT: ncu_<tag>_<side>.txt (speed of light, occupancy, warp state, scheduler,
# memory, instruction statistics), sass_<tag>_<side>.csv (per SASS instruction: executed
# count, stall samples, shared-memory wavefronts; read it with any CSV tool), the run's log
# ncu_<tag>_<side>.log and the generated sources src_<tag>_<side>.cu (all in one file), and prints the
# headline figures and the stall reasons.
set -uo pipefail
cd "$(dirname "$0")/.."
tag=$1; rx=$2; shift 2
OUT=${OUT:-/tmp}
mkdir -p /tmp/upstream-src && [ -d /tmp/upstream-src/examples ] || tar -xzf .peer/upstream-src.tar.gz -C /tmp/upstream-src
[ -d /tmp/upstream-tilelang ] || tar -xJf .peer/upstream-tilelang.tar.xz -C /tmp
export TILELANG_PRINT_ON_COMPILATION=0
for side in ${NCU_SIDES:-ours upstream}; do
  if [ "$side" = ours ]; then py=.venv/bin/python; pp=; else py=python3; pp=/tmp/upstream-tilelang; fi
  rep=/tmp/ncu_${tag}_$side
  # each side's kernels compiled into a cache of their own (both packages read
  # TILELANG_CACHE_DIR), so that their generated sources can be copied out below
  cache=/tmp/ncu_cache_${tag}_$side; rm -rf "$cache"
  TILELANG_CACHE_DIR=$cache PYTHONPATH=$pp timeout ${NCU_TIMEOUT:-200} ncu --clock-control none --launch-skip 1 --launch-count 1 -k "regex:$rx" \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters --section InstructionStats \
    --metrics 'regex:smsp__pcsamp_warps_issue_stalled_.*' -o "$rep" -f "$py" scripts/ncu_probe.py "$@" > "$rep.log" 2>&1
  ncu --import "$rep.ncu-rep" --page details --print-details all > "$OUT/ncu_${tag}_$side.txt" 2>&1
  ncu --import "$rep.ncu-rep" --page source --csv --print-source sass > "$OUT/sass_${tag}_$side.csv" 2>&1
  cp "$rep.log" "$OUT/ncu_${tag}_$side.log" 2>/dev/null  # the run's own output (why it failed, if it did)
  # the generated sources in one file per side (the device tool returns at most 8 files)
  src="$OUT/src_${tag}_$side.cu"; : > "$src"; n=0
  for f in $(grep -rl "__global__" "$cache" 2>/dev/null | head -20); do
    n=$((n+1)); { echo "// ===== generated source $n: $f"; cat "$f"; } >> "$src"
  done
  echo "== $tag $side ($n generated sources in src_${tag}_$side.cu)"
  grep -E "Duration|Registers Per|Executed Instructions  |Branch Instructions  |Warp Cycles Per Issued" "$OUT/ncu_${tag}_$side.txt" | head -6
  grep -E "pcsamp_warps_issue_stalled" "$OUT/ncu_${tag}_$side.txt" | awk '{gsub(",", "", $NF); print $NF, $1}' | sort -n -r | head -8
done
