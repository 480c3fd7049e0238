"""More of upstream TileLang's package API: C dtype names, tile annotations of macro
parameters, the autotuner's compile/cache/do_not_specialize, T.attr, the @jit object's
argument binding, and annotations in the body of a @T.prim_func."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.errors import TileLangCompileError


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# --------------------------------------------------------------------------- C dtype names

@pytest.mark.parametrize("name, canonical", [("uint", "uint32"), ("int", "int32"), ("long", "int64"),
                                             ("short", "int16"), ("ulong", "uint64"), ("float", "float32")])
def test_c_dtype_names(name, canonical):
    d = T.dtype(name)
    assert d == canonical and str(d) == canonical
    assert d.bits == int(canonical.lstrip("uintfloa"))
    # the module attributes upstream exports name the same types
    assert getattr(T, name) == canonical
    # a source format spelled as upstream's quantization helpers compare it
    assert T.dtype("uint") == T.uint and T.dtype("uint") != T.int


def test_uint_tensor_parameter_computes(rng):
    @T.prim_func
    def add_one(A: T.Tensor((16,), "uint"), B: T.Tensor((16,), "uint")):
        with T.Kernel(1) as _:
            for i in T.serial(16):
                B[i] = A[i] + T.uint32(1)

    k = tilelang.compile(add_one, target="cpu")
    a = rng.integers(0, 2**32 - 2, size=16, dtype=np.uint32)
    b = np.zeros(16, np.uint32)
    k(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_unknown_dtype_still_rejected():
    with pytest.raises(ValueError, match="unknown dtype 'uints'"):
        T.dtype("uints")


# --------------------------------------------------------------------------- SharedBuffer & co.

def _macro_kernel(arg_kind="shared", n=8, dtype="float32"):
    @T.macro
    def scale_into(src: T.SharedBuffer([8], "float32"), dst: T.FragmentBuffer([8], "float32"),
                   acc: T.LocalBuffer((1,), "float32"), factor: T.float32):
        for i in T.Parallel(8):
            dst[i] = src[i] * factor
        acc[0] = dst[0]

    @T.prim_func
    def kern(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32"), C: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1) as _:
            s = T.alloc_shared((n,), dtype) if arg_kind == "shared" else T.alloc_fragment((n,), dtype)
            f = T.alloc_fragment((8,), "float32")
            a = T.alloc_local((1,), "float32")
            T.copy(A[0:n], s)
            scale_into(s, f, a, 3.0)
            T.copy(f, B)
            C[0] = a[0]

    return kern


def test_scoped_buffer_annotations_on_macro(rng):
    k = tilelang.compile(_macro_kernel(), target="cpu")
    a = rng.standard_normal(8).astype(np.float32)
    b = np.zeros(8, np.float32)
    c = np.zeros(1, np.float32)
    k(a, b, c)
    np.testing.assert_allclose(b, a * 3.0, rtol=1e-6)
    np.testing.assert_allclose(c, a[:1] * 3.0, rtol=1e-6)


def test_scoped_buffer_spec_forms():
    s = T.SharedBuffer[(4, 8), "float16"]
    assert s.shape == (4, 8) and s.dtype == "float16" and s.scope == "shared"
    assert repr(T.FragmentBuffer([16], T.float32)) == "T.FragmentBuffer([16], float32)"
    assert T.LocalBuffer(4).shape == (4,)


@pytest.mark.parametrize("kind, n, dtype, message", [
    ("fragment", 8, "float32", "parameter 'src' is annotated T.SharedBuffer.*fragment buffer"),
    ("shared", 4, "float32", "parameter 'src' is annotated with shape \\[8\\]"),
    ("shared", 8, "float16", "parameter 'src' is annotated float32"),
])
def test_scoped_buffer_mismatch_names_the_parameter(kind, n, dtype, message):
    with pytest.raises(TileLangCompileError, match=message):
        _macro_kernel(kind, n, dtype)


def test_scoped_buffer_is_not_a_kernel_parameter_annotation():
    with pytest.raises(TileLangCompileError, match="parameter 'A'.*annotates @T.macro parameters"):
        @T.prim_func
        def kern(A: T.SharedBuffer((8,), "float32")):
            with T.Kernel(1) as _:
                T.evaluate(0)


# --------------------------------------------------------------------------- the autotuner

_CONFIGS = [{"block": 8}, {"block": 16}]


def _scale_ref(a):
    return a * 2.0


@tilelang.autotune(configs=_CONFIGS, warmup=1, rep=2, do_not_specialize=["N"], verbose=False, cache_results=False,
                   ref_prog=_scale_ref)
@tilelang.jit(out_idx=[-1], target="cpu")
def _scale(M, N, block=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block)) as bx:
            for i, j in T.Parallel(block, N):
                if bx * block + i < M:
                    B[bx * block + i, j] = A[bx * block + i, j] * 2.0

    return main


@pytest.fixture
def scale():
    _scale._tuner_cache.clear()
    return _scale


def _check_scale(kernel, M, N, rng):
    a = rng.standard_normal((M, N)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a * 2.0, rtol=1e-6)


def test_tuner_cache_and_do_not_specialize(scale, rng):
    k1 = scale(40, 8)
    assert len(scale._tuner_cache) == 1 and k1.config in _CONFIGS and k1.latency > 0
    _check_scale(k1, 40, 8, rng)
    # N is not specialized on: no new tuning, the same configuration, a kernel for N=24
    k2 = scale(40, 24)
    assert len(scale._tuner_cache) == 1
    assert k2.config == k1.config and k2 is not k1
    _check_scale(k2, 40, 24, rng)
    assert scale(40, 24) is k2 and scale(40, 8) is k1
    # keyword and positional forms are one key
    assert scale(M=40, N=16).config == k1.config and len(scale._tuner_cache) == 1
    # M is: a new tuning
    k3 = scale(M=24, N=8)
    assert len(scale._tuner_cache) == 2
    _check_scale(k3, 24, 8, rng)


def test_given_tunable_is_compiled_as_given(scale, rng):
    k = scale(40, 8, block=8)
    assert len(scale._tuner_cache) == 1
    assert k.config == {"block": 8} and k.latency is None and scale.stats["timed"] == 0
    _check_scale(k, 40, 8, rng)
    k16 = scale(40, 8, 16)  # positionally too
    assert len(scale._tuner_cache) == 2 and k16.config == {"block": 16}
    _check_scale(k16, 40, 8, rng)


def test_compile_returns_the_tuned_kernel(scale, rng):
    k = scale.compile(32, 8)
    assert k is scale(32, 8) and k.config in _CONFIGS
    _check_scale(k, 32, 8, rng)
    assert scale.jit_impl is scale.jitted


def test_do_not_specialize_names_must_be_parameters():
    with pytest.raises(ValueError, match="do_not_specialize names 'Q'"):
        tilelang.autotune(configs=_CONFIGS, do_not_specialize=["Q"])(_scale.jitted)
    with pytest.raises(TypeError, match="do_not_specialize takes parameter names"):
        tilelang.autotune(configs=_CONFIGS, do_not_specialize=[3])(_scale.jitted)


@tilelang.autotune(configs=_CONFIGS, warmup=1, rep=2, verbose=False, cache_results=False)
@tilelang.jit(target="cpu")
def _eager_add(A, B, block=32):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), "float32")
    B: T.Tensor((M, N), "float32")
    C = T.empty((M, N), "float32")
    with T.Kernel(T.ceildiv(M, block)) as bx:
        for i, j in T.Parallel(block, N):
            if bx * block + i < M:
                C[bx * block + i, j] = A[bx * block + i, j] + B[bx * block + i, j]
    return C


def test_compile_of_an_eager_kernel_with_const_sizes(rng):
    _eager_add._tuner_cache.clear()
    kernel = _eager_add.compile(M=40, N=8)
    assert kernel.config in _CONFIGS and kernel.latency > 0
    a, b = (rng.standard_normal((40, 8)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(kernel(a, b), a + b, rtol=1e-6)
    # with every tunable given: compiled as given, not tuned
    k8 = _eager_add.compile(M=40, N=8, block=8)
    assert k8.config == {"block": 8} and k8.latency is None
    np.testing.assert_allclose(k8(a, b), a + b, rtol=1e-6)
    # an eager call runs the tuned kernel on the tensors
    np.testing.assert_allclose(_eager_add(a, b), a + b, rtol=1e-6)


# --------------------------------------------------------------------------- body annotations in @T.prim_func

def test_prim_func_parameters_annotated_in_the_body(rng):
    @T.prim_func
    def plus_one(A):
        A: T.Tensor[[16, 8], T.float32]
        B = T.empty([16, 8], T.float32)
        with T.Kernel(1):
            for i in T.serial(16):
                for j in T.serial(8):
                    B[i, j] = A[i, j] + 1.0
        return B

    assert plus_one.attrs["tilelang_out_idx"] == [-1]
    assert plus_one.attrs["global_symbol"] == "plus_one"
    assert "tilelang_pass_configs" not in plus_one.attrs
    k = tilelang.compile(plus_one, target="cpu")
    a = rng.standard_normal((16, 8)).astype(np.float32)
    np.testing.assert_allclose(k(a), a + 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match="Out index conflict"):
        tilelang.compile(plus_one, out_idx=[-1], target="cpu")


def test_prim_func_mixed_annotations_and_two_outputs(rng):
    @T.prim_func
    def two(A, s: T.float32, C):
        C: T.Tensor((8,), "float32")
        A: T.Tensor((8,), "float32")
        X = T.empty((8,), "float32")
        Y = T.empty((8,), "float32")
        with T.Kernel(1):
            for i in T.serial(8):
                X[i] = A[i] * s
                Y[i] = A[i] + C[i]
        return X, Y

    assert two.attrs["tilelang_out_idx"] == [-2, -1]
    k = tilelang.compile(two, target="cpu")
    a, c = (rng.standard_normal(8).astype(np.float32) for _ in range(2))
    x, y = k(a, 3.0, c)  # the parameters keep the signature's order
    np.testing.assert_allclose(x, a * 3.0, rtol=1e-6)
    np.testing.assert_allclose(y, a + c, rtol=1e-6)


def test_prim_func_annotate_pass_configs_and_compile_flags(rng):
    from tilelang.transform import PassConfigKey

    @T.prim_func
    def kern(A, B):
        T.annotate_pass_configs({PassConfigKey.TL_ENABLE_FAST_MATH: True})
        T.annotate_compile_flags(["-DTL_COMPAT_TEST_FLAG=1"])
        A: T.Tensor[[32], T.float32]
        B: T.Tensor[[32], T.float32]
        with T.Kernel(1):
            for i in T.serial(32):
                B[i] = A[i] * 2.0

    attrs = kern.attrs
    assert attrs["tilelang_pass_configs"] == {PassConfigKey.TL_ENABLE_FAST_MATH: True}
    assert attrs["tilelang_compile_flags"] == ["-DTL_COMPAT_TEST_FLAG=1"]
    assert "tilelang_out_idx" not in attrs
    k = tilelang.compile(kern, out_idx=[-1], target="cpu")
    assert k.pass_configs["tl.enable_fast_math"] == "True"
    assert k.compile_flags == ["-DTL_COMPAT_TEST_FLAG=1"]
    a = rng.standard_normal(32).astype(np.float32)
    np.testing.assert_allclose(k(a), a * 2.0, rtol=1e-6)
    # the call's own pass configs win, its flags are added
    k2 = tilelang.compile(kern, out_idx=[-1], target="cpu", pass_configs={"tl.enable_fast_math": False},
                          compile_flags="-DTL_COMPAT_OTHER=2")
    assert k2.pass_configs["tl.enable_fast_math"] == "False"
    assert k2.compile_flags == ["-DTL_COMPAT_TEST_FLAG=1", "-DTL_COMPAT_OTHER=2"]
    np.testing.assert_allclose(k2(a), a * 2.0, rtol=1e-6)


def test_eager_kernel_annotate_pass_configs(rng):
    @tilelang.jit(target="cpu")
    def inc(A):
        M, N = T.const("M N")
        A: T.Tensor[[M, N], T.float32]
        B = T.empty([M, N], T.float32)
        T.annotate_pass_configs({"tl.enable_fast_math": True})
        with T.Kernel(1):
            for i in T.serial(M):
                for j in T.serial(N):
                    B[i, j] = A[i, j] + 1.0
        return B

    a = rng.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(inc(a), a + 1.0, rtol=1e-6)
    assert inc.compile(a).pass_configs["tl.enable_fast_math"] == "True"


def test_prim_func_unannotated_parameter_errors():
    with pytest.raises(TileLangCompileError, match="parameter 'B' needs an annotation"):
        @T.prim_func
        def never(A, B):
            A: T.Tensor((4,), "float32")
            with T.Kernel(1):
                A[0] = 1.0

    with pytest.raises(TileLangCompileError, match="parameter 'A' needs an annotation .* before it is used"):
        @T.prim_func
        def too_late(A):
            with T.Kernel(1):
                A[0] = 1.0
            A: T.Tensor((4,), "float32")

    with pytest.raises(TileLangCompileError, match="T.annotate_pass_configs takes a dict"):
        @T.prim_func
        def bad(A: T.Tensor((4,), "float32")):
            T.annotate_pass_configs(["tl.enable_fast_math"])
            with T.Kernel(1):
                A[0] = 1.0

    with pytest.raises(TileLangCompileError, match="T.annotate_compile_flags takes a list of strings"):
        @T.prim_func
        def bad_flags(A: T.Tensor((4,), "float32")):
            T.annotate_compile_flags([3])
            with T.Kernel(1):
                A[0] = 1.0


# --------------------------------------------------------------------------- T.attr

def _allreduce_gemv(N, K, block_n, reduce_threads, combine):
    """Upstream's GEMV shape: threads (block_n, reduce_threads), each thread a partial dot
    product over its K slice, TVM's allreduce over threadIdx.y."""
    ident = 0.0 if combine == "sum" else -3.0e38

    @T.prim_func
    def gemv(A: T.Tensor((K,), "float32"), B: T.Tensor((N, K), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(N // block_n, threads=(block_n, reduce_threads)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.thread_binding(0, reduce_threads, thread="threadIdx.y")
            acc = T.alloc_local((1,), "float32")
            out = T.alloc_local((1,), "float32")
            T.clear(acc)
            for k in T.serial(K // reduce_threads):
                if combine == "sum":
                    acc[0] += A[tk * (K // reduce_threads) + k] * B[bn * block_n + tn, tk * (K // reduce_threads) + k]
                else:
                    acc[0] = T.max(acc[0], A[tk * (K // reduce_threads) + k])
            with T.attr(T.comm_reducer((lambda x, y: x + y) if combine == "sum" else (lambda x, y: T.max(x, y)),
                                       [T.cast(ident, "float32")]),
                        "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, out[0], tk, dtype="handle"))
            C[bn * block_n + tn] = out[0]

    return gemv


@pytest.mark.parametrize("combine", ["sum", "max"])
def test_tvm_allreduce_over_a_thread_index(combine):
    """T.attr(T.comm_reducer(...), "reduce_scope", ...) + T.tvm_thread_allreduce (upstream's
    GEMV and dequantization kernels): every thread gets its group's combined value."""
    rng = np.random.default_rng(4)
    N, K = 64, 256
    a, b = rng.standard_normal(K).astype(np.float32), rng.standard_normal((N, K)).astype(np.float32)
    c = np.full(N, np.nan, np.float32)
    tilelang.compile(_allreduce_gemv(N, K, 8, 16, combine))(a, b, c)
    ref = b.astype(np.float64) @ a.astype(np.float64) if combine == "sum" else np.full(N, a.max())
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4)
    src = tilelang.compile(_allreduce_gemv(N, K, 8, 16, combine), target="cuda -arch=sm_90a").get_kernel_source()
    assert "__syncthreads()" in src  # the workspace's writes are ordered before the folds


def test_tvm_allreduce_misuse_is_a_clear_error():
    def prog(call):
        @T.prim_func
        def red(A: T.Tensor((32,), "float32"), B: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=32):
                tx = T.get_thread_binding(0)
                acc = T.alloc_local((1,), "float32")
                out = T.alloc_local((1,), "float32")
                acc[0] = A[tx]
                call(acc, out, tx)
                B[0] = out[0]
        return red

    with pytest.raises(TileLangCompileError, match="must be inside `with T.attr"):
        prog(lambda acc, out, tx: T.tvm_thread_allreduce(T.uint32(1), acc[0], True, out[0], tx))

    def outside_index(acc, out, tx):
        with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, "float32")]), "reduce_scope", 0):
            T.tvm_thread_allreduce(T.uint32(1), acc[0], True, out[0], tx + 1)
    with pytest.raises(TileLangCompileError, match="the reduced index must be a thread index"):
        prog(outside_index)


def test_other_tvm_attrs_are_clear_errors():
    with pytest.raises(TileLangCompileError, match="'kWarpSpecializationScope'.*not supported"):
        @T.prim_func
        def ws(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                with T.attr([128, 128], "kWarpSpecializationScope", 0):
                    A[0] = 1.0


def test_a_handle_value_outside_reduce_scope_is_a_clear_error():
    with pytest.raises(TileLangCompileError, match="opaque pointer, only accepted as the value of T.attr"):
        @T.prim_func
        def f(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                A[0] = T.reinterpret(T.uint64(0), dtype="handle")


def test_run_once_runs_the_kernel_on_profiler_inputs():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                B[i] = A[i] * 2.0

    kernel = tilelang.compile(main, out_idx=[1], target="cpu")
    prof = kernel.get_profiler()

    def host(x):  # under the CUDA redirection of the suite the profiler's inputs are torch tensors
        return x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)

    out = prof.run_once()
    np.testing.assert_allclose(host(out), host(prof.inputs()[0]) * 2.0)
    np.testing.assert_allclose(host(prof.run_once(lambda a: a + 1.0)), host(prof.inputs()[0]) + 1.0)
    assert tuple(kernel.run_once().shape) == (64,)


@pytest.mark.cpu_target  # (the CUDA run compiles it for the GPU, where the flags are the compiler's own)
def test_cuda_compile_flags_on_the_cpu_target_are_translated_or_left_out(rng):
    """A program written for the GPU (T.annotate_compile_flags(["--use_fast_math"])) runs on
    the CPU target: fast math becomes flags that keep IEEE subnormals (not -ffast-math, whose
    library would set flush-to-zero for the whole process), CUDA-only flags are left out."""

    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        T.annotate_compile_flags(["--use_fast_math", "-lineinfo", "-DTL_SOMETHING=1"])
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                B[i] = A[i] * 2.0

    k = tilelang.compile(main, target="cpu")
    remarks = "\n".join(k.get_remarks())
    assert "compile flag --use_fast_math: -fno-math-errno -freciprocal-math -ffp-contract=fast on the CPU target" \
        in remarks, remarks
    # the process keeps IEEE subnormals after loading the library
    tiny = np.array([1e-40], np.float32)
    assert (tiny * np.float32(1.0))[0] != 0.0
    assert "compile flag -lineinfo: a CUDA compiler flag, not used on the CPU target" in remarks, remarks
    a = rng.standard_normal(64).astype(np.float32)
    b = np.zeros(64, np.float32)
    k(a, b)
    np.testing.assert_allclose(b, a * 2)


def _scale_kernel(factor, n=64):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(n):
                B[i] = A[i] * factor

    return main


def test_par_compile_of_functions_and_of_jit_configurations(rng):
    """tilelang.par_compile(funcs) and jit_kernel.par_compile(configs) (upstream's names):
    every kernel in order, the JIT object's kept for later calls; with ignore_error a function
    that does not compile gives None and a warning."""
    kernels = tilelang.par_compile([_scale_kernel(f) for f in (1.0, 2.0, 3.0)], target="cpu", num_workers=2)
    a = rng.standard_normal(64).astype(np.float32)
    for f, k in zip((1.0, 2.0, 3.0), kernels):
        b = np.zeros(64, np.float32)
        k(a, b)
        np.testing.assert_allclose(b, a * f)

    @tilelang.jit(target="cpu")
    def scaled(factor):
        return _scale_kernel(factor)

    got = scaled.par_compile([{"factor": 2.0}, (4.0,)])
    assert got[0] is scaled.compile(factor=2.0) and got[1] is scaled.compile(4.0)

    with pytest.warns(UserWarning, match="function 1 did not compile"):
        out = tilelang.par_compile([_scale_kernel(1.0), "not a function"], target="cpu", ignore_error=True)
    assert out[0] is not None and out[1] is None
    with pytest.raises(Exception):
        tilelang.par_compile(["not a function"], target="cpu")


def test_profiler_sizes_dynamic_inputs_from_constraints_or_takes_given_ones():
    """Upstream's do_bench(dynamic_symbolic_constraints={"m": 96}) and
    do_bench(input_tensors=[...]) for a kernel with a dynamic dimension."""
    m = T.dynamic("m")

    @T.prim_func
    def double(A: T.Tensor((m, 16), "float32"), B: T.Tensor((m, 16), "float32")):
        with T.Kernel(T.ceildiv(m, 32), threads=32) as bx:
            for i, j in T.Parallel(32, 16):
                B[bx * 32 + i, j] = A[bx * 32 + i, j] * 2.0

    kernel = tilelang.compile(double, out_idx=[-1], target="cpu")
    prof = kernel.get_profiler()
    assert prof.do_bench(dynamic_symbolic_constraints={"m": 96}, warmup=1, rep=2) > 0
    a = np.ones((40, 16), np.float32)
    assert prof.do_bench(input_tensors=[a], warmup=1, rep=2) > 0
    with pytest.raises(ValueError, match="no size for 'm'"):
        prof.do_bench(dynamic_symbolic_constraints={"n": 96})
    with pytest.raises(TypeError, match="dynamic_symbolic_constraints"):
        prof.do_bench()
