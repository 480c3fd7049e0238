"""Compile-and-load cycles of distinct kernels on the GPU, with host and device memory
measured as they go (project issue 12: ten thousand cycles must not grow memory without
bound; loaded modules are released when their kernels are dropped).

    python benchmarks/load_cycles.py [--cycles 10000] [--uncached 400] [--workers 15]

Each kernel scales a vector by its own constant, so every cycle's kernel is distinct (its
own source, cache key and cubin). Two phases, in one process after the preparation:
  1. `--uncached` cycles with the kernel cache disabled: NVRTC runs in this process each
     time (front end, lowering, NVRTC, cubin load, launch, check, release).
  2. `--cycles` cycles whose cubins a pool of worker processes compiled beforehand into
     the disk cache: this process parses, lowers and generates code for each kernel,
     finds its cubin in the cache, loads the module, launches, checks the result and drops
     the kernel (the module is unloaded). This is what a long-running server that builds
     kernels on demand does, at a rate where ten thousand cycles fit in minutes.
Prints RSS and device memory in use at checkpoints, and the growth per 1000 cycles over the
second half of each phase (after allocator and driver warm-up)."""
import argparse
import gc
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor


def _kernel(i, n=4096):
    import tilelang.language as T

    c = 0.5 + i

    @T.prim_func
    def scale(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for j in T.Parallel(128):
                Y[bx * 128 + j] = X[bx * 128 + j] * c

    return scale


def _precompile(ids):
    import tilelang

    for i in ids:
        tilelang.compile(_kernel(i), target="cuda")
    return len(ids)


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _cycle_checked(ids, label, torch):
    """The measured loop: compile (or cache hit), load, launch, check, drop."""
    import tilelang

    x = torch.linspace(-1, 1, 4096, device="cuda")
    want0 = x.double()
    marks, t0, bad = [], time.time(), 0
    step = max(1, len(ids) // 10)
    for n, i in enumerate(ids, 1):
        k = tilelang.compile(_kernel(i), target="cuda")
        y = torch.full_like(x, float("nan"))
        k(x, y)
        if n % 97 == 0 or n == 1:  # spot-check results without a sync every cycle
            if not torch.allclose(y.double(), want0 * (0.5 + i), atol=1e-4):
                bad += 1
        del k, y
        if n % step == 0 or n == len(ids):
            gc.collect()
            torch.cuda.synchronize()
            free, total = torch.cuda.mem_get_info()
            marks.append((n, _rss_kib(), (total - free) // 1024))
            print(f"{label}: {n} cycles, {time.time() - t0:.1f} s, RSS {marks[-1][1]} KiB, "
                  f"device in use {marks[-1][2]} KiB", flush=True)
    return marks, bad, time.time() - t0


def _growth(marks):
    """KiB per 1000 cycles between the middle checkpoint and the last (host, device)."""
    mid, last = marks[len(marks) // 2], marks[-1]
    cycles = max(1, last[0] - mid[0])
    return ((last[1] - mid[1]) * 1000 / cycles, (last[2] - mid[2]) * 1000 / cycles)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cycles", type=int, default=10000)
    p.add_argument("--uncached", type=int, default=400)
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    a = p.parse_args()
    cache = tempfile.mkdtemp(prefix="tl-load-cycles-")
    os.environ["TILELANG_CACHE_DIR"] = cache
    os.environ.setdefault("TILELANG_PRINT_ON_COMPILATION", "0")
    ids = list(range(a.uncached, a.uncached + a.cycles))
    t0 = time.time()
    chunks = [ids[w::a.workers] for w in range(a.workers)]
    with ProcessPoolExecutor(a.workers) as pool:
        done = sum(pool.map(_precompile, chunks))
    print(f"prepared: {done} cubins compiled by {a.workers} processes in {time.time() - t0:.1f} s", flush=True)

    import torch

    import tilelang  # noqa: F401

    os.environ["TILELANG_DISABLE_CACHE"] = "1"
    m1, bad1, t1 = _cycle_checked(list(range(a.uncached)), "uncached", torch)
    os.environ.pop("TILELANG_DISABLE_CACHE")
    m2, bad2, t2 = _cycle_checked(ids, "cached cubin", torch)
    g1, g2 = _growth(m1), _growth(m2)
    print(f"uncached: {a.uncached} cycles in {t1:.1f} s ({t1 / max(1, a.uncached) * 1e3:.1f} ms each), "
          f"wrong results {bad1}, growth per 1000 cycles: RSS {g1[0]:.0f} KiB, device {g1[1]:.0f} KiB")
    print(f"cached cubin: {a.cycles} cycles in {t2:.1f} s ({t2 / max(1, a.cycles) * 1e3:.1f} ms each), "
          f"wrong results {bad2}, growth per 1000 cycles: RSS {g2[0]:.0f} KiB, device {g2[1]:.0f} KiB")
    print(f"RSS from first to last checkpoint: {m1[0][1]} -> {m2[-1][1]} KiB; device in use "
          f"{m1[0][2]} -> {m2[-1][2]} KiB")
    return 1 if bad1 or bad2 else 0


if __name__ == "__main__":
    sys.exit(main())
