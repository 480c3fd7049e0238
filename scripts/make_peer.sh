#!/usr/bin/env bash
# Rebuilds .peer/ (git-ignored), what the device calls carry to compare with upstream TileLang:
# its PyPI wheel packed for the GPU machine (../shared/tools/upstream-tilelang-pack.sh) and a
# `git archive` of its examples/ and testing/ at the wheel's commit. A new checkout has none.
#   bash scripts/make_peer.sh <upstream checkout or mirror> [commit, default a35008a42]
# (the mirror: the `fetch` tool's copy of tile-ai/tilelang, e.g. /work/.mirror/tile-ai+tilelang/repo)
# Then: run(..., carry=[".peer"]) with scripts/gpu_run.sh's GPU_RUN_PEER_EXAMPLES=1,
# GPU_RUN_REGRESSION=1, GPU_RUN_COMPAT=1 or scripts/ncu_compare.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo=$1 commit=${2:-a35008a42}
mkdir -p "$ROOT/.peer"
grep -qx "/.peer/" "$ROOT/.git/info/exclude" 2>/dev/null || echo "/.peer/" >> "$ROOT/.git/info/exclude"
if [ ! -s "$ROOT/.peer/upstream-tilelang.tar.xz" ]; then
  (cd "$ROOT" && bash ../shared/tools/upstream-tilelang-pack.sh .peer)
fi
git -C "$repo" archive --format=tar.gz -o "$ROOT/.peer/upstream-src.tar.gz" "$commit" examples testing
ls -la "$ROOT/.peer"
