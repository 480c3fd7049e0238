"""One GEMM source (A row-major, B K-major, fp32 accumulation, fp16 out) at several tile
configurations, each compiled under several sets of pass configs, checked against torch, then
timed (CUPTI, median of three). Runs under whichever `tilelang` is importable: ours, or
upstream's wheel on PYTHONPATH (then only the default configs, which it knows). Needs a GPU.

    python benchmarks/gemm_variants.py float16 4096,4096,4096 128x128x64/3/256 128x256x64/3/256 \
        --configs ";tl.ws_gemm_in_flight=0" --label ours

Tiles are BMxBNxBK/stages/threads. --configs: sets of pass configs separated by ';' (k=v,k=v;
an empty set is the defaults). One RESULT line per tile: label, dtype, shape, tile, ms per set;
--cublas adds one for torch.mm of the same operands (cuBLAS); --persistent times the persistent
form of the source (one block per SM walking the tiles with T.Persistent)."""
import argparse

import torch

import tilelang
import tilelang.language as T
from tilelang.profiler import do_bench


def gemm(M, N, K, dtype, bm, bn, bk, stages, threads, staged=False):
    """staged: the epilogue through a shared tile (C_local -> C_shared -> C), as upstream's
    autotuned GEMM examples write it; else straight from registers to C."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            a = T.alloc_shared((bm, bk), dtype)
            b = T.alloc_shared((bn, bk), dtype)
            c = T.alloc_fragment((bm, bn), "float32")
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], a)
                T.copy(B[bx * bn, k * bk], b)
                T.gemm(a, b, c, transpose_B=True)
            if staged:
                c_s = T.alloc_shared((bm, bn), "float16")
                T.copy(c, c_s)
                T.copy(c_s, C[by * bm, bx * bn])
            else:
                T.copy(c, C[by * bm, bx * bn])
    return main


def gemm_persistent(M, N, K, dtype, bm, bn, bk, stages, threads, blocks):
    """The same GEMM as a persistent kernel (upstream's examples/gemm/example_gemm_persistent.py
    form): `blocks` blocks walk the output tiles with T.Persistent, the epilogue staged in
    shared memory."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), "float16")):
        with T.Kernel(blocks, threads=threads) as block_id:
            a = T.alloc_shared((bm, bk), dtype)
            b = T.alloc_shared((bn, bk), dtype)
            c = T.alloc_fragment((bm, bn), "float32")
            c_s = T.alloc_shared((bm, bn), "float16")
            for by, bx in T.Persistent([T.ceildiv(M, bm), T.ceildiv(N, bn)], blocks, block_id):
                T.clear(c)
                for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                    T.copy(A[by * bm, k * bk], a)
                    T.copy(B[bx * bn, k * bk], b)
                    T.gemm(a, b, c, transpose_B=True)
                T.copy(c, c_s)
                T.copy(c_s, C[by * bm, bx * bn])
    return main


def parse_configs(text):
    sets = []
    for part in text.split(";"):
        cfg = {}
        for item in filter(None, part.split(",")):
            key, value = item.split("=", 1)
            cfg[key.strip()] = value.strip()
        sets.append(cfg)
    return sets


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dtype", choices=["float16", "bfloat16", "float8_e4m3"])
    p.add_argument("shape")
    p.add_argument("tiles", nargs="+")
    p.add_argument("--configs", default="")
    p.add_argument("--label", default="ours")
    p.add_argument("--cublas", action="store_true", help="also time torch.mm (cuBLAS; 16-bit dtypes)")
    p.add_argument("--staged", action="store_true", help="the epilogue through a shared tile (gemm(staged=True))")
    p.add_argument("--persistent", action="store_true",
                   help="the persistent form (gemm_persistent), one block per SM")
    args = p.parse_args()
    tdt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float8_e4m3": torch.float8_e4m3fn}[args.dtype]
    M, N, K = (int(x) for x in args.shape.split(","))
    a = torch.randn(M, K, device="cuda").to(tdt)
    b = torch.randn(N, K, device="cuda").to(tdt)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float().T
    if args.cublas and args.dtype != "float8_e4m3":
        ms = sorted(do_bench(lambda: torch.mm(a, b.t(), out=c) if tdt == torch.float16 else torch.mm(a, b.t()),
                             backend="cupti") for _ in range(3))[1]
        print("RESULT", args.label, args.dtype, args.shape, "cublas", f"{ms:.4f}", flush=True)
    for tile in args.tiles:
        dims, stages, threads = tile.split("/")
        bm, bn, bk = (int(x) for x in dims.split("x"))
        times = []
        for cfg in parse_configs(args.configs):
            try:
                shape = (M, N, K, args.dtype, bm, bn, bk, int(stages), int(threads))
                if args.persistent:
                    sms = torch.cuda.get_device_properties(0).multi_processor_count
                    func = gemm_persistent(*shape, sms)
                else:
                    func = gemm(*shape, staged=args.staged)
                k = tilelang.compile(func, target="cuda", pass_configs=cfg or None)
                c.fill_(float("nan"))
                k(a, b, c)
                # relative to the whole product: fp8 wgmmas accumulate with fewer bits than fp32,
                # an error that grows with K (both packages alike)
                err = ((c.float() - ref).norm() / ref.norm()).item()
                assert err < (2e-2 if args.dtype == "float8_e4m3" else 1e-3), f"relative error {err:.2e}"
                ms = sorted(do_bench(lambda: k(a, b, c), backend="cupti") for _ in range(3))[1]
                times.append(f"{ms:.4f}")
            except Exception as e:  # noqa: BLE001
                times.append(f"error:{type(e).__name__}:{str(e)[:120]}")
        form = tile + ("/persistent" if args.persistent else "") + ("/staged" if args.staged else "")
        print("RESULT", args.label, args.dtype, args.shape, form, " ".join(times), flush=True)


if __name__ == "__main__":
    main()
