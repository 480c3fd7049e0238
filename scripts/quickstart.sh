#!/usr/bin/env bash
# Sets up .venv, then runs the quickstart GEMM (+ReLU) on the GPU if one is usable, else the CPU.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup_env.sh"
exec "$ROOT/.venv/bin/python" "$ROOT/examples/quickstart.py" "$@"
