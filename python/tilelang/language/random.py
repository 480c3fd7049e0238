"""Random numbers in kernels (upstream's names): T.rng_init(seed, seq, off) starts a
per-thread generator, T.rng_rand() draws a uint32, T.rng_rand_float(bit=32|64,
dist="uniform"|"normal") a float (uniform in (0, 1], as curand's; normal: standard normal).

The generator is Philox-4x32-10 (counter-based: key = seed, counter = (offset, seq)) in the
device library of both targets (templates/tl/philox.h), so a kernel draws the same numbers on
the CPU as on CUDA. The `generator` names upstream accepts (curand's state types) are
accepted and all mean this generator: the streams differ from curand's."""
from __future__ import annotations

from .. import _tl
from . import builder as _b
from .values import PrimExpr, as_expr, cast

_GENERATORS = ("curandStatePhilox4_32_10_t", "curandStateMRG32k3a_t", "curandStateXORWOW_t")
_STATE_WORDS = 12  # key (2), counter (4), the current block of outputs (4), the next output's index


def _state(what):
    b = _b.current()
    state = getattr(b, "rng_state", None)
    if state is None:
        raise _b._UserError(f"{what} draws from the generator T.rng_init starts: call T.rng_init(seed, ...) first")
    return _tl.call("handle", "address_of", [state[0].load().node])


def rng_init(seed, seq=None, off=0, generator="curandStatePhilox4_32_10_t"):
    """Starts this thread's generator: `seed` picks the stream family, `seq` the thread's
    stream (default: the thread's number in the grid), `off` skips that many outputs."""
    from . import _alloc, get_thread_binding

    _b.require_kernel("T.rng_init")
    if generator not in _GENERATORS:
        raise _b._UserError(f"T.rng_init: generator must be one of {', '.join(_GENERATORS)}, got {generator!r}")
    b = _b.current()
    if seq is None:
        launch = getattr(b, "launch", None)
        if launch is None:
            raise _b._UserError("T.rng_init: give seq (no enclosing T.Kernel to number the threads by)")
        vars_, grid, threads = launch
        block = PrimExpr(vars_[0])
        stride = PrimExpr(grid[0])
        for v, g in zip(vars_[1:], grid[1:]):
            block = block + PrimExpr(v) * stride
            stride = stride * PrimExpr(g)
        per_block = 1
        for t in threads:
            per_block *= int(t)
        seq = cast(block, "uint64") * per_block + cast(get_thread_binding(), "uint64")
    state = _alloc((_STATE_WORDS,), "uint32", "local")
    b.rng_state = state
    args = [_tl.call("handle", "address_of", [state[0].load().node])] + \
        [cast(as_expr(v), "uint64").node for v in (seed, seq, off)]
    _b.emit(_tl.evaluate(_tl.call("void", "rng_init", args), _b.current_span()))


def rng_rand():
    """The next 32 random bits of this thread's generator (uint32)."""
    return PrimExpr(_tl.call("uint32", "rng_rand", [_state("T.rng_rand")]))


def rng_rand_float(bit=32, dist="uniform"):
    """The next random float: uniform in (0, 1], or standard normal (Box-Muller)."""
    if bit not in (32, 64):
        raise _b._UserError(f"T.rng_rand_float: bit must be 32 or 64, got {bit!r}")
    if dist not in ("uniform", "normal"):
        raise _b._UserError(f"T.rng_rand_float: dist must be 'uniform' or 'normal', got {dist!r}")
    name = ("rng_uniform" if dist == "uniform" else "rng_normal") + ("_double" if bit == 64 else "")
    return PrimExpr(_tl.call(f"float{bit}", name, [_state("T.rng_rand_float")]))
