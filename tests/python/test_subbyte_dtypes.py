"""The 4-bit types (float4_e2m1fn, int4, uint4: two values per byte in a tensor's last
dimension, element 2k in the low nibble) and float8_e8m0fnu (one byte, an exponent only)
inside kernels: tensor arguments and their shape binding, conversions bit for bit against
ml_dtypes, packed stores that keep the neighbouring value, copies through tiles, outputs,
the errors for what is refused, and the CUDA code compiling for sm_80 and sm_90a."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu
from tilelang.utils.tensor import pack_4bit, unpack_4bit

F4, E8 = ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e8m0fnu
FP4_VALUES = np.arange(16, dtype=np.uint8).view(F4).astype(np.float64)  # code -> value


def _bits(a):
    return np.asarray(a).view(np.uint8)


def _sweep(rng, n):
    """float32 values around every fp4 / e8m0 boundary, random magnitudes, and specials."""
    fin = np.unique(np.abs(FP4_VALUES))
    mids = (fin[1:] + fin[:-1]) / 2
    pow2 = np.exp2(np.arange(-130, 129, dtype=np.float64))
    edges = np.concatenate([fin, mids, pow2, pow2 * 1.5, pow2 * 0.75, np.array([6.5, 7.0, 1e30])])
    edges = np.concatenate([edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf)])
    with np.errstate(over="ignore"):  # the largest ones become infinities, as intended
        edges = edges.astype(np.float32)
    wide = (rng.standard_normal(n) * np.exp2(rng.integers(-40, 40, n))).astype(np.float32)
    raw = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)  # every bit pattern
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38], np.float32)
    x = np.concatenate([edges, -edges, wide, raw, special])
    return x[: x.size // 2 * 2]  # an even count: whole bytes of fp4 output


def _convert_kernel(n, dt):
    """float32 / float16 / bfloat16 sources cast to dt, and dt widened back to float32 and
    float16 (one block of 128 per 128 elements; the edge guarded)."""

    @T.prim_func
    def convert(A: T.Tensor((n,), T.float32), H: T.Tensor((n,), T.float16), Bf: T.Tensor((n,), T.bfloat16),
                Q: T.Tensor((n,), dt), QH: T.Tensor((n,), dt), QB: T.Tensor((n,), dt),
                W: T.Tensor((n,), T.float32), WH: T.Tensor((n,), T.float16)):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    Q[bx * 128 + i] = T.cast(A[bx * 128 + i], dt)
                    QH[bx * 128 + i] = T.cast(H[bx * 128 + i], dt)
                    QB[bx * 128 + i] = T.cast(Bf[bx * 128 + i], dt)
                    W[bx * 128 + i] = T.cast(Q[bx * 128 + i], T.float32)
                    WH[bx * 128 + i] = T.cast(Q[bx * 128 + i], T.float16)

    return convert


def _run_convert(n, dt, x, storage_shape, storage_dtype):
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to infinity, NaN stays NaN
        h, b = x.astype(np.float16), x.astype(ml_dtypes.bfloat16)
    q, qh, qb = (np.random.default_rng(1).integers(0, 256, storage_shape).astype(storage_dtype) for _ in range(3))
    w, wh = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float16)
    compile_cpu(_convert_kernel(n, dt))(x, h, b, q, qh, qb, w, wh)
    return h, b, q, qh, qb, w, wh


def test_float4_conversions_bit_for_bit(rng):
    x = _sweep(rng, 4000)
    n = x.size
    h, b, q, qh, qb, w, wh = _run_convert(n, T.float4_e2m1fn, x, (n // 2,), np.uint8)
    assert (unpack_4bit(q) == _bits(x.astype(F4))).all()
    assert (unpack_4bit(qh) == _bits(h.astype(F4))).all()
    assert (unpack_4bit(qb) == _bits(b.astype(F4))).all()
    # widening is exact: bit for bit (signed zeros included)
    want = unpack_4bit(q, "float4_e2m1fn")
    assert (w.view(np.uint32) == want.astype(np.float32).view(np.uint32)).all()
    assert (wh.view(np.uint16) == want.astype(np.float16).view(np.uint16)).all()
    assert set(np.unique(np.abs(w))) <= set(np.abs(FP4_VALUES))


def test_e8m0_conversions_bit_for_bit(rng):
    x = _sweep(rng, 4000)
    n = x.size
    h, b, q, qh, qb, w, wh = _run_convert(n, T.float8_e8m0fnu, x, (n,), np.uint8)
    # float32 subnormals: ml_dtypes 0.6 rounds 1.3 * 2^-127 up to 2^-126, 0.7 (and we) down
    # to 2^-127 (round half up on the mantissa); compared with that rule, not the library
    def subnormal_rule(v):  # float32 subnormals -> e8m0 code: 2^-127 below 1.5 * 2^-127, else 2^-126
        v = v.astype(np.float32)
        mant = (v.view(np.uint32) & 0x7FFFFF).astype(np.float64) / 2**22  # in units of 2^-127
        return np.where(v > 0, np.where(mant >= 1.5, 1, 0), 255)  # negatives become NaN (255)

    def tiny_of(v):
        v = v.astype(np.float32)
        return (v != 0) & (np.abs(v) < np.finfo(np.float32).tiny)

    tiny = tiny_of(x)
    assert tiny.any()  # the sweep has float32 subnormals
    assert (q[~tiny] == _bits(x[~tiny].astype(E8))).all()
    assert (q[tiny] == subnormal_rule(x[tiny])).all(), (x[tiny][:4], q[tiny][:4])
    assert (qh == _bits(h.astype(E8))).all()
    b_tiny = tiny_of(b)  # bfloat16 subnormals are float32 ones: the same rule
    assert (qb[~b_tiny] == _bits(b[~b_tiny].astype(E8))).all()
    assert (qb[b_tiny] == subnormal_rule(b[b_tiny])).all()
    ref = q.view(E8).astype(np.float32)
    assert np.array_equal(w, ref, equal_nan=True)
    with np.errstate(over="ignore"):  # scales beyond float16's range widen to infinity
        assert np.array_equal(wh, q.view(E8).astype(np.float16), equal_nan=True)


def _widen_e8m0():
    @T.prim_func
    def widen(Q: T.Tensor((256,), T.float8_e8m0fnu), W: T.Tensor((256,), T.float32)):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                W[bx * 128 + i] = T.cast(Q[bx * 128 + i], T.float32)

    return widen


def test_e8m0_every_code_widens_exactly():
    codes = np.arange(256, dtype=np.uint8)
    w = np.zeros(256, np.float32)
    compile_cpu(_widen_e8m0())(codes, w)  # raw bytes
    ref = codes.view(E8).astype(np.float32)
    assert np.array_equal(w, ref, equal_nan=True) and np.isnan(w[255]) and w[127] == 1.0 and w[0] == 2.0**-127


@pytest.mark.parametrize("dt", ["int4", "uint4"])
def test_int4_conversions(dt, rng):
    n = 512
    ml = getattr(ml_dtypes, dt)
    lo, hi = (-8, 8) if dt == "int4" else (0, 16)

    @T.prim_func
    def convert(I: T.Tensor((n,), T.int32), F: T.Tensor((n,), T.float32), Q: T.Tensor((n,), dt),
                R: T.Tensor((n,), dt), W: T.Tensor((n,), T.int32), WF: T.Tensor((n,), T.float32)):
        with T.Kernel(n // 64, threads=64) as bx:
            for i in T.Parallel(64):
                Q[bx * 64 + i] = T.cast(I[bx * 64 + i], dt)
                R[bx * 64 + i] = T.cast(F[bx * 64 + i], dt)
                W[bx * 64 + i] = T.cast(Q[bx * 64 + i], T.int32)
                WF[bx * 64 + i] = T.cast(R[bx * 64 + i], T.float32)

    ints = rng.integers(-40, 40, n).astype(np.int32)  # wraps modulo 16
    floats = (rng.uniform(lo, hi - 1e-3, n)).astype(np.float32)  # truncated toward zero, in range
    store = np.int8 if dt == "int4" else np.uint8
    q, r = (rng.integers(0, 256, n // 2).astype(np.uint8).view(store) for _ in range(2))
    w, wf = np.full(n, 99, np.int32), np.full(n, np.nan, np.float32)
    compile_cpu(convert)(ints, floats, q, r, w, wf)
    ref_i = ints.astype(ml).astype(np.int32)
    assert (unpack_4bit(q, dt).astype(np.int32) == ref_i).all() and (w == ref_i).all()
    ref_f = np.trunc(floats).astype(np.int32)
    assert (unpack_4bit(r, dt).astype(np.int32) == ref_f).all() and (wf == ref_f).all()


def test_packed_stores_keep_the_neighbour(rng):
    """Only even (then only odd) elements are written, each row by another block: the other
    nibble of every byte keeps its value; and the two halves of each byte written by
    different blocks (concurrent OpenMP threads) both land."""
    M, N = 64, 96

    @T.prim_func
    def halves(A: T.Tensor((M, N), T.float32), C: T.Tensor((M, N), T.float4_e2m1fn),
               D: T.Tensor((M, N), T.float4_e2m1fn)):
        with T.Kernel(M, threads=64) as bx:
            for j in T.Parallel(N // 2):
                C[bx, 2 * j + 1] = T.cast(A[bx, 2 * j + 1], T.float4_e2m1fn)
        with T.Kernel(N, threads=64) as bx:  # block bx writes column bx: neighbours in other blocks
            for i in T.Parallel(M):
                D[i, bx] = T.cast(A[i, bx], T.float4_e2m1fn)

    a = (rng.standard_normal((M, N)) * 3).astype(np.float32)
    c0 = rng.integers(0, 256, (M, N // 2)).astype(np.uint8)
    c, d = c0.copy(), rng.integers(0, 256, (M, N // 2)).astype(np.uint8)
    k = compile_cpu(halves)
    k(a, c, d)
    got, before = unpack_4bit(c), unpack_4bit(c0)
    assert (got[:, 0::2] == before[:, 0::2]).all(), "even elements (low nibbles) untouched"
    assert (got[:, 1::2] == _bits(a[:, 1::2].astype(F4))).all()
    assert (unpack_4bit(d) == _bits(a.astype(F4))).all()
    assert any("atomic read-modify-write" in r and "C (float4_e2m1fn)" in r for r in k.get_remarks())


M_SC, N_SC = 64, 64


def _scale_kernel(M=M_SC, N=N_SC, bm=16):
    """T.copy global fp4 -> shared -> fragment, a widening copy into float32, arithmetic,
    and a narrowing copy back to a packed global tensor; e8m0 scales through shared."""

    @T.prim_func
    def scale(A: T.Tensor((M, N), T.float4_e2m1fn), S: T.Tensor((M,), T.float8_e8m0fnu),
              B: T.Tensor((M, N), T.float32), C: T.Tensor((M, N), T.float4_e2m1fn)):
        with T.Kernel(M // bm, threads=128) as bx:
            a_s = T.alloc_shared((bm, N), T.float4_e2m1fn)
            s_s = T.alloc_shared((bm,), T.float8_e8m0fnu)
            a_f = T.alloc_fragment((bm, N), T.float4_e2m1fn)
            b_f = T.alloc_fragment((bm, N), T.float32)
            T.copy(A[bx * bm, 0], a_s)
            T.copy(S[bx * bm], s_s)
            T.copy(a_s, a_f)
            T.copy(a_f, b_f)
            for i, j in T.Parallel(bm, N):
                b_f[i, j] = b_f[i, j] * T.cast(s_s[i], T.float32)
            T.copy(b_f, B[bx * bm, 0])
            for i, j in T.Parallel(bm, N):
                b_f[i, j] = b_f[i, j] * 0.5
            T.copy(b_f, C[bx * bm, 0])

    return scale


def test_copies_through_tiles(rng):
    M, N = M_SC, N_SC
    codes = rng.integers(0, 16, (M, N)).astype(np.uint8)
    s = np.exp2(rng.integers(-3, 4, M)).astype(E8).view(np.uint8)
    b, c = np.full((M, N), np.nan, np.float32), rng.integers(0, 256, (M, N // 2)).astype(np.uint8)
    compile_cpu(_scale_kernel())(pack_4bit(codes), s, b, c)
    ref = codes.view(F4).astype(np.float64) * s.view(E8).astype(np.float64)[:, None]
    np.testing.assert_array_equal(b.astype(np.float64), ref)  # exact: powers of two
    assert (unpack_4bit(c) == _bits((ref * 0.5).astype(np.float32).astype(F4))).all()


def _dims_kernel():
    m, n = T.dynamic("m"), T.dynamic("n")

    @T.prim_func
    def dims(X: T.Tensor((m, n * 2), T.float4_e2m1fn), Y: T.Tensor((m * 2, n), T.int4),
             Out: T.Tensor((2,), T.int32)):
        with T.Kernel(1, threads=1):
            Out[0] = m
            Out[1] = n

    return dims


def test_dynamic_sizes_bind_from_the_storage_shape(rng):
    """A packed tensor's argument has half the logical last dimension: (4, 16) bytes are a
    (4, 32) fp4 tensor (n * 2 = 32), (8, 8) int8 bytes a (8, 16) int4 one (n = 16)."""
    k = compile_cpu(_dims_kernel())
    for m, n in [(4, 16), (2, 8), (3, 6)]:
        out = np.zeros(2, np.int32)
        k(rng.integers(0, 256, (m, n)).astype(np.uint8), rng.integers(-128, 128, (2 * m, n // 2)).astype(np.int8),
          out)
        assert list(out) == [m, n]


@pytest.mark.cpu_target
def test_argument_errors_name_the_parameter(rng):
    k = compile_cpu(_dims_kernel())
    out = np.zeros(2, np.int32)
    y = np.zeros((8, 8), np.int8)
    with pytest.raises(tilelang.TileLangArgumentError, match=r"'X' must have dtype float4_e2m1fn \(stored as"):
        k(np.zeros((4, 16), np.float32), y, out)
    with pytest.raises(tilelang.TileLangArgumentError, match=r"'Y'.*storage shape \(8, 7\)"):
        k(np.zeros((4, 16), np.uint8), np.zeros((8, 7), np.int8), out)
    with pytest.raises(tilelang.TileLangArgumentError, match="one value per byte"):
        k(np.zeros((4, 32), F4), y, out)
    # ml_dtypes' own e8m0 arrays are accepted, as raw bytes are
    w = np.zeros(256, np.float32)
    compile_cpu(_widen_e8m0())(np.arange(256, dtype=np.uint8).view(E8), w)
    assert w[127] == 1.0 and np.isnan(w[255])


def test_scalar_parameters(rng):
    @T.prim_func
    def scalars(A: T.Tensor((4,), T.float32), f: T.float4_e2m1fn, i: T.int4, e: T.float8_e8m0fnu):
        with T.Kernel(1, threads=4) as bx:
            for j in T.Parallel(4):
                A[j] = T.cast(f, T.float32) * 100.0 + T.cast(i, T.float32) * 10.0 + T.cast(e, T.float32)

    a = np.full(4, np.nan, np.float32)
    compile_cpu(scalars)(a, 2.6, -3, 0.3)  # 2.6 rounds to 3 (fp4), 0.3 to 0.25 (e8m0)
    assert (a == 300.0 - 30.0 + 0.25).all()
    assert tilelang.compile(scalars, target="cuda -arch=sm_90a").get_ptx()


def test_odd_last_dimension_is_a_compile_error():
    @T.prim_func
    def odd(A: T.Tensor((4, 7), T.uint4), B: T.Tensor((4, 7), T.int32)):
        with T.Kernel(1, threads=4) as bx:
            for i, j in T.Parallel(4, 7):
                B[i, j] = T.cast(A[i, j], T.int32)

    with pytest.raises(tilelang.TileLangCompileError, match="last dimension of a uint4 tensor must be even"):
        compile_cpu(odd)


def test_gemm_and_atomics_are_refused():
    with pytest.raises(tilelang.TileLangCompileError, match="float4_e2m1fn operands are not supported"):

        @T.prim_func
        def gemm(A: T.Tensor((16, 16), T.float4_e2m1fn), C: T.Tensor((16, 16), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                a = T.alloc_shared((16, 16), T.float4_e2m1fn)
                c = T.alloc_fragment((16, 16), T.float32)
                T.copy(A, a)
                T.gemm(a, a, c)
                T.copy(c, C)

    with pytest.raises(tilelang.TileLangCompileError, match="atomics on 4-bit types are not supported"):

        @T.prim_func
        def atomic(A: T.Tensor((8,), T.int4)):
            with T.Kernel(1, threads=8) as bx:
                for i in T.Parallel(8):
                    T.atomic_add(A[0], 1)


@tilelang.jit(target="cpu")
def _eager_quant(x):
    M, N = T.const("M, N")
    x: T.Tensor((M, N), T.float32)
    q = T.empty((M, N), T.float4_e2m1fn)
    s = T.empty((M,), T.float8_e8m0fnu)
    i4 = T.empty((M, N), T.int4)
    with T.Kernel(M, threads=32) as bx:
        for j in T.Parallel(N):
            q[bx, j] = T.cast(x[bx, j], T.float4_e2m1fn)
            i4[bx, j] = T.cast(x[bx, j], T.int4)
        s[bx] = T.cast(x[bx, 0], T.float8_e8m0fnu)
    return q, s, i4


@pytest.mark.cpu_target  # numpy outputs (CUDA kernels return torch tensors: below)
def test_empty_outputs_get_the_storage_dtype(rng):
    x = (rng.standard_normal((6, 10)) * 3).astype(np.float32)
    q, s, i4 = _eager_quant(x)
    assert q.dtype == np.uint8 and q.shape == (6, 5)
    assert s.dtype == np.dtype(E8) and s.shape == (6,)
    assert i4.dtype == np.int8 and i4.shape == (6, 5)
    assert (unpack_4bit(q) == _bits(x.astype(F4))).all()
    assert (_bits(s) == _bits(x[:, 0].astype(E8))).all()
    assert (unpack_4bit(i4, "int4").astype(np.int32) == np.trunc(x).astype(np.int32).astype(ml_dtypes.int4)
            .astype(np.int32)).all()


@pytest.mark.cpu_target  # torch CPU tensors
def test_empty_outputs_with_torch(rng):
    torch = pytest.importorskip("torch")
    x = (rng.standard_normal((4, 8)) * 3).astype(np.float32)
    q, s, i4 = _eager_quant(torch.from_numpy(x))
    want_q = getattr(torch, "float4_e2m1fn_x2", torch.uint8)
    assert q.dtype == want_q and tuple(q.shape) == (4, 4)
    assert s.dtype == getattr(torch, "float8_e8m0fnu", torch.uint8) and i4.dtype == torch.int8
    assert (unpack_4bit(q.view(torch.uint8)) == _bits(x.astype(F4))).all()
    # a torch float4_e2m1fn_x2 tensor is accepted as an input too, its shape bound packed
    k = compile_cpu(_dims_kernel())
    out = np.zeros(2, np.int32)
    k(q, torch.zeros((8, 2), dtype=torch.int8), out)  # X (4, 4) packed: (m, n * 2) = (4, 8)
    assert list(out) == [4, 4]
    # and torch's e8m0 tensors
    w = np.zeros(256, np.float32)
    compile_cpu(_widen_e8m0())(torch.arange(256, dtype=torch.uint8).view(torch.float8_e8m0fnu), w)
    assert w[128] == 2.0


def test_cuda_outputs_storage_dtype_and_shape():
    """What a CUDA kernel allocates for T.empty / out_idx outputs (the same helpers as the
    CPU path; running needs a GPU)."""
    torch = pytest.importorskip("torch")
    from tilelang.jit.kernel import storage_shape, torch_storage_dtype

    assert torch_storage_dtype(torch, "float4_e2m1fn") is getattr(torch, "float4_e2m1fn_x2", torch.uint8)
    assert torch_storage_dtype(torch, "int4") is torch.int8 and torch_storage_dtype(torch, "uint4") is torch.uint8
    assert torch_storage_dtype(torch, "float8_e8m0fnu") is torch.float8_e8m0fnu
    assert storage_shape((3, 16), 2, "q") == (3, 8) and storage_shape((5,), 1, "s") == (5,)
    with pytest.raises(tilelang.TileLangRuntimeError, match="multiple of 2"):
        storage_shape((3, 7), 2, "q")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_code_compiles(arch):
    """The same programs through the CUDA pipeline and NVRTC (compile only): packed loads,
    atomic nibble stores, conversions, and copies through shared memory and registers."""
    k = tilelang.compile(_convert_kernel(256, T.float4_e2m1fn), target=f"cuda -arch={arch}")
    src = k.get_kernel_source()
    assert "uint8_t* __restrict__ Q" in src and "tl::store_packed(Q" in src and "tl::load_packed<" in src
    assert "atom" in k.get_ptx()  # the nibble stores are atomic and/or on the byte's word
    for dt in (T.float8_e8m0fnu, T.int4, T.uint4):
        assert tilelang.compile(_convert_kernel(256, dt), target=f"cuda -arch={arch}").get_ptx()
    k = tilelang.compile(_scale_kernel(), target=f"cuda -arch={arch}")
    assert k.get_ptx() and any("element loops" in r for r in k.get_remarks())
