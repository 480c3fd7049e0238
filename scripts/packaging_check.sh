#!/usr/bin/env bash
# Packaging check (project issue 13): builds a wheel with each Python given (default
# 3.10-3.13, as found on PATH), installs it into a fresh virtual environment with only its
# declared dependencies (no torch, no CUDA), and runs a CPU kernel from it.
#   bash scripts/packaging_check.sh [python3.10 python3.11 ...]
# Needs the network for the build tools (PyPI) unless they are cached.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-$(mktemp -d /tmp/tl-packaging-XXXX)}"
PYTHONS=("$@")
[ ${#PYTHONS[@]} -eq 0 ] && PYTHONS=(python3.10 python3.11 python3.12 python3.13)
status=0
for py in "${PYTHONS[@]}"; do
  if ! "$py" -c pass >/dev/null 2>&1; then echo "$py: not usable here, skipped"; continue; fi
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  t0=$(date +%s)
  wheels="$WORK/wheels-$ver"
  if ! "$py" -m pip wheel -q --no-deps -w "$wheels" "$ROOT" >"$WORK/build-$ver.log" 2>&1; then
    echo "$ver: wheel build FAILED (log: $WORK/build-$ver.log)"; status=1; continue
  fi
  env="$WORK/venv-$ver"
  "$py" -m venv "$env"
  if ! "$env/bin/python" -m pip install -q "$wheels"/tilelang-*.whl >"$WORK/install-$ver.log" 2>&1; then
    echo "$ver: install FAILED (log: $WORK/install-$ver.log)"; status=1; continue
  fi
  # From outside the source tree, so the installed package is the one imported; from a
  # file, since the front end reads a kernel's source (stdin keeps none).
  cat > "$WORK/check.py" <<'PY'
import importlib.util
import numpy as np
import tilelang
import tilelang.language as T
assert importlib.util.find_spec("torch") is None, "torch must not be needed"


@T.prim_func
def axpy(X: T.Tensor((100,), "float32"), Y: T.Tensor((100,), "float32")):
    with T.Kernel(2, threads=64) as bx:
        for i in T.Parallel(64):
            if bx * 64 + i < 100:
                Y[bx * 64 + i] = X[bx * 64 + i] * 3.0 + 1.0


k = tilelang.compile(axpy, out_idx=[1], target="cpu")
x = np.arange(100, dtype=np.float32)
assert np.allclose(k(x), x * 3 + 1)
print("ok", tilelang.__file__)
PY
  out=$(cd "$WORK" && TILELANG_CACHE_DIR="$WORK/cache-$ver" TILELANG_PRINT_ON_COMPILATION=0 "$env/bin/python" check.py 2>&1)
  if [[ "$out" == ok* ]]; then
    echo "$ver: wheel $(basename "$wheels"/tilelang-*.whl), installed without torch/CUDA, CPU kernel ran ($(( $(date +%s) - t0 )) s)"
  else
    echo "$ver: run FAILED: $out"; status=1
  fi
done
exit $status
