"""T.reinterpret, T.ldg32 / T.stg32 (predicated too), their 64- and 128-bit vector forms and
T.__ldg on both targets, checked bit for bit; width mismatches are errors at the user's line."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, refusal

N = 128


@T.prim_func
def _bits(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), Z: T.Tensor((N,), "float32"),
          U: T.Tensor((N,), "uint32"), H: T.Tensor((N,), "float16"), H2: T.Tensor((N,), "float16"),
          W: T.Tensor((N,), "int32")):
    with T.Kernel(N, threads=32) as pid:
        T.stg32(Y[pid], T.reinterpret(X[pid], T.uint32))
        Z[pid] = T.reinterpret(T.ldg32(X[pid], pred=pid < N // 2), T.float32)
        U[pid] = T.reinterpret(X[pid], "uint32") ^ T.uint32(1)
        H2[pid] = T.__ldg(H[pid]) + T.float16(1.0)
        T.stg32(W[pid], X[pid], pred=pid % 3 == 0)  # a float32 value keeps its bits


def test_reinterpret_and_32_bit_accesses(rng):
    x = rng.standard_normal(N).astype(np.float32)
    h = rng.standard_normal(N).astype(np.float16)
    y, z, u = np.zeros(N, np.float32), np.full(N, 7.0, np.float32), np.zeros(N, np.uint32)
    h2, w = np.zeros(N, np.float16), np.full(N, -5, np.int32)
    compile_cpu(_bits)(x, y, z, u, h, h2, w)
    assert np.array_equal(y.view(np.uint32), x.view(np.uint32))
    assert np.array_equal(z[:N // 2], x[:N // 2]) and (z[N // 2:] == 0).all(), "masked-off loads give 0"
    assert np.array_equal(u, x.view(np.uint32) ^ 1)
    assert np.array_equal(h2, h + np.float16(1))
    third = np.arange(N) % 3 == 0
    assert np.array_equal(w[third], x.view(np.int32)[third]) and (w[~third] == -5).all()


def test_cuda_source_names_the_accesses():
    src = tilelang.lower(_bits, target="cuda -arch=sm_90a").kernel_source
    assert "tl::store_global_32((&Y[pid])" in src and "tl::load_global_32_conditional(" in src
    assert "__ldg(&(H[pid]))" in src and "tl::bit_cast<uint32_t>(X[pid])" in src
    assert "tl::store_global_32_conditional(" in src


@pytest.mark.parametrize("body, message", [
    ("Y[i] = T.reinterpret(X[i], T.float16)", "differ in width"),
    ("T.stg32(Y[i], T.ldg64(X[i:i + 2]))", "vector value"),
    ("T.stg32(Y[i], T.float16(1.0))", "stores 32 bits"),
    ("T.stg64(Y[i:i + 4], T.ldg64(X[i:i + 2]))", "moves 8 bytes; the slice spans 4 elements"),
    ("T.stg128(Y[i:i + 4], T.ldg64(X[i:i + 2]))", "stores 128 bits; the value has 64"),
    ("T.stg64(Y[i:i + 2], X[i])", "stores a 64-bit vector value"),
    ("Y[i:i + 2] = T.reinterpret(T.ldg64(X[i:i + 2]), T.float32x4)", "cannot be read as float32x4"),
    ("Y[i:i + 2] = T.reinterpret(X[i], T.float32x2)", "takes a vector value"),
    ("T.sts64(Y[i:i + 2], T.ldg64(X[i:i + 2]))", "accesses shared memory"),
    ("v = T.ldg256(X[i:i + 8])", "needs sm_100"),
])
def test_refusals_point_at_the_line(tmp_path, body, message):
    error = refusal(tmp_path,
                    "import tilelang.language as T\n\n"
                    "@T.prim_func\n"
                    "def k(X: T.Tensor((8,), 'float32'), Y: T.Tensor((8,), 'float32')):\n"
                    "    with T.Kernel(1, threads=8) as bx:\n"
                    "        for i in T.Parallel(8):\n"
                    f"            {body}\n", message)
    assert error.line == 7


@T.prim_func
def _shared_bits(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
    with T.Kernel(1, threads=N) as _:
        tx = T.get_thread_binding()
        S = T.alloc_shared((N,), "float32")
        T.sts32(S[tx], T.reinterpret(X[tx], T.uint32))
        T.sync_threads()
        T.stg32(Y[tx], T.lds32(S[N - 1 - tx]))


def test_shared_32_bit_accesses_reverse_a_vector(rng):
    x = rng.standard_normal(N).astype(np.float32)
    y = np.full(N, np.nan, np.float32)
    tilelang.compile(_shared_bits)(x, y)
    assert np.array_equal(y.view(np.uint32), x[::-1].view(np.uint32))
    src = tilelang.lower(_shared_bits, target="cuda -arch=sm_90a").kernel_source
    assert "tl::store_shared_32(" in src and "tl::load_shared_32(" in src, src


@T.prim_func
def _async_copied(A: T.Tensor((64,), "float16"), B: T.Tensor((64,), "float16")):
    with T.Kernel(1, threads=32) as _:
        S = T.alloc_shared((64,), "float16")
        T.async_copy(A[0:64], S)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.copy(S, B)


def test_async_copy_is_a_copy_said_in_the_remarks(rng):
    a = rng.standard_normal(64).astype(np.float16)
    b = np.full(64, np.nan, np.float16)
    k = tilelang.compile(_async_copied)
    k(a, b)
    assert np.array_equal(b, a)
    assert any("T.async_copy: a synchronous T.copy here" in r for r in k.get_remarks()), k.get_remarks()


@pytest.mark.parametrize("body, message", [
    ("T.sts32(X[i], T.uint32(1))", "accesses shared memory"),
    ("T.async_copy(X[0:4], Y[0:4])", "only supports global->shared/shared.dyn copies; this one is global -> global"),
    ("Y[i] = T.reinterpret(T.lds64(X[i:i + 2]), T.float32)", "T.lds64 accesses shared memory; X is in global"),
    ("Y[i] = T.reinterpret(T.ldg64(X[i:i + 2]), T.float32)", "cannot be read as float32"),
])
def test_shared_and_async_refusals(tmp_path, body, message):
    refusal(tmp_path,
            "import tilelang.language as T\n"
            "@T.prim_func\n"
            "def f(X: T.Tensor((8,), 'float32'), Y: T.Tensor((8,), 'float32')):\n"
            "    with T.Kernel(1, threads=8) as _:\n"
            "        i = T.get_thread_binding()\n"
            f"        {body}\n", message)


@T.prim_func
def _vectors(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), Z: T.Tensor((N,), "float32"),
             H: T.Tensor((N,), "float16"), G: T.Tensor((N,), "float16")):
    with T.Kernel(N // 8, threads=2) as pid:
        tx = T.get_thread_binding()
        S = T.alloc_shared((8,), "float32")
        base = pid * 8 + tx * 4
        v = T.ldg128(X[base:base + 4])
        T.sts128(S[tx * 4:tx * 4 + 4], v)
        T.sync_threads()
        w = T.lds64(S[(1 - tx) * 4:(1 - tx) * 4 + 2])  # the other thread's first two
        T.stg64(Y[base:base + 2], w)
        Y[base + 2:base + 4] = T.reinterpret(T.ldg64(X[base + 2:base + 4], pred=pid < N // 16), T.float32x2)
        T.stg128(Z[base:base + 4], v, pred=tx == 0)
        h = T.reinterpret(T.ldg64(H[base:base + 4]), T.float16x4)  # four 16-bit lanes of two words
        G[base:base + 4] = h


def test_vector_loads_and_stores(rng):
    """T.ldg128 / T.sts128 / T.lds64 / T.stg64 move whole vectors (their lanes in order),
    predicated forms give zeros or skip the store, T.reinterpret views the words as lanes."""
    x = rng.standard_normal(N).astype(np.float32)
    h = rng.standard_normal(N).astype(np.float16)
    y, z, g = np.full(N, np.nan, np.float32), np.full(N, np.nan, np.float32), np.zeros(N, np.float16)
    compile_cpu(_vectors)(x, y, z, h, g)
    want_y = np.empty(N, np.float32)
    for pid in range(N // 8):
        for tx in range(2):
            base, other = pid * 8 + tx * 4, pid * 8 + (1 - tx) * 4
            want_y[base:base + 2] = x[other:other + 2]
            want_y[base + 2:base + 4] = x[base + 2:base + 4] if pid < N // 16 else 0
    assert np.array_equal(y, want_y)
    first = (np.arange(N) % 8) < 4
    assert np.array_equal(z[first], x[first]) and np.isnan(z[~first]).all(), "the predicated store skips tx 1"
    assert np.array_equal(g.view(np.uint16), h.view(np.uint16))


def test_vector_accesses_in_cuda_source():
    src = tilelang.lower(_vectors, target="cuda -arch=sm_90a").kernel_source
    assert "alignas(16) uint32_t v[4];" in src and "tl::load_global_128((&v[0]), (&X[base]));" in src
    assert "tl::store_shared_128(" in src and "tl::load_shared_64(" in src and "tl::store_global_64(" in src
    assert "tl::load_global_64_conditional(" in src and "tl::store_global_128_conditional(" in src
