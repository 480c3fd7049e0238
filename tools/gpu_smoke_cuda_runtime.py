# SPDX-License-Identifier: Apache-2.0
"""GPU smoke test of the CUDA runtime layer (tilelang._tl): build hand-written kernels
with build_cuda, launch them on torch tensors on torch's current stream, check results.

Run on a machine with a GPU and torch:  python tools/gpu_smoke_cuda_runtime.py
Set TL_SMOKE_MODULE to import another extension exposing the same functions.
Prints OK at the end; any failure raises.
"""
import importlib
import os
import shutil
import sys
import tempfile
import threading

import torch

VEC_ADD = r"""
extern "C" __global__ void vec_add(const float* a, const float* b, float* c, float alpha,
                                   long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + alpha * b[i];
}
"""

# Reverses each block's slice through dynamic shared memory of `words` floats.
SMEM_REVERSE = r"""
extern "C" __global__ void smem_reverse(const float* x, float* y, int words) {
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) buf[i] = x[blockIdx.x * words + i];
  __syncthreads();
  for (int i = threadIdx.x; i < words; i += blockDim.x)
    y[blockIdx.x * words + i] = buf[words - 1 - i];
}
"""


def main():
    tl = importlib.import_module(os.environ.get("TL_SMOKE_MODULE", "tilelang._tl"))
    assert torch.cuda.is_available(), "this smoke test needs a GPU"
    torch.cuda.init()
    ok, reason = tl.cuda_available()
    assert ok, reason
    assert tl.device_count() == torch.cuda.device_count(), (tl.device_count(),)
    arch = tl.device_arch(0)
    major, minor = torch.cuda.get_device_capability(0)
    assert arch == f"sm_{major}{minor}", (arch, major, minor)
    build_arch = arch + "a" if major in (9, 10) else arch  # arch-specific features on
    optin = tl.max_shared_memory_per_block_optin(0)
    sms = tl.multiprocessor_count(0)
    print(f"device {arch}, {sms} SMs, {optin} bytes opt-in shared memory per block")
    assert sms == torch.cuda.get_device_properties(0).multi_processor_count

    cache = tempfile.mkdtemp(prefix="tl_smoke_")
    want = os.environ.get("TL_SMOKE_COMPILER", "")  # "", "nvrtc" or "nvcc"
    print("compiler found:", tl.find_cuda_compiler(sys.path))

    def build(source):
        return tl.build_cuda(source, build_arch, cache, [], [], sys.path, compiler=want)

    path, hit, compiler, log, usage = build(VEC_ADD)
    print(f"built with {compiler}: {usage}")
    assert not hit and usage["registers"] > 0, (hit, usage, log)
    path2, hit2, *_ = build(VEC_ADD)
    assert hit2 and path2 == path

    n = (1 << 20) + 3
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    mod = tl.CudaModule(path, "vec_add")
    args = [("ptr", a.data_ptr()), ("ptr", b.data_ptr()), ("ptr", c.data_ptr()),
            ("f32", 0.5), ("i64", n)]
    grid = ((n + 255) // 256, 1, 1)
    mod.launch(grid, (256, 1, 1), 0, torch.cuda.current_stream().cuda_stream, args)
    torch.testing.assert_close(c, a + 0.5 * b)

    # A non-default torch stream, ordered after work already queued on it.
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        a2 = a * 2
        mod.launch(grid, (256, 1, 1), 0, s.cuda_stream,
                   [("ptr", a2), ("ptr", b), ("ptr", c), ("f32", -1.0), ("i64", n)])
    s.synchronize()
    torch.testing.assert_close(c, 2 * a - b)

    # A thread with no context current: the module retains the primary context, which
    # is the one torch uses, so torch's pointers stay valid.
    errors = []

    c.zero_()
    torch.cuda.synchronize()

    def worker():
        try:  # no torch call first: that would make the context current
            mod.launch(grid, (256, 1, 1), 0, 0, args)
            tl.cuda_synchronize()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert not errors, errors
    torch.testing.assert_close(c, a + 0.5 * b)

    # Dynamic shared memory above 48 KB needs the opt-in attribute.
    words = min(optin, 200 * 1024) // 4
    spath, *_ = build(SMEM_REVERSE)
    smod = tl.CudaModule(spath, "smem_reverse")
    blocks = 8
    x = torch.randn(blocks * words, device="cuda")
    y = torch.empty_like(x)
    smod.launch((blocks,), (256,), words * 4, torch.cuda.current_stream().cuda_stream,
                [("ptr", x.data_ptr()), ("ptr", y.data_ptr()), ("i32", words)])
    torch.cuda.synchronize()
    torch.testing.assert_close(y.view(blocks, words), x.view(blocks, words).flip(1))

    try:
        smod.launch((1,), (32,), optin + 4, 0, [("ptr", x), ("ptr", y), ("i32", 1)])
        raise AssertionError("expected a shared memory error")
    except RuntimeError as e:
        assert "smem_reverse needs" in str(e) and str(optin) in str(e), e
        print("expected error:", e)
    try:
        mod.launch((1,), (4096,), 0, 0, args)
        raise AssertionError("expected a launch error")
    except RuntimeError as e:
        assert "vec_add" in str(e) and "CUDA_ERROR" in str(e), e
        print("expected error:", e)
    torch.cuda.synchronize()
    shutil.rmtree(cache)
    print("OK")


if __name__ == "__main__":
    main()
