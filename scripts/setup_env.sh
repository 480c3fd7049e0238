#!/usr/bin/env bash
# Creates (or reuses) .venv at the repo root and installs tilelang into it.
# Sourced by quickstart.sh and test.sh. Works offline when the build tools are already
# installed system-wide (the GPU machine): the venv sees system site-packages.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PY" -m venv --system-site-packages "$ROOT/.venv"
  # Let the venv see every package folder the base interpreter sees (user site and
  # distro folders too, which --system-site-packages leaves out): on a machine with
  # the tools preinstalled, nothing then needs the network.
  "$PY" -c 'import sys, site; print("\n".join(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))))' \
    > "$("$ROOT/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_base_site.pth"
fi
VPY="$ROOT/.venv/bin/python"
# The GPU image's default CXX (/opt/gcc) links a libstdc++ that crashes inside the extension
# once it is loaded next to the system one (every kernel's code generation segfaulted); the
# system compiler is the safe choice wherever there is one. TL_KEEP_CXX=1 keeps $CXX. (Set
# for the build command only: this file is sourced, and the CPU target's kernel cache keys
# on the compiler a kernel is built with.)
build_env=()
if [ "${TL_KEEP_CXX:-0}" != "1" ] && [ -x /usr/bin/g++ ]; then build_env=(CXX=/usr/bin/g++ CC=/usr/bin/gcc); fi
# Install only what is missing, so an offline machine with the tools preinstalled works.
need=()
"$VPY" -c "import numpy" 2>/dev/null || need+=(numpy)
"$VPY" -c "import ml_dtypes" 2>/dev/null || need+=(ml_dtypes)
"$VPY" -c "import nanobind" 2>/dev/null || need+=(nanobind)
"$VPY" -c "import scikit_build_core" 2>/dev/null || need+=(scikit-build-core)
"$VPY" -c "import pytest" 2>/dev/null || need+=(pytest)
command -v cmake >/dev/null 2>&1 || "$VPY" -c "import cmake" 2>/dev/null || need+=(cmake)
command -v ninja >/dev/null 2>&1 || "$VPY" -c "import ninja" 2>/dev/null || need+=(ninja)
if [ ${#need[@]} -gt 0 ]; then
  "$VPY" -m pip install -q "${need[@]}"
fi
export PATH="$ROOT/.venv/bin:$PATH"
# --no-build-isolation: reuse the tools above (no network needed); the build folder is
# kept under build/ so a second run only recompiles what changed.
env "${build_env[@]}" "$VPY" -m pip install -q --no-build-isolation --no-deps "$ROOT"
