"""Debug aid (not a test): runs the flash-decoding example's two kernels on the CPU and on
CUDA with the same small inputs and prints where they differ."""
import sys

import numpy as np
import torch

sys.path.insert(0, "examples")
import flash_decoding as F  # noqa: E402
import tilelang  # noqa: E402

B, H, HKV, S, D, NS = 2, 8, 2, 77, 64, 4
rng = np.random.default_rng(0)
q = rng.standard_normal((B, H, D)).astype(np.float16)
k, v = (rng.standard_normal((B, S, HKV, D)).astype(np.float16) for _ in range(2))
for bh, bn in ((16, 16), (64, 64)):
    split = F.flash_decode_split.get_tir(B, H, HKV, S, D, NS, block_N=bn, block_H=bh)
    kc = tilelang.compile(split, out_idx=[3, 4], target="cpu")
    kg = tilelang.compile(split, out_idx=[3, 4], target="cuda")
    lc, oc = kc(q, k, v)
    lg, og = (t.cpu().numpy() for t in kg(*(torch.from_numpy(t).cuda() for t in (q, k, v))))
    print(f"block_H={bh} block_N={bn}: lse max diff {np.nanmax(np.abs(lc - lg)):.3g}, "
          f"nan cpu {np.isnan(lc).sum()} gpu {np.isnan(lg).sum()}; O diff {np.nanmax(np.abs(oc - og)):.3g}")
    print("  remarks:", [r for r in kg.get_remarks() if "gemm" in r or "Pipelined" in r])
    comb = F.flash_decode_combine.get_tir(B, H, NS, D)
    cc = tilelang.compile(comb, out_idx=[2], target="cpu")
    cg = tilelang.compile(comb, out_idx=[2], target="cuda")
    oc2 = cc(lc, oc).astype(np.float64)
    og2 = cg(torch.from_numpy(lc).cuda(), torch.from_numpy(oc).cuda()).double().cpu().numpy()
    print(f"  combine diff {np.abs(oc2 - og2).max():.3g}")
