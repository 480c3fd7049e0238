#!/usr/bin/env bash
# Sets up .venv, builds and runs the C++ unit tests (ctest), then the Python tests (pytest).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup_env.sh"
JOBS="${JOBS:-$(nproc)}"
cmake -S "$ROOT" -B "$ROOT/build/cpp-tests" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTL_BUILD_PYTHON=OFF -DTL_BUILD_TESTS=ON >/dev/null
cmake --build "$ROOT/build/cpp-tests" -j "$JOBS"
(cd "$ROOT/build/cpp-tests" && ctest --output-on-failure -j "$JOBS")
# Kernels compiled by the tests go to a private cache, so runs do not depend on each other.
export TILELANG_CACHE_DIR="${TILELANG_CACHE_DIR:-$ROOT/build/test-cache}"
export TILELANG_PRINT_ON_COMPILATION=0
cd "$ROOT" && exec "$ROOT/.venv/bin/python" -m pytest -q tests/python "$@"
