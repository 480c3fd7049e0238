#!/usr/bin/env bash
# The one GPU script: on the GPU machine, in a single call, builds the package offline,
# runs the test suite with GPU tests enabled, then benchmarks side by side with torch.
#   bash scripts/gpu_run.sh [--quick]
# Steps by environment (each 0/unset by default unless said): GPU_RUN_SKIP_CPU, _SKIP_SUITE,
# _SKIP_BENCH, _SKIP_OVERHEAD, _SKIP_PEER; GPU_RUN_REUSE_BUILD=1 (a warm machine's build);
# GPU_RUN_AUTOTUNE=1; GPU_RUN_FUZZ=N (+ _FUZZ_SEED, _FUZZ_KINDS=hopper,...); GPU_RUN_FUZZ_REPLAY="a-b c-d";
# GPU_RUN_LOAD_CYCLES=N; GPU_RUN_PROBE=1 (small kernels vs upstream, scripts/small_kernels_probe.py;
# + _VARIANTS="name:key=v,..." our side under other pass configs, _NCU=0 without ncu, _NAMES="smla" which kernels); GPU_RUN_COMPAT=1 (both packages) or GPU_RUN_COMPAT_CONTROL=results.json
# (our side against a recorded control); GPU_RUN_PEER_EXAMPLES=1 (upstream's FP8 GEMM, MHA, GQA kernels,
# both packages); GPU_RUN_REGRESSION=1 (+ _SHARD=i/n, _MATCH): upstream's
# regression_*.py side by side. Logs of the long steps go under $OUT. The steps that compare
# with upstream need .peer/ (scripts/make_peer.sh) in the call's carry.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export TILELANG_CACHE_DIR="${TILELANG_CACHE_DIR:-/tmp/tilelang-cache}"
# The GPU image's default CXX (/opt/gcc) links a libstdc++ that crashes inside the
# extension once loaded next to the system one; the system compiler is the safe choice.
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc; fi
echo "== build"; t0=$(date +%s)
# GPU_RUN_REUSE_BUILD=1 keeps the package a previous call on this (still warm) machine
# built, when the sources are the same (a hash of the tracked C++, headers and Python).
src_hash=$(cat $(git ls-files src include templates python CMakeLists.txt pyproject.toml 2>/dev/null) 2>/dev/null | sha1sum | cut -c1-16)
if [ "${GPU_RUN_REUSE_BUILD:-0}" = "1" ] && [ -x .venv/bin/python ] && [ "$(cat .venv/.gpu_run_src 2>/dev/null)" = "$src_hash" ]; then
  echo "build: reused (sources unchanged)"
  export PATH="$ROOT/.venv/bin:$PATH"
else
  # A clean build: the copied sources' timestamps need not be newer than objects a previous
  # call left on the machine, so an incremental build could miss changes.
  rm -rf "$ROOT"/build/cp3*
  source "$ROOT/scripts/setup_env.sh" || exit 1
  echo "$src_hash" > .venv/.gpu_run_src
fi
set +e  # setup_env.sh stops at the first error; from here on, report every step
echo "build: $(( $(date +%s) - t0 )) s"
PY="$ROOT/.venv/bin/python"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
if [ -f tests/cuda/device_lib_test.cu ] && [ "${GPU_RUN_SKIP_SUITE:-0}" != "1" ]; then
  echo "== device header library test"
  nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I templates \
    tests/cuda/device_lib_test.cu -o /tmp/device_lib_test && {
      # its own log: a crash loses what printf had buffered, and the exit status says how it ended
      /tmp/device_lib_test > "${OUT:-/tmp}/device_lib_test.log" 2>&1; echo "device_lib_test exit status $?"
      grep -E "^FAIL" "${OUT:-/tmp}/device_lib_test.log" | head -20; tail -3 "${OUT:-/tmp}/device_lib_test.log"; }
fi
if [ -f tests/cuda/wgmma_test.cu ] && [ "${GPU_RUN_SKIP_SUITE:-0}" != "1" ] && nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | grep -q "^9.0"; then
  echo "== wgmma test (Hopper)"
  nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I templates tests/cuda/wgmma_test.cu -o /tmp/wgmma_test \
    && /tmp/wgmma_test | grep -E "FAIL|ALL PASS" | head -20
fi
# CI runs the CPU-target suite on every commit; GPU_RUN_SKIP_CPU=1 saves device time in
# development runs.
if [ "${GPU_RUN_SKIP_CPU:-0}" != "1" ]; then
  echo "== tests: CPU target"
  TILELANG_PRINT_ON_COMPILATION=0 "$PY" -m pytest -q -p no:cacheprovider tests/python --tb=line ${PYTEST_ARGS:-} 2>&1 \
    | grep -E "^E |passed|failed" | sort | uniq -c | tail -8
fi
if [ "${GPU_RUN_SKIP_SUITE:-0}" != "1" ]; then
  echo "== tests: every test again on the CUDA target"
  # 15 workers on the H200 machine's 16 cores. A test that hangs on the GPU (a wait that
  # never completes) is ended after GPU_RUN_TEST_TIMEOUT seconds by pytest-timeout's thread
  # method (a signal does not interrupt a blocked CUDA call): its worker exits, named in the
  # log, and the others go on. -v: each outcome is logged as it happens, so a run cut short
  # still says which tests ran.
  tmo=""
  "$PY" -c "import pytest_timeout" 2>/dev/null && tmo="--timeout=${GPU_RUN_TEST_TIMEOUT:-120} --timeout-method=thread"
  TILELANG_TEST_CUDA=1 TILELANG_PRINT_ON_COMPILATION=0 timeout "${GPU_RUN_SUITE_LIMIT:-420}" "$PY" -m pytest -v -n 15 \
    -p no:cacheprovider -p no:benchmark tests/python $tmo --tb=line ${PYTEST_ARGS:-} \
    > "${OUT:-/tmp}/cuda_suite.log" 2>&1
  echo "suite exit $? ($(grep -c ' PASSED ' "${OUT:-/tmp}/cuda_suite.log") passed)"
  grep -E "^E |^FAILED|\] FAILED|\] ERROR|Timeout|crashed|passed|failed" "${OUT:-/tmp}/cuda_suite.log" | sort | uniq -c | tail -30
fi
if [ "${GPU_RUN_SKIP_BENCH:-0}" != "1" ]; then
  echo "== benchmarks"
  "$PY" benchmarks/gpu_bench.py "$@"
fi
if [ "${GPU_RUN_SKIP_OVERHEAD:-0}" != "1" ]; then
  echo "== host cost of one call (us), ours then upstream's"
  "$PY" benchmarks/call_overhead.py --calls 5000
  if [ -f .peer/upstream-tilelang.tar.xz ]; then
    [ -d /tmp/upstream-tilelang ] || tar -xJf .peer/upstream-tilelang.tar.xz -C /tmp
    PYTHONPATH=/tmp/upstream-tilelang python3 benchmarks/call_overhead.py --calls 5000 2>&1 | grep -v Warning
  fi
fi
if [ "${GPU_RUN_AUTOTUNE:-0}" = "1" ]; then
  echo "== autotuning 16 configurations at scale"
  "$PY" benchmarks/autotune_scale.py
fi
# Upstream's own suites under both packages (issue 10): needs .peer/upstream-src.tar.gz, a
# `git archive` of upstream's examples/ and testing/ at the wheel's version, and the wheel.
if [ "${GPU_RUN_COMPAT:-0}" = "1" ] && [ -f .peer/upstream-src.tar.gz ] && [ -f .peer/upstream-tilelang.tar.xz ]; then
  echo "== compatibility run: upstream's suites, ours and upstream's package"
  mkdir -p /tmp/upstream-src && tar -xzf .peer/upstream-src.tar.gz -C /tmp/upstream-src
  [ -d /tmp/upstream-tilelang ] || tar -xJf .peer/upstream-tilelang.tar.xz -C /tmp
  timeout "${GPU_RUN_COMPAT_TIMEOUT:-540}" bash scripts/compat_run.sh /tmp/upstream-src \
    --upstream-pkg /tmp/upstream-tilelang --out "${OUT:-/tmp}/compat" --jobs 8 --sides-at-once --timeout 240 \
    ${GPU_RUN_COMPAT_SUITES:+--suites "$GPU_RUN_COMPAT_SUITES"} 2>&1 | tail -60
fi
if [ "${GPU_RUN_FUZZ:-0}" -gt 0 ] 2>/dev/null; then
  echo "== differential fuzzing on CUDA: ${GPU_RUN_FUZZ} programs from seed ${GPU_RUN_FUZZ_SEED:-0}"
  timeout "${GPU_RUN_FUZZ_TIMEOUT:-420}" "$PY" -m tools.fuzz --target cuda --seed "${GPU_RUN_FUZZ_SEED:-0}" \
    --count "${GPU_RUN_FUZZ}" --batch 12 --jobs 14 --timeout 150 --quiet-rejected \
    ${GPU_RUN_FUZZ_KINDS:+--kinds "$GPU_RUN_FUZZ_KINDS"} 2>&1 \
    | tee "${OUT:-/tmp}/fuzz_cuda_${GPU_RUN_FUZZ_SEED:-0}.log" | tail -60
fi
# GPU_RUN_FUZZ_REPLAY="2832-2843 3732-3743": seed ranges run again on CUDA (e.g. the batches
# that held programs a fix is for).
for range_ in ${GPU_RUN_FUZZ_REPLAY:-}; do
  lo=${range_%-*}; hi=${range_#*-}
  echo "== fuzz replay on CUDA: seeds $lo-$hi"
  timeout 200 "$PY" -m tools.fuzz --target cuda --seed "$lo" --count $((hi - lo + 1)) --batch 12 --jobs 4 \
    --timeout 150 --quiet-rejected 2>&1 | grep -E "^programs|^====" | head -20
done
# GPU_RUN_LOAD_CYCLES=10000: distinct kernels compiled, loaded, run and dropped in one process
# (benchmarks/load_cycles.py), host and device memory tracked.
if [ "${GPU_RUN_LOAD_CYCLES:-0}" -gt 0 ] 2>/dev/null; then
  echo "== compile-and-load cycles: ${GPU_RUN_LOAD_CYCLES}"
  timeout "${GPU_RUN_LOAD_CYCLES_TIMEOUT:-300}" "$PY" benchmarks/load_cycles.py --cycles "$GPU_RUN_LOAD_CYCLES" \
    --uncached "${GPU_RUN_LOAD_UNCACHED:-500}" --workers 15 2>&1 | tee "${OUT:-/tmp}/load_cycles.log" | tail -8
fi
# GPU_RUN_REGRESSION=1: upstream's performance-regression functions under both packages, one
# process at a time (scripts/regression_perf.py); _SHARD=i/n, _MATCH=path part (or several,
# '|'-separated), _SIDES=ours (re-measure our side only, with --rerun), _WARM=N (build the kernels
# of every file first, N processes at once, timing off: --warm), _CHECK=ours[,upstream] (each
# folder's example tests first, their outcome in the table: --check), results in $OUT/regression.
if [ "${GPU_RUN_REGRESSION:-0}" = "1" ] && [ -f .peer/upstream-src.tar.gz ] && [ -f .peer/upstream-tilelang.tar.xz ]; then
  echo "== performance regression, ours and upstream's"
  mkdir -p /tmp/upstream-src && tar -xzf .peer/upstream-src.tar.gz -C /tmp/upstream-src
  [ -d /tmp/upstream-tilelang ] || tar -xJf .peer/upstream-tilelang.tar.xz -C /tmp
  # Results go straight to $OUT (written after each file, so a call cut off at its limit keeps
  # them); .peer/regression_results.json, an earlier call's results carried back, seeds them.
  reg_out="${OUT:-/tmp}/regression"; mkdir -p "$reg_out"
  [ -f .peer/regression_results.json ] && [ ! -f "$reg_out/results.json" ] && cp .peer/regression_results.json "$reg_out/results.json"
  timeout "${GPU_RUN_REGRESSION_TIMEOUT:-540}" "$PY" scripts/regression_perf.py /tmp/upstream-src \
    --upstream-pkg /tmp/upstream-tilelang --out "$reg_out" --shard "${GPU_RUN_REGRESSION_SHARD:-1/1}" \
    ${GPU_RUN_REGRESSION_MATCH:+--match "$GPU_RUN_REGRESSION_MATCH"} ${GPU_RUN_REGRESSION_SIDES:+--sides "$GPU_RUN_REGRESSION_SIDES" --rerun} \
    ${GPU_RUN_REGRESSION_CHECK:+--check "$GPU_RUN_REGRESSION_CHECK"} \
    --warm "${GPU_RUN_REGRESSION_WARM:-0}" --timeout "${GPU_RUN_REGRESSION_FILE_TIMEOUT:-150}" 2>&1 | tail -40
fi
# GPU_RUN_COMPAT_CONTROL=.peer/compat_control.json: upstream's suites on our package only, compared
# with the upstream side of an earlier run (scripts/compat_run.py --control-results).
if [ -n "${GPU_RUN_COMPAT_CONTROL:-}" ] && [ -f "$GPU_RUN_COMPAT_CONTROL" ] && [ -f .peer/upstream-src.tar.gz ]; then
  echo "== compatibility run, our side against the recorded control"
  mkdir -p /tmp/upstream-src && tar -xzf .peer/upstream-src.tar.gz -C /tmp/upstream-src
  timeout "${GPU_RUN_COMPAT_TIMEOUT:-240}" bash scripts/compat_run.sh /tmp/upstream-src \
    --control-results "$GPU_RUN_COMPAT_CONTROL" --out /tmp/compat-ours --jobs 15 --timeout 120 \
    > /tmp/compat-ours.txt 2> /tmp/compat-ours.progress
  cp /tmp/compat-ours/summary.md "${OUT:-/tmp}/compat_summary.md" 2>/dev/null
  cp /tmp/compat-ours/results.json "${OUT:-/tmp}/compat_results.json" 2>/dev/null
  head -32 /tmp/compat-ours/summary.md 2>/dev/null || tail -5 /tmp/compat-ours.progress
fi
# GPU_RUN_PROBE=1: small kernels of upstream's examples under both packages, their code, times
# and ncu figures (scripts/small_kernels_probe.py), under $OUT/probe.
if [ "${GPU_RUN_PROBE:-0}" = "1" ] && [ -f .peer/upstream-src.tar.gz ] && [ -f .peer/upstream-tilelang.tar.xz ]; then
  echo "== small kernels, ours and upstream's"
  mkdir -p /tmp/upstream-src && tar -xzf .peer/upstream-src.tar.gz -C /tmp/upstream-src
  [ -d /tmp/upstream-tilelang ] || tar -xJf .peer/upstream-tilelang.tar.xz -C /tmp
  probe_out="${OUT:-/tmp}/probe"; mkdir -p "$probe_out"
  "$PY" scripts/small_kernels_probe.py --out "$probe_out" ${GPU_RUN_PROBE_NAMES:-} 2>&1 | grep -v "^\[tilelang\]"
  PYTHONPATH=/tmp/upstream-tilelang python3 scripts/small_kernels_probe.py --out "$probe_out" ${GPU_RUN_PROBE_NAMES:-} 2>&1 \
    | grep -E "^upstream "
  # GPU_RUN_PROBE_VARIANTS="name:key=v,key=v name2:...": our side again under each set of pass configs
  for v in ${GPU_RUN_PROBE_VARIANTS:-}; do
    PROBE_VARIANT="${v%%:*}" TILELANG_PASS_CONFIGS="${v#*:}" "$PY" scripts/small_kernels_probe.py --out "$probe_out" 2>&1 \
      | grep -E "^ours"
  done
  [ "${GPU_RUN_PROBE_NCU:-1}" = "1" ] || ncu_skip=1
  ncu_="ncu --clock-control none --launch-skip 2 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
  for n in $([ -z "${ncu_skip:-}" ] && echo ${GPU_RUN_PROBE_NAMES:-gemm gqa mha}); do
    timeout 120 $ncu_ -k regex:"main|matmul|sparse_mla" "$PY" scripts/small_kernels_probe.py --out /tmp --ncu $n > "$probe_out/ncu_ours_$n.txt" 2>&1
    PYTHONPATH=/tmp/upstream-tilelang timeout 120 $ncu_ -k regex:"main|matmul|sparse_mla" python3 scripts/small_kernels_probe.py --out /tmp --ncu $n \
      > "$probe_out/ncu_upstream_$n.txt" 2>&1
  done
fi
# GPU_RUN_PEER_EXAMPLES=1: upstream's FP8 GEMM, MHA and GQA example kernels, ours and upstream's
# (benchmarks/peer_examples.sh; ROUNDS, PEER_EXAMPLES_CONFIGS).
if [ "${GPU_RUN_PEER_EXAMPLES:-0}" = "1" ] && [ -f .peer/upstream-src.tar.gz ] && [ -f .peer/upstream-tilelang.tar.xz ]; then
  echo "== upstream's example kernels, ours and upstream's"
  mkdir -p /tmp/upstream-src && tar -xzf .peer/upstream-src.tar.gz -C /tmp/upstream-src
  [ -d /tmp/upstream-tilelang ] || tar -xJf .peer/upstream-tilelang.tar.xz -C /tmp
  PY="$PY" timeout "${GPU_RUN_PEER_EXAMPLES_TIMEOUT:-400}" bash benchmarks/peer_examples.sh /tmp/upstream-src/examples /tmp/upstream-tilelang
fi
# Side by side with upstream TileLang on the same sources, when its wheel was packed into
# .peer/ (../shared/tools/upstream-tilelang-pack.sh) and named in the call's carry.
if [ -f .peer/upstream-tilelang.tar.xz ] && [ "${GPU_RUN_SKIP_PEER:-0}" != "1" ]; then
  echo "== side by side with upstream TileLang"
  REBUILD=0 bash benchmarks/hopper_compare.sh --quick
fi
# At most 8 files come back from $OUT (the device tool's limit; more and the rest are left
# out): past 6, everything goes back as one archive, gpu_run_out.tgz.
if [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ "$(find "$OUT" -type f | wc -l)" -gt 6 ]; then
  (cd "$OUT" && tar -czf /tmp/gpu_run_out.tgz . && find . -mindepth 1 -delete && mv /tmp/gpu_run_out.tgz .) \
    && echo "== results archived: \$OUT/gpu_run_out.tgz"
fi
