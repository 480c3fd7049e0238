#!/usr/bin/env bash
# Upstream's own example kernels, ours and upstream TileLang side by side, each package in its
# own process, ROUNDS rounds (default 2), on the GPU machine:
#   bash benchmarks/peer_examples.sh EXAMPLES UPSTREAM_PKG
# EXAMPLES: upstream's examples/ folder (an unpacked `git archive` of its repository);
# UPSTREAM_PKG: its unpacked wheel (../shared/tools/upstream-tilelang-pack.sh). The kernels
# are those issues 9 and 11 track: the FP8 GEMMs' run_regression_perf (4096^3) and the FP8
# GEMM at 8192^3 against torch._scaled_mm, the MHA
# forward at 8 x 32 x 4096 x 128 full and causal (with cuDNN in the same process), the GQA
# forward's run_regression_perf, upstream's plain GEMM (1024^3) and split-K GEMM (4096^3).
# PEER_EXAMPLES_CONFIGS="k=v,..." adds a third process per
# kernel: ours under those pass configs. One RESULT line per process (benchmarks/upstream_examples.py).
set -uo pipefail
cd "$(dirname "$0")/.."
EX=$1 UP=$2
PY=${PY:-.venv/bin/python}
run() {  # label, env, python, args...
  local label=$1 env=$2 py=$3; shift 3
  env $env "$py" benchmarks/upstream_examples.py "$@" --label "$label" 2>&1 | grep -E "^RESULT|Error" | tail -2
}
sides() {  # args...: ours, (ours with the configs,) upstream
  run ours "" "$PY" "$@"
  [ -n "${PEER_EXAMPLES_CONFIGS:-}" ] && run ours-configs "TILELANG_PASS_CONFIGS=$PEER_EXAMPLES_CONFIGS" "$PY" "$@"
  run upstream "PYTHONPATH=$UP" python3 "$@"
}
for r in $(seq "${ROUNDS:-2}"); do
  echo "== round $r"
  sides regression "$EX" gemm_fp8 example_tilelang_gemm_fp8 --repeats 2
  sides regression "$EX" gemm_fp8 example_tilelang_gemm_fp8_2xAcc --repeats 2
  sides fp8-gemm "$EX" --size 8192
  sides mha-forward "$EX"
  sides mha-forward "$EX" --causal
  sides regression "$EX" flash_attention example_gqa_fwd_bshd --repeats 3
  sides regression "$EX" gemm example_gemm --repeats 3
  sides regression "$EX" gemm_splitk example_tilelang_gemm_splitk --repeats 2
done
