"""Random, valid tile programs for differential testing.

Every program is built from one seed (``random.Random(seed)``). Each random choice is
turned, at the same moment, into TileLang source text and into a float64 numpy model of
what that text computes, so the reference never re-reads the source. A program is one
``with T.Kernel(...)`` block plus the parameters it uses; several programs can share one
``@T.prim_func`` (one compile), or be printed alone as a paste-able regression test.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

NPD = {
    "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
    "int8": np.dtype(np.int8), "int32": np.dtype(np.int32), "int64": np.dtype(np.int64),
}
# relative tolerance (of the reference's largest magnitude) a result rounded to each type gets
TOL = {"float16": 1.5e-2, "bfloat16": 6e-2, "float32": 2e-4, "float64": 1e-9,
       "int8": 0.0, "int32": 0.0, "int64": 0.0}
FLOATS = ("float16", "bfloat16", "float32", "float64")
THREADS = (1, 2, 3, 7, 32, 33, 48, 64, 96, 100, 128, 160, 256)


def rnd(x, dt):
    """x (float64) stored into a dt: rounded (floats) or truncated toward zero (ints)."""
    x = np.asarray(x, dtype=np.float64)
    if dt.startswith("int"):
        return np.trunc(x).astype(NPD[dt]).astype(np.float64)
    return x.astype(NPD[dt]).astype(np.float64)


def is_int(dt):
    return dt.startswith("int")


@dataclass
class Param:
    name: str
    shape: tuple          # ints or dimension names
    dtype: str
    role: str             # "in", "out" (poisoned before the call), "inout" (random, updated)
    init: str = "normal"  # normal | small_int | positive | unit | index:<rows>
    scalar: bool = False  # a run-time scalar parameter (values per run in Program.scalar_vals)


@dataclass
class Program:
    seed: int
    prefix: str
    kind: str = ""
    params: list = field(default_factory=list)
    dyn: dict = field(default_factory=dict)          # dynamic dimension name -> value per run
    scalar_vals: dict = field(default_factory=dict)  # scalar name -> value per run
    body: list = field(default_factory=list)         # source lines of the kernel block
    ref: object = None                               # ref(arrays, values) -> {out name: expected}
    tol: float = 0.0
    runs: int = 1
    notes: list = field(default_factory=list)        # one-line description of the choices
    expect_reject: bool = False                      # the front end must refuse it, clearly

    def touch(self, *dts, factor=1.0):
        for d in dts:
            self.tol = max(self.tol, TOL[d] * factor)

    def shape_src(self, shape):
        return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"

    def signature(self):
        out = []
        for p in self.params:
            if p.scalar:
                out.append(f"{p.name}: T.{p.dtype}")
            else:
                out.append(f'{p.name}: T.Tensor({self.shape_src(p.shape)}, "{p.dtype}")')
        return out

    def source(self, func_name="main"):
        """The program alone, as a module a user can paste."""
        return module_source([self], func_name)


def module_source(progs, func_name="main"):
    lines = ["import tilelang", "import tilelang.language as T", ""]
    for p in progs:
        for d in p.dyn:
            lines.append(f'{d} = T.dynamic("{d}")')
    lines += ["", "", "@T.prim_func"]
    sig = [s for p in progs for s in p.signature()]
    lines.append(f"def {func_name}(")
    lines += [f"        {s}," for s in sig]
    lines.append("):")
    for p in progs:
        lines.append(f"    # program seed={p.seed} kind={p.kind}: {'; '.join(p.notes)}")
        lines += ["    " + ln for ln in p.body]
    return "\n".join(lines) + "\n"


class Body:
    """Indented source lines."""

    def __init__(self):
        self.lines, self.ind = [], 0

    def __call__(self, s):
        self.lines.append("    " * self.ind + s)

    def indent(self):
        b = self

        class _C:
            def __enter__(self):
                b.ind += 1

            def __exit__(self, *a):
                b.ind -= 1
        return _C()


def ceildiv(a, b):
    return -(-a // b)


# --------------------------------------------------------------------------- expressions
# An expression is (src, fn) where fn(env) gives its float64 value (numpy arrays broadcast
# over the tile: env holds the tile arrays and the index grids).

class ExprGen:
    def __init__(self, r: random.Random, prog: Program, leaves, int_leaves, cdt="float32"):
        self.r, self.prog, self.leaves, self.int_leaves, self.cdt = r, prog, leaves, int_leaves, cdt
        self.in_cond = 0  # inside a comparison: no rounding casts (a near-tie would flip)

    def int_expr(self, depth=2):
        r = self.r
        if depth <= 0 or r.random() < 0.3:
            if r.random() < 0.25:
                c = r.randint(-5, 9)
                return str(c), (lambda e, c=c: np.int64(c))
            return r.choice(self.int_leaves)
        a = self.int_expr(depth - 1)
        op = r.choice(["+", "-", "*", "//", "%", "min", "max"])
        if op in ("//", "%"):
            c = r.randint(1, 7)
            f = np.floor_divide if op == "//" else np.mod
            return f"({a[0]} {op} {c})", (lambda e, a=a, c=c, f=f: f(a[1](e), c))
        if op in ("min", "max"):
            b = self.int_expr(depth - 1)
            f = np.minimum if op == "min" else np.maximum
            return f"T.{op}({a[0]}, {b[0]})", (lambda e, a=a, b=b, f=f: f(a[1](e), b[1](e)))
        b = self.int_expr(depth - 1)
        f = {"+": np.add, "-": np.subtract, "*": np.multiply}[op]
        return f"({a[0]} {op} {b[0]})", (lambda e, a=a, b=b, f=f: f(a[1](e), b[1](e)))

    def cond(self, depth=1):
        r = self.r
        k = r.random()
        if k < 0.4 and self.cdt in ("float32", "float64"):
            self.in_cond += 1
            a, b = self.fexpr(depth), self.fexpr(depth)
            self.in_cond -= 1
        elif k < 0.8:
            a, b = self.int_expr(2), self.int_expr(1)
        else:
            c1, c2 = self.cond(0), self.cond(0)
            if r.random() < 0.5:
                return f"({c1[0]} and {c2[0]})", (lambda e, c1=c1, c2=c2: np.logical_and(c1[1](e), c2[1](e)))
            return f"({c1[0]} or {c2[0]})", (lambda e, c1=c1, c2=c2: np.logical_or(c1[1](e), c2[1](e)))
        op = r.choice(["<", "<=", ">", ">=", "==", "!="])
        f = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
             "==": np.equal, "!=": np.not_equal}[op]
        return f"({a[0]} {op} {b[0]})", (lambda e, a=a, b=b, f=f: f(a[1](e), b[1](e)))

    def fexpr(self, depth=3):
        """A float expression of type self.cdt with values of moderate size."""
        r, cdt = self.r, self.cdt
        if depth <= 0 or r.random() < 0.2:
            k = r.random()
            if k < 0.65:
                src, fn, dt = r.choice(self.leaves)
                self.prog.touch(dt)
                if dt == cdt:
                    return src, fn
                return f'T.cast({src}, "{cdt}")', (lambda e, fn=fn: rnd(fn(e), cdt))
            if k < 0.85:
                c = r.choice([0.5, 1.5, -2.0, 0.25, 3.0, -0.75])
                if cdt == "float64":  # a bare Python float is a float32 constant (in T.sqrt(1.5), say)
                    return f'T.cast({c!r}, "float64")', (lambda e, c=c: np.float64(c))
                return repr(c), (lambda e, c=c: np.float64(c))
            ie = self.int_expr(2)
            return (f'T.cast({ie[0]}, "{cdt}")',
                    (lambda e, ie=ie: np.clip(np.asarray(ie[1](e)), -1e6, 1e6).astype(np.float64)))
        k = r.randrange(11)
        a = self.fexpr(depth - 1)
        if k <= 3:
            b = self.fexpr(depth - 1)
            op = "+-*"[k % 3]
            f = {"+": np.add, "-": np.subtract, "*": np.multiply}[op]
            if op == "*":  # keep magnitudes moderate
                return f"({a[0]} * {b[0]})", (lambda e, a=a, b=b: a[1](e) * b[1](e))
            return f"({a[0]} {op} {b[0]})", (lambda e, a=a, b=b, f=f: f(a[1](e), b[1](e)))
        if k == 4:
            b = self.fexpr(depth - 1)
            op = r.choice(["max", "min"])
            f = np.maximum if op == "max" else np.minimum
            return f"T.{op}({a[0]}, {b[0]})", (lambda e, a=a, b=b, f=f: f(a[1](e), b[1](e)))
        if k == 5:
            return f"T.abs({a[0]})", (lambda e, a=a: np.abs(a[1](e)))
        if k == 6:
            c = self.cond(1)
            b = self.fexpr(depth - 1)
            return (f"T.if_then_else({c[0]}, {a[0]}, {b[0]})",
                    (lambda e, a=a, b=b, c=c: np.where(c[1](e), a[1](e), b[1](e))))
        if k == 7:
            fn_name = r.choice(["tanh", "sigmoid", "sqrt_abs", "exp_clamped", "floor_half"])
            if fn_name == "tanh":
                return f"T.tanh({a[0]})", (lambda e, a=a: np.tanh(a[1](e)))
            if fn_name == "sigmoid":
                return f"T.sigmoid({a[0]})", (lambda e, a=a: 1 / (1 + np.exp(-a[1](e))))
            if fn_name == "sqrt_abs":
                return f"T.sqrt(T.abs({a[0]}) + 1.0)", (lambda e, a=a: np.sqrt(np.abs(a[1](e)) + 1))
            if fn_name == "exp_clamped":
                return (f"T.exp(T.min({a[0]}, 2.0))", (lambda e, a=a: np.exp(np.minimum(a[1](e), 2.0))))
            # floor of an exact half-integer grid value: floor(2*round-ish) avoided; use a cast int
            ie = self.int_expr(1)
            return (f'T.cast(T.floor(T.cast({ie[0]}, "{cdt}") * 0.5), "{cdt}")',
                    (lambda e, ie=ie: np.floor(np.asarray(ie[1](e)).astype(np.float64) * 0.5)))
        if k == 8 and cdt not in ("float16", "bfloat16") and not self.in_cond:
            mid = r.choice(["float16", "bfloat16", "int32"]) if cdt != "float64" else "float32"
            self.prog.touch(mid if not is_int(mid) else cdt)
            if is_int(mid):  # truncation toward zero: only on values far from integers is it stable
                ie = self.int_expr(2)
                return (f'T.cast(T.cast(T.cast({ie[0]}, "{cdt}"), "{mid}"), "{cdt}")',
                        (lambda e, ie=ie: np.asarray(ie[1](e)).astype(np.float64)))
            return (f'T.cast(T.cast({a[0]}, "{mid}"), "{cdt}")', (lambda e, a=a, mid=mid: rnd(a[1](e), mid)))
        if k == 9:
            return f"({a[0]} / 4.0)", (lambda e, a=a: a[1](e) / 4.0)
        return f"(-{a[0]})", (lambda e, a=a: -a[1](e))


# --------------------------------------------------------------------------- helpers

def pick_dtype(r, options):
    return r.choice(options)


def tile_pad(X, r0, c0, bm, bn):
    """The tile X[r0:r0+bm, c0:c0+bn], zero past the edges (T.copy's clipping)."""
    t = np.zeros((bm, bn))
    if r0 >= X.shape[0] or c0 >= X.shape[1] or r0 + bm <= 0 or c0 + bn <= 0:
        return t
    rs, cs = max(r0, 0), max(c0, 0)
    re, ce = min(r0 + bm, X.shape[0]), min(c0 + bn, X.shape[1])
    t[rs - r0:re - r0, cs - c0:ce - c0] = X[rs:re, cs:ce]
    return t


def tile_store(O, t, r0, c0):
    bm, bn = t.shape
    re, ce = min(r0 + bm, O.shape[0]), min(c0 + bn, O.shape[1])
    if re > r0 and ce > c0:
        O[r0:re, c0:ce] = t[:re - r0, :ce - c0]


def dims_for(r, prog, names_sizes, dyn_prob=0.35):
    """Static or dynamic dimensions. Returns name -> (src, value per run)."""
    out = {}
    dynamic_any = r.random() < dyn_prob
    for nm, lo, hi in names_sizes:
        if dynamic_any and r.random() < 0.6:
            dname = f"{prog.prefix}{nm}"
            vals = [r.randint(lo, hi) for _ in range(3)]
            vals[r.randrange(3)] = r.choice([lo, 1, hi])
            prog.dyn[dname] = vals
            out[nm] = (dname, vals)
        else:
            v = r.randint(lo, hi)
            out[nm] = (str(v), None)
    prog.runs = 3 if prog.dyn else 1
    return out


def dval(dim, run):
    src, vals = dim
    return int(src) if vals is None else vals[run]


# --------------------------------------------------------------------------- program kinds

def gen_copy(r, prog):
    P = prog.prefix
    d = dims_for(r, prog, [("M", 1, 40), ("N", 1, 40)])
    bm, bn = r.choice([1, 3, 4, 5, 8, 16, 17, 32]), r.choice([1, 2, 4, 7, 8, 16, 24, 33])
    src_dt = r.choice(FLOATS + ("int32", "int8"))
    dst_dt = src_dt if r.random() < 0.5 else r.choice(FLOATS if not is_int(src_dt) else ("int32", "float32"))
    hops = [r.choice(["shared", "fragment"]) for _ in range(r.randint(1, 3))]
    hop_dts = [src_dt if r.random() < 0.7 or is_int(src_dt) else r.choice(FLOATS) for _ in hops]
    off_r, off_c = r.choice([0, 0, 0, 1, -1, 2]), r.choice([0, 0, 0, 1, 3, -2])
    style = r.choice(["corner", "slice"])
    threads = r.choice(THREADS)
    # the first hop may be a window [wr:wr+bm, wc:wc+bn] of a larger tile
    window = (r.randint(0, 2), r.randint(0, 3), r.randint(0, 2), r.randint(0, 2)) if r.random() < 0.3 else None
    # a sub-region of the last hop may be overwritten with T.fill
    fill = None
    if r.random() < 0.3:
        r0, c0 = r.randrange(bm), r.randrange(bn)
        fill = (r0, r.randint(r0 + 1, bm), c0, r.randint(c0 + 1, bn), r.choice([0, 1, -2, 3]))
    M, N = d["M"][0], d["N"][0]
    X = Param(f"{P}X", (M, N), src_dt, "in", "small_int" if is_int(src_dt) else "normal")
    O = Param(f"{P}O", (M, N), dst_dt, "out")
    prog.params += [X, O]
    prog.touch(src_dt, dst_dt, *hop_dts)
    prog.notes.append(f"tile {bm}x{bn} hops={hops} dts={hop_dts} off=({off_r},{off_c}) window={window} "
                      f"fill={fill} threads={threads}")
    b = Body()
    b(f"with T.Kernel(T.ceildiv({N}, {bn}), T.ceildiv({M}, {bm}), threads={threads}) as (bx, by):")
    with b.indent():
        for h, (scope, dt) in enumerate(zip(hops, hop_dts)):
            shape = (bm, bn) if h or window is None else (bm + window[0] + window[2], bn + window[1] + window[3])
            b(f'{"s" if scope == "shared" else "f"}{h} = T.alloc_{scope}({shape}, "{dt}")')
        names = [f'{"s" if sc == "shared" else "f"}{h}' for h, sc in enumerate(hops)]
        if window is not None:
            wr, wc = window[0], window[1]
            names[0] = f"{names[0]}[{wr}:{wr + bm}, {wc}:{wc + bn}]"
        rs, cs = f"by * {bm} + {off_r}" if off_r else f"by * {bm}", f"bx * {bn} + {off_c}" if off_c else f"bx * {bn}"
        if style == "corner":
            b(f"T.copy({X.name}[{rs}, {cs}], {names[0]})")
        else:
            b(f"T.copy({X.name}[{rs}:{rs} + {bm}, {cs}:{cs} + {bn}], {names[0]})")
        for a, c in zip(names, names[1:]):
            b(f"T.copy({a}, {c})")
        if fill is not None:
            last = names[-1].split("[")[0]
            fo = (window[0], window[1]) if len(names) == 1 and window is not None else (0, 0)
            b(f"T.fill({last}[{fill[0] + fo[0]}:{fill[1] + fo[0]}, {fill[2] + fo[1]}:{fill[3] + fo[1]}], {fill[4]})")
        if style == "corner" or r.random() < 0.5:
            b(f"T.copy({names[-1]}, {O.name}[by * {bm}, bx * {bn}])")
        else:
            b(f"T.copy({names[-1]}, {O.name}[by * {bm}:(by + 1) * {bm}, bx * {bn}:(bx + 1) * {bn}])")
    prog.body = b.lines

    def ref(arr, run):
        m, n = dval(d["M"], run), dval(d["N"], run)
        x = arr[X.name]
        o = np.full((m, n), np.nan)
        for by in range(ceildiv(m, bm)):
            for bx in range(ceildiv(n, bn)):
                t = tile_pad(x, by * bm + off_r, bx * bn + off_c, bm, bn)
                for dt in hop_dts:
                    t = rnd(t, dt)
                if fill is not None:
                    t = t.copy()
                    t[fill[0]:fill[1], fill[2]:fill[3]] = fill[4]
                tile_store(o, rnd(t, dst_dt), by * bm, bx * bn)
        return {O.name: o}
    prog.ref = ref


def gen_elementwise(r, prog):
    P = prog.prefix
    d = dims_for(r, prog, [("M", 1, 36), ("N", 1, 36)])
    bm, bn = r.choice([1, 2, 4, 5, 8, 16]), r.choice([1, 3, 4, 8, 12, 16, 32])
    dx, dy = r.choice(FLOATS), r.choice(FLOATS + ("int32",))
    do = r.choice(FLOATS) if r.random() < 0.3 else "float32"
    cdt = r.choice(["float32", "float32", "float64", "float16"])
    threads = r.choice(THREADS)
    mode = r.choice(["tile", "tile", "global"])
    M, N = d["M"][0], d["N"][0]
    X = Param(f"{P}X", (M, N), dx, "in")
    Y = Param(f"{P}Y", (M, N), dy, "in", "small_int" if is_int(dy) else "normal")
    O = Param(f"{P}O", (M, N), do, "out")
    prog.params += [X, Y, O]
    prog.touch(do, cdt)
    sx, sy = r.choice(["fragment", "shared"]), r.choice(["fragment", "shared"])
    # leaves: tile elements, possibly at permuted positions inside the tile
    perm = r.choice(["", "flip_j", "roll_i", "flat", "flat_roll", "flat_t"]) if mode == "tile" else ""
    sft = r.randint(1, bm * bn + 2)
    xi = {"": "x[i, j]", "flip_j": f"x[i, {bn - 1} - j]", "roll_i": f"x[(i + 1) % {bm}, j]",
          "flat": f"x[(i * {bn} + j) // {bn}, (i * {bn} + j) % {bn}]",
          "flat_roll": f"x[(i * {bn} + j + {sft}) % {bm * bn} // {bn}, (i * {bn} + j + {sft}) % {bn}]",
          "flat_t": f"x[(j * {bm} + i) % {bm}, (j * {bm} + i) // {bm}]"}[perm]
    gx = f"{X.name}[by * {bm} + i, bx * {bn} + j]"
    gy = f"{Y.name}[by * {bm} + i, bx * {bn} + j]"

    def permute(t):
        if perm == "flip_j":
            return t[:, ::-1]
        if perm == "roll_i":
            return np.roll(t, -1, axis=0)
        if perm == "flat_roll":
            return np.roll(t.reshape(-1), -sft).reshape(t.shape)
        return t
    leaves = [(xi if mode == "tile" else gx, lambda e: e["x"], dx),
              ("y[i, j]" if mode == "tile" else gy, lambda e: e["y"], dy)]
    ints = [("i", lambda e: e["i"]), ("j", lambda e: e["j"]), ("bx", lambda e: e["bx"]),
            ("by", lambda e: e["by"]), (f"(by * {bm} + i)", lambda e: e["by"] * bm + e["i"])]
    g = ExprGen(r, prog, leaves, ints, cdt)
    stmts = r.choice(["assign", "assign", "ifelse", "two"])
    # the loop nest: T.Parallel over the whole tile, or serial x vectorized/unrolled loops
    nest = r.choice(["parallel", "parallel", "parallel", "serial_vec", "serial_unroll"]) if mode == "tile" else "parallel"
    e1 = g.fexpr(r.randint(1, 4))
    e2 = g.fexpr(r.randint(1, 3))
    c = g.cond(1)
    prog.notes.append(f"tile {bm}x{bn} mode={mode} x={dx}/{sx} y={dy}/{sy} out={do} compute={cdt} "
                      f"stmts={stmts} perm={perm} nest={nest} threads={threads}")

    def store(e):
        return e if do == cdt else f'T.cast({e}, "{do}")'
    b = Body()
    b(f"with T.Kernel(T.ceildiv({N}, {bn}), T.ceildiv({M}, {bm}), threads={threads}) as (bx, by):")
    with b.indent():
        if mode == "tile":
            b(f'x = T.alloc_{sx}(({bm}, {bn}), "{dx}")')
            b(f'y = T.alloc_{sy}(({bm}, {bn}), "{dy}")')
            b(f'o = T.alloc_fragment(({bm}, {bn}), "{do}")')
            b(f"T.copy({X.name}[by * {bm}, bx * {bn}], x)")
            b(f"T.copy({Y.name}[by * {bm}, bx * {bn}], y)")
            tgt = "o[i, j]"
        else:
            tgt = f"{O.name}[by * {bm} + i, bx * {bn} + j]"
        if nest == "parallel":
            b(f"for i, j in T.Parallel({bm}, {bn}):")
        else:
            b(f"for i in T.serial({bm}):")
            b.ind += 1
            b(f"for j in T.{'vectorized' if nest == 'serial_vec' else 'unroll'}({bn}):")
        with b.indent():
            if mode == "global":
                b(f"if by * {bm} + i < {M} and bx * {bn} + j < {N}:")
                b.ind += 1
            if stmts in ("assign", "two"):
                b(f"{tgt} = {store(e1[0])}")
            else:
                b(f"if {c[0]}:")
                with b.indent():
                    b(f"{tgt} = {store(e1[0])}")
                b("else:")
                with b.indent():
                    b(f"{tgt} = {store(e2[0])}")
            if mode == "global":
                b.ind -= 1
        if nest != "parallel":
            b.ind -= 1
        if stmts == "two":  # a second element-wise pass reading the first one's result
            src2 = "o[i, j]" if mode == "tile" else None
            if mode == "tile":
                b(f"for i, j in T.Parallel({bm}, {bn}):")
                with b.indent():
                    b(f'o[i, j] = {store(f"T.cast(o[i, j], {chr(34)}{cdt}{chr(34)}) * 2.0 + {e2[0]}")}')
        if mode == "tile":
            b(f"T.copy(o, {O.name}[by * {bm}, bx * {bn}])")
    prog.body = b.lines

    def ref(arr, run):
        m, n = dval(d["M"], run), dval(d["N"], run)
        o = np.full((m, n), np.nan)
        ii, jj = np.arange(bm)[:, None], np.arange(bn)[None, :]
        for by in range(ceildiv(m, bm)):
            for bx in range(ceildiv(n, bn)):
                x = tile_pad(arr[X.name], by * bm, bx * bn, bm, bn)
                y = tile_pad(arr[Y.name], by * bm, bx * bn, bm, bn)
                env = {"x": permute(x), "y": y, "i": ii + 0 * jj, "j": jj + 0 * ii, "bx": bx, "by": by}
                with np.errstate(all="ignore"):
                    if stmts == "ifelse":
                        # (both branches and the condition may be scalars: broadcast to the tile)
                        v = np.where(c[1](env), rnd(e1[1](env), cdt), rnd(e2[1](env), cdt)) + 0 * ii * jj
                    else:
                        v = rnd(e1[1](env), cdt) + 0 * ii * jj
                    v = rnd(v, do)
                    if stmts == "two" and mode == "tile":
                        v = rnd(rnd(v, cdt) * 2.0 + rnd(e2[1](env), cdt), do)
                tile_store(o, v, by * bm, bx * bn)
        return {O.name: o}
    prog.ref = ref


def gen_wide_elementwise(r, prog):
    """Element-wise T.Parallel nests over global tensors wide enough for groups of 16 bytes per
    thread (tl.vectorize_parallel_elementwise on CUDA): static shapes whose rows hold whole
    groups, mixed element types, a per-row scale read without the inner loop, and sometimes a
    guard on the row only (it stays around the groups)."""
    P = prog.prefix
    bm, bn = r.choice([2, 4, 8, 16]), r.choice([32, 64, 128, 256])
    M, N = bm * r.randint(1, 3), bn * r.randint(1, 2)
    N -= r.choice([0, 0, 0, 8, 16, 24]) if N > 32 else 0  # a ragged last column tile: `c < N` guards it
    dx, dy = r.choice(FLOATS), r.choice(FLOATS + ("int32",))
    do = r.choice(FLOATS) if r.random() < 0.5 else "float32"
    cdt = r.choice(["float32", "float32", "float64", "float16"])
    threads = r.choice([32, 64, 128, 256])
    staged = r.random() < 0.3  # into a shared tile, then T.copy to the tensor (no row guard then)
    rows = M if staged else M - min(M - 1, r.choice([0, 0, 1, 3]))  # rows past `rows` left alone
    X = Param(f"{P}X", (M, N), dx, "in")
    Y = Param(f"{P}Y", (M, N), dy, "in", "small_int" if is_int(dy) else "normal")
    S = Param(f"{P}S", (M,), "float32", "in")
    O = Param(f"{P}O", (M, N), do, "out")
    prog.params += [X, Y, S, O]
    prog.touch(do, cdt)
    row = f"by * {bm} + i"
    leaves = [(f"{X.name}[{row}, bx * {bn} + j]", lambda e: e["x"], dx),
              (f"{Y.name}[{row}, bx * {bn} + j]", lambda e: e["y"], dy),
              (f"{S.name}[{row}]", lambda e: e["s"], "float32")]
    ints = [("i", lambda e: e["i"]), ("j", lambda e: e["j"]), (f"({row})", lambda e: e["by"] * bm + e["i"])]
    g = ExprGen(r, prog, leaves, ints, cdt)
    e1 = g.fexpr(r.randint(1, 4))
    prog.notes.append(f"wide tile {bm}x{bn} of {M}x{N} rows<{rows} x={dx} y={dy} out={do} compute={cdt} "
                      f"threads={threads} staged={staged}")
    value = e1[0] if do == cdt else f'T.cast({e1[0]}, "{do}")'
    b = Body()
    b(f"with T.Kernel({ceildiv(N, bn)}, {M // bm}, threads={threads}) as (bx, by):")
    with b.indent():
        if staged:
            b(f'S_t = T.alloc_shared(({bm}, {bn}), "{do}")')
        b(f"for i, j in T.Parallel({bm}, {bn}):")
        with b.indent():
            conds = ([f"{row} < {rows}"] if rows < M else []) + ([f"bx * {bn} + j < {N}"] if N % bn else [])
            if conds:
                b(f"if {' and '.join(conds)}:")
                b.ind += 1
            b(f"{'S_t[i, j]' if staged else f'{O.name}[{row}, bx * {bn} + j]'} = {value}")
            if conds:
                b.ind -= 1
        if staged:
            b(f"T.copy(S_t, {O.name}[by * {bm}, bx * {bn}])")
    prog.body = b.lines

    def ref(arr, run):
        o = np.full((M, N), np.nan)
        ii, jj = np.arange(bm)[:, None], np.arange(bn)[None, :]
        for by in range(M // bm):
            for bx in range(ceildiv(N, bn)):
                x = tile_pad(arr[X.name], by * bm, bx * bn, bm, bn)
                y = tile_pad(arr[Y.name], by * bm, bx * bn, bm, bn)
                s = arr[S.name][by * bm:(by + 1) * bm][:, None] + 0 * jj
                env = {"x": x, "y": y, "s": s, "i": ii + 0 * jj, "j": jj + 0 * ii, "bx": bx, "by": by}
                with np.errstate(all="ignore"):
                    v = rnd(rnd(e1[1](env), cdt) + 0 * ii * jj, do)
                tile_store(o, v, by * bm, bx * bn)
        o[rows:] = np.nan
        return {O.name: o}
    prog.ref = ref


RED = {
    "sum": (lambda t, a: t.sum(axis=a), np.add), "max": (lambda t, a: t.max(axis=a), np.maximum),
    "min": (lambda t, a: t.min(axis=a), np.minimum), "abssum": (lambda t, a: np.abs(t).sum(axis=a), np.add),
    "absmax": (lambda t, a: np.abs(t).max(axis=a), np.maximum),
}


def gen_reduce(r, prog):
    P = prog.prefix
    d = dims_for(r, prog, [("M", 1, 40), ("N", 1, 40)])
    bm, bn = r.choice([1, 2, 3, 4, 8, 16, 5]), r.choice([1, 4, 7, 8, 16, 32, 33])
    kind = r.choice(list(RED))
    dim = r.choice([0, 1])
    dx = r.choice(FLOATS + ("int32",))
    rdt = r.choice(["float32", "float32", "float64", dx if dx != "int32" else "int32"])
    threads = r.choice(THREADS)
    shape = r.choice(["tile", "loop"])
    xscope = r.choice(["fragment", "fragment", "shared"])
    xwin = (r.randint(0, 2), r.randint(0, 3)) if r.random() < 0.25 else None
    init = r.choice(["clear", "fill", "copy"])
    pre = r.random() < 0.4
    post = r.random() < 0.4
    stages = r.randint(0, 4)
    loopkind = r.choice(["serial", "pipelined"])
    M, N = d["M"][0], d["N"][0]
    if shape == "tile" and d["N" if dim == 1 else "M"][1] is not None:
        shape = "loop"  # the per-block output needs the static block count
    X = Param(f"{P}X", (M, N), dx, "in", "small_int" if is_int(dx) else "normal")
    prog.params.append(X)
    prog.touch(dx, rdt, factor=4)
    if is_int(rdt) and pre:
        pre = False
    red_len = bm if dim == 1 else bn
    fval = r.choice([0.0, 1.5, -2.0])
    if shape == "tile":
        R = Param(f"{P}R", (ceildiv(int(N), bn), M) if dim == 1 else (ceildiv(int(M), bm), N), rdt, "out")
    else:
        R = Param(f"{P}R", (M,) if dim == 1 else (N,), rdt, "out")
    prog.params.append(R)
    Init = None
    if init == "copy":
        Init = Param(f"{P}I", R.shape, rdt, "in", "small_int" if is_int(rdt) else "normal")
        prog.params.append(Init)
    prog.notes.append(f"reduce_{kind} dim={dim} tile {bm}x{bn} x={dx} r={rdt} shape={shape} init={init} "
                      f"pre={pre} post={post} loop={loopkind}/{stages} x in {xscope} window={xwin} threads={threads}")
    b = Body()
    if shape == "tile":
        b(f"with T.Kernel(T.ceildiv({N}, {bn}), T.ceildiv({M}, {bm}), threads={threads}) as (bx, by):")
    elif dim == 1:
        b(f"with T.Kernel(T.ceildiv({M}, {bm}), threads={threads}) as by:")
    else:
        b(f"with T.Kernel(T.ceildiv({N}, {bn}), threads={threads}) as bx:")
    rsl = f"by * {bm}:(by + 1) * {bm}" if dim == 1 else f"bx * {bn}:(bx + 1) * {bn}"
    if shape == "tile":
        dst = f"{R.name}[bx, {rsl}]" if dim == 1 else f"{R.name}[by, {rsl}]"
    else:
        dst = f"{R.name}[{rsl}]"
    with b.indent():
        if xwin is None:
            b(f'x = T.alloc_{xscope}(({bm}, {bn}), "{rdt}")')
        else:
            b(f'x = T.alloc_{xscope}(({bm + xwin[0] + 1}, {bn + xwin[1] + 2}), "{rdt}")')
        b(f'r = T.alloc_fragment(({red_len},), "{rdt}")')
        if init == "fill":
            b(f"T.fill(r, {fval})")
        elif init == "copy":
            b(f"T.copy({Init.name}[{rsl}], r)" if shape == "loop" else
              (f"T.copy({Init.name}[bx, {rsl}], r)" if dim == 1 else f"T.copy({Init.name}[by, {rsl}], r)"))
        xs = "x" if xwin is None else f"x[{xwin[0]}:{xwin[0] + bm}, {xwin[1]}:{xwin[1] + bn}]"
        xo = (0, 0) if xwin is None else xwin
        rfn = f"T.reduce_{kind}({xs}, r, dim={dim}{'' if init == 'clear' else ', clear=False'})"

        def body_tile(row0, col0):
            b(f"T.copy({X.name}[{row0}, {col0}], {xs})")
            if pre:
                b(f"for i, j in T.Parallel({bm}, {bn}):")
                with b.indent():
                    b(f"x[i + {xo[0]}, j + {xo[1]}] = x[i + {xo[0]}, j + {xo[1]}] * 0.5 + T.cast(i - j, \"{rdt}\")")
            b(rfn)
        if shape == "tile":
            body_tile(f"by * {bm}", f"bx * {bn}")
        else:
            nk = f"T.ceildiv({N}, {bn})" if dim == 1 else f"T.ceildiv({M}, {bm})"
            if loopkind == "serial":
                b(f"for k in T.serial({nk}):")
            else:
                b(f"for k in T.Pipelined({nk}, num_stages={stages}):")
            with b.indent():
                if dim == 1:
                    body_tile(f"by * {bm}", f"k * {bn}")
                else:
                    body_tile(f"k * {bm}", f"bx * {bn}")
                if init == "clear":
                    # first iteration clears, later ones fold in: emulate by the reference (see below)
                    pass
        if post:
            b(f"for i in T.Parallel({red_len}):")
            with b.indent():
                b(f"r[i] = r[i] * 2 + T.cast(i, \"{rdt}\")")
        b(f"T.copy(r, {dst})")
    prog.body = b.lines
    f_red, f_comb = RED[kind]

    def ref(arr, run):
        m, n = dval(d["M"], run), dval(d["N"], run)
        x = arr[X.name]
        ii = np.arange(bm)[:, None]
        jj = np.arange(bn)[None, :]

        def tile(r0, c0):
            t = rnd(tile_pad(x, r0, c0, bm, bn), rdt)
            if pre:
                t = rnd(t * 0.5 + (ii - jj), rdt)
            return t

        def reduce_into(cur, t):
            v = f_red(t, dim)
            return rnd(v, rdt) if cur is None else rnd(f_comb(cur, v), rdt)

        def finish(v):
            if post:
                v = rnd(v * 2 + np.arange(red_len), rdt)
            return v
        if shape == "tile":
            nby, nbx = ceildiv(m, bm), ceildiv(n, bn)
            out = np.full((nbx, m) if dim == 1 else (nby, n), np.nan)
            for by in range(nby):
                for bx in range(nbx):
                    cur = None
                    if init == "fill":
                        cur = rnd(np.full(red_len, fval), rdt)  # the fill value stored in the tile type
                    elif init == "copy":
                        cur = tile_pad(arr[Init.name], bx if dim == 1 else by, (by * bm if dim == 1 else bx * bn),
                                       1, red_len)[0]
                    v = finish(reduce_into(cur, tile(by * bm, bx * bn)))
                    if dim == 1:
                        tile_store(out, v[None, :], bx, by * bm)
                    else:
                        tile_store(out, v[None, :], by, bx * bn)
            return {R.name: out}
        out = np.full((m,) if dim == 1 else (n,), np.nan)
        nb = ceildiv(m, bm) if dim == 1 else ceildiv(n, bn)
        nk = ceildiv(n, bn) if dim == 1 else ceildiv(m, bm)
        for blk in range(nb):
            cur = None
            if init == "fill":
                cur = rnd(np.full(red_len, fval), rdt)  # the fill value stored in the tile type
            elif init == "copy":
                cur = tile_pad(arr[Init.name][None, :], 0, blk * red_len, 1, red_len)[0]
            for k in range(nk):
                t = tile(blk * bm, k * bn) if dim == 1 else tile(k * bm, blk * bn)
                if init == "clear":
                    cur = reduce_into(None, t)  # clear=True: each iteration starts afresh
                else:
                    cur = reduce_into(cur, t)
            if cur is None:  # no iterations: r was never written; only clear leaves it undefined
                continue
            v = finish(cur)
            tile_store(out[None, :], v[None, :], 0, blk * red_len)
        return {R.name: out}
    prog.ref = ref


def gen_gemm(r, prog, f16_acc=False):
    P = prog.prefix
    d = dims_for(r, prog, [("M", 1, 48), ("N", 1, 48), ("K", 1, 64)])
    dt = r.choice(["float16", "float16", "bfloat16", "float32", "float64", "int8"])
    acc = {"float64": "float64", "int8": "int32"}.get(dt, "float32")
    if f16_acc:  # (the same draws as the default kind, then float16 operands and accumulator)
        dt = acc = "float16"
    out = acc if r.random() < 0.6 or is_int(acc) else r.choice(["float16", "float32", "bfloat16"])
    ta, tb = r.random() < 0.5, r.random() < 0.5
    bm, bn, bk = r.choice([8, 16, 32, 12]), r.choice([8, 16, 32, 24]), r.choice([8, 16, 32, 4])
    stages = r.randint(0, 4)
    loop = r.choice(["pipelined", "pipelined", "serial"])
    a_scope = r.choice(["shared", "shared", "fragment"])
    clear = r.choice(["clear", "accum", "fill"])
    post = r.random() < 0.4
    prescale = r.random() < 0.25
    awin = (r.randint(0, 2), r.randint(0, 3)) if r.random() < 0.2 else None
    bwin = (r.randint(0, 2), r.randint(0, 3)) if r.random() < 0.2 else None
    policy = r.choice([None, None, "Square", "FullRow", "FullCol"])
    threads = r.choice(THREADS)
    if f16_acc and r.random() < 0.8:  # mostly tiles the tensor cores take (warp tiles of 16 x 8, K steps of 16)
        bm, bn, bk = r.choice([16, 32, 64]), r.choice([16, 32, 64]), r.choice([16, 32])
        threads, awin, bwin = r.choice([32, 64, 128]), None, None
    M, N, K = d["M"][0], d["N"][0], d["K"][0]
    A = Param(f"{P}A", (K, M) if ta else (M, K), dt, "in", "small_int" if is_int(dt) else "normal")
    B = Param(f"{P}B", (N, K) if tb else (K, N), dt, "in", "small_int" if is_int(dt) else "normal")
    splits = r.choice([1, 1, 1, 2, 3]) if acc in ("float32", "float64", "int32") else 1
    if splits > 1:
        out = acc
        post = False
        clear = "clear"
    C = Param(f"{P}C", (M, N), out, "out" if splits == 1 else "inout")
    prog.params += [A, B, C]
    prog.touch(dt, acc, out)
    prog.tol = max(prog.tol, 2e-4 if acc == "float32" else prog.tol)
    if acc == "float16":
        # the tensor cores round a float16 sum after every 16 products (K <= 64: 4 times), the
        # reference once per T.gemm call: each rounding up to half a unit in the last place
        prog.tol = max(prog.tol, 5e-3)
    prog.notes.append(f"gemm {dt}->{acc}->{out} tA={ta} tB={tb} tile {bm}x{bn}x{bk} {loop}/{stages} "
                      f"A in {a_scope} clear={clear} post={post} prescale={prescale} policy={policy} splits={splits} "
                      f"threads={threads}")
    b = Body()
    if splits > 1:
        b(f"with T.Kernel(T.ceildiv({N}, {bn}), T.ceildiv({M}, {bm}), {splits}, threads={threads}) as (bx, by, bz):")
    else:
        b(f"with T.Kernel(T.ceildiv({N}, {bn}), T.ceildiv({M}, {bm}), threads={threads}) as (bx, by):")
    with b.indent():
        ash, bsh = (bk, bm) if ta else (bm, bk), (bn, bk) if tb else (bk, bn)
        aw = "A_s" if awin is None else f"A_s[{awin[0]}:{awin[0] + ash[0]}, {awin[1]}:{awin[1] + ash[1]}]"
        bw = "B_s" if bwin is None else f"B_s[{bwin[0]}:{bwin[0] + bsh[0]}, {bwin[1]}:{bwin[1] + bsh[1]}]"
        if awin is not None:
            ash = (ash[0] + awin[0] + 1, ash[1] + awin[1])
        if bwin is not None:
            bsh = (bsh[0] + bwin[0], bsh[1] + bwin[1] + 2)
        b(f'A_s = T.alloc_{a_scope}({ash}, "{dt}")')
        b(f'B_s = T.alloc_shared({bsh}, "{dt}")')
        b(f'C_f = T.alloc_fragment(({bm}, {bn}), "{acc}")')
        if clear == "clear":
            b("T.clear(C_f)")
        elif clear == "fill":
            b("T.fill(C_f, 1)")
        if splits > 1:  # split s takes the K tiles s, s + splits, ...
            b(f"for kq in T.{'Pipelined' if loop == 'pipelined' else 'serial'}("
              f"T.ceildiv(T.ceildiv({K}, {bk}) - bz, {splits}){f', num_stages={stages}' if loop == 'pipelined' else ''}):")
            b.ind += 1
            b(f"k = kq * {splits} + bz")
            b.ind -= 1
        elif loop == "pipelined":
            b(f"for k in T.Pipelined(T.ceildiv({K}, {bk}), num_stages={stages}):")
        else:
            b(f"for k in T.serial(T.ceildiv({K}, {bk})):")
        with b.indent():
            b(f"T.copy({A.name}[k * {bk}, by * {bm}], {aw})" if ta else f"T.copy({A.name}[by * {bm}, k * {bk}], {aw})")
            b(f"T.copy({B.name}[bx * {bn}, k * {bk}], {bw})" if tb else f"T.copy({B.name}[k * {bk}, bx * {bn}], {bw})")
            ca = ", clear_accum=k == 0" if clear == "accum" else ""
            if prescale:
                pr, pc = (bk, bm) if ta else (bm, bk)
                o0, o1 = awin or (0, 0)
                ai = "A_s[i, j]" if awin is None else f"A_s[i + {o0}, j + {o1}]"
                b(f"for i, j in T.Parallel({pr}, {pc}):")
                with b.indent():
                    b(f'{ai} = {ai} * T.cast(2, "{dt}")')
            pol = "" if policy is None else f", policy=T.GemmWarpPolicy.{policy}"
            b(f"T.gemm({aw}, {bw}, C_f, transpose_A={ta}, transpose_B={tb}{ca}{pol})")
        if post:
            b(f"for i, j in T.Parallel({bm}, {bn}):")
            with b.indent():
                b("C_f[i, j] = C_f[i, j] * 2 - T.cast(j, \"" + acc + "\")")
        if splits > 1:
            b(f"T.atomic_add({C.name}[by * {bm}:(by + 1) * {bm}, bx * {bn}:(bx + 1) * {bn}], C_f)")
        else:
            b(f"T.copy(C_f, {C.name}[by * {bm}, bx * {bn}])")
    prog.body = b.lines

    def ref(arr, run):
        m, n, k = dval(d["M"], run), dval(d["N"], run), dval(d["K"], run)
        a = arr[A.name].T if ta else arr[A.name]
        bb = arr[B.name].T if tb else arr[B.name]
        c = (2 * a if prescale else a) @ bb
        if clear == "fill":
            c = c + 1
        if clear == "accum" and k == 0:
            return {}  # no iteration: C_f never cleared, undefined; skip comparing
        if post:
            c = c * 2 - (np.arange(n) % bn)[None, :]
        if splits > 1:
            return {C.name: rnd(arr[C.name] + c, out)}
        return {C.name: rnd(rnd(c, acc), out)}
    prog.ref = ref


def gen_pipeline(r, prog):
    """A T.Pipelined loop whose body reads a staged tile, then overwrites it (WAR), writes
    per-iteration results, and carries an accumulator across iterations."""
    P = prog.prefix
    d = dims_for(r, prog, [("M", 1, 24), ("N", 1, 48)])
    bm, bn = r.choice([1, 2, 4, 8, 16]), r.choice([1, 4, 8, 16, 5])
    stages = r.randint(1, 4)
    threads = r.choice(THREADS)
    runtime_trip = r.random() < 0.3
    war = r.random() < 0.6
    second = r.random() < 0.5
    dt = r.choice(["float32", "float16", "float64"])
    M, N = d["M"][0], d["N"][0]
    X = Param(f"{P}X", (M, N), dt, "in")
    W = Param(f"{P}W", (M, N), "float32", "in")
    Y = Param(f"{P}Y", (M, N), "float32", "out")
    Z = Param(f"{P}Z", (M, bn), "float32", "out")
    prog.params += [X, W, Y, Z]
    ntrip = None
    if runtime_trip:
        ntrip = Param(f"{P}n", (), "int32", "in", scalar=True)
        prog.params.append(ntrip)
        prog.runs = max(prog.runs, 3)
        prog.scalar_vals[ntrip.name] = [r.randint(0, 5) for _ in range(prog.runs)]
    prog.touch(dt, "float32", factor=4)
    prog.notes.append(f"pipelined stages={stages} tile {bm}x{bn} dt={dt} war={war} second={second} "
                      f"runtime_trip={runtime_trip} threads={threads}")
    b = Body()
    b(f"with T.Kernel(T.ceildiv({M}, {bm}), threads={threads}) as by:")
    trip = f"T.min({ntrip.name}, T.ceildiv({N}, {bn}))" if runtime_trip else f"T.ceildiv({N}, {bn})"
    with b.indent():
        b(f'xs = T.alloc_shared(({bm}, {bn}), "{dt}")')
        b(f'ws = T.alloc_shared(({bm}, {bn}), "float32")')
        b(f'acc = T.alloc_fragment(({bm}, {bn}), "float32")')
        b(f'y = T.alloc_fragment(({bm}, {bn}), "float32")')
        b("T.clear(acc)")
        b(f"for k in T.Pipelined({trip}, num_stages={stages}):")
        with b.indent():
            b(f"T.copy({X.name}[by * {bm}, k * {bn}], xs)")
            if second:
                b(f"T.copy({W.name}[by * {bm}, k * {bn}], ws)")
            b(f"for i, j in T.Parallel({bm}, {bn}):")
            with b.indent():
                w = "ws[i, j]" if second else "1.5"
                b(f'acc[i, j] = acc[i, j] + T.cast(xs[i, j], "float32") * {w}')
            if war:
                b(f"for i, j in T.Parallel({bm}, {bn}):")
                with b.indent():
                    b(f'xs[i, j] = T.cast(acc[i, j] - T.cast(xs[i, j], "float32"), "{dt}")')
            b(f"for i, j in T.Parallel({bm}, {bn}):")
            with b.indent():
                b(f'y[i, j] = T.cast(xs[i, j], "float32") + T.cast(k, "float32")')
            b(f"T.copy(y, {Y.name}[by * {bm}, k * {bn}])")
        b(f"T.copy(acc, {Z.name}[by * {bm}, 0])")
    prog.body = b.lines

    def ref(arr, run):
        m, n = dval(d["M"], run), dval(d["N"], run)
        nk = ceildiv(n, bn)
        if runtime_trip:
            nk = min(prog.scalar_vals[ntrip.name][run], nk)
        y_out = np.full((m, n), np.nan)
        z_out = np.full((m, bn), np.nan)
        for by in range(ceildiv(m, bm)):
            acc = np.zeros((bm, bn))
            for k in range(nk):
                xs = rnd(tile_pad(arr[X.name], by * bm, k * bn, bm, bn), dt)
                w = rnd(tile_pad(arr[W.name], by * bm, k * bn, bm, bn), "float32") if second else 1.5
                acc = rnd(acc + xs * w, "float32")
                if war:
                    xs = rnd(acc - xs, dt)
                y = rnd(xs + k, "float32")
                tile_store(y_out, y, by * bm, k * bn)
            tile_store(z_out, acc, by * bm, 0)
        return {Y.name: y_out, Z.name: z_out}
    prog.ref = ref


def gen_atomic(r, prog):
    P = prog.prefix
    d = dims_for(r, prog, [("M", 1, 30), ("N", 1, 30)])
    bm, bn = r.choice([1, 2, 4, 8, 3]), r.choice([1, 4, 8, 16, 5])
    variant = r.choice(["element", "region", "block", "branch"])
    op = r.choice(["add", "add", "max", "min"])
    dt = r.choice(["float32", "int32"] + (["float64", "float16"] if op == "add" else ["float64"]))
    threads = r.choice(THREADS)
    L = r.randint(1, 9)
    M, N = d["M"][0], d["N"][0]
    X = Param(f"{P}X", (M, N), dt, "in", "small_int" if is_int(dt) else "normal")
    H = Param(f"{P}H", (L,) if variant != "region" else (bm, bn), dt, "inout",
              "small_int" if is_int(dt) else "normal")
    prog.params += [X, H]
    prog.touch(dt, factor=8 if dt == "float16" else 4)
    prog.notes.append(f"atomic_{op} {variant} dt={dt} tile {bm}x{bn} L={L} threads={threads}")
    a, bc = r.randint(1, 5), r.randint(0, 4)
    whole = r.random() < 0.5
    b = Body()
    b(f"with T.Kernel(T.ceildiv({N}, {bn}), T.ceildiv({M}, {bm}), threads={threads}) as (bx, by):")
    with b.indent():
        b(f'x = T.alloc_fragment(({bm}, {bn}), "{dt}")')
        b(f"T.copy({X.name}[by * {bm}, bx * {bn}], x)")
        if variant == "element":
            b(f"for i, j in T.Parallel({bm}, {bn}):")
            with b.indent():
                b(f"if by * {bm} + i < {M} and bx * {bn} + j < {N}:")
                with b.indent():
                    b(f"T.atomic_{op}({H.name}[((by * {bm} + i) * {a} + (bx * {bn} + j) * {bc}) % {L}], x[i, j])")
        elif variant == "branch":
            b(f"for i, j in T.Parallel({bm}, {bn}):")
            with b.indent():
                b("if x[i, j] > 0:")
                with b.indent():
                    b(f"T.atomic_{op}({H.name}[(i + j) % {L}], x[i, j])")
        elif variant == "region":
            b(f"T.atomic_{op}({H.name}, x)" if whole else f"T.atomic_{op}({H.name}[0:{bm}, 0:{bn}], x)")
        else:
            b(f"T.atomic_{op}({H.name}[(bx + by) % {L}], x[0, 0])")
    prog.body = b.lines
    f = {"add": np.add, "max": np.maximum, "min": np.minimum}[op]

    def ref(arr, run):
        m, n = dval(d["M"], run), dval(d["N"], run)
        h = arr[H.name].copy()
        for by in range(ceildiv(m, bm)):
            for bx in range(ceildiv(n, bn)):
                t = tile_pad(arr[X.name], by * bm, bx * bn, bm, bn)
                if variant == "element":
                    for i in range(bm):
                        for j in range(bn):
                            if by * bm + i < m and bx * bn + j < n:
                                idx = ((by * bm + i) * a + (bx * bn + j) * bc) % L
                                h[idx] = f(h[idx], t[i, j])
                elif variant == "branch":
                    for i in range(bm):
                        for j in range(bn):
                            if t[i, j] > 0:
                                h[(i + j) % L] = f(h[(i + j) % L], t[i, j])
                elif variant == "region":
                    h = f(h, t)
                else:
                    h[(bx + by) % L] = f(h[(bx + by) % L], t[0, 0])
        return {H.name: h}
    prog.ref = ref


def gen_control(r, prog):
    """Per-row scalar loops with run-time branches, break/continue, T.alloc_var, while."""
    P = prog.prefix
    d = dims_for(r, prog, [("M", 1, 20), ("N", 1, 12)])
    bm = r.choice([1, 2, 3, 4, 8])
    threads = r.choice(THREADS)
    M, N = d["M"][0], d["N"][0]
    dt = r.choice(["float32", "float64"])
    X = Param(f"{P}X", (M, N), dt, "in", "unit")
    O = Param(f"{P}O", (M,), "float32", "out")
    Q = Param(f"{P}Q", (M,), "int32", "out")
    prog.params += [X, O, Q]
    prog.touch("float32", factor=4)
    thr1, thr2 = r.choice([-0.5, 0.0, 0.3]), r.choice([0.5, 0.8, -0.8])
    brk = r.choice(["none", "break", "continue"])
    use_elif = r.random() < 0.5
    use_while = r.random() < 0.5
    inner = r.choice(["serial", "unroll", "range"])
    row = f"bx * {bm} + i"
    prog.notes.append(f"control bm={bm} thr=({thr1},{thr2}) brk={brk} elif={use_elif} while={use_while} "
                      f"inner={inner} threads={threads}")
    b = Body()
    b(f"with T.Kernel(T.ceildiv({M}, {bm}), threads={threads}) as bx:")
    with b.indent():
        b('acc = T.alloc_var("float32")')
        b('cnt = T.alloc_var("int32")')
        if use_while:
            b('jj = T.alloc_var("int32")')
        b(f"for i in T.serial({bm}):")
        with b.indent():
            b(f"if {row} < {M}:")
            with b.indent():
                b("acc = 0.0")
                b("cnt = 0")
                loop = {"serial": f"T.serial({N})", "unroll": f"T.unroll({N})", "range": f"range({N})"}[inner]
                if use_while:
                    b("jj = 0")
                    b(f"while jj < {N}:")
                    jv = "jj"
                else:
                    b(f"for j in {loop}:")
                    jv = "j"
                with b.indent():
                    if use_while:
                        b("jj = jj + 1")
                        xv = f"{X.name}[{row}, jj - 1]"
                    else:
                        xv = f"{X.name}[{row}, {jv}]"
                    b(f"if {xv} > {thr1}:")
                    with b.indent():
                        b(f'acc = acc + T.cast({xv}, "float32")')
                        if brk == "break":
                            b(f"if acc > {thr2 + 1.0}:")
                            with b.indent():
                                b("break")
                    if use_elif:
                        b(f"elif {xv} < {-abs(thr2)}:")
                        with b.indent():
                            b("cnt = cnt + 1")
                            if brk == "continue":
                                b("continue")
                            b("acc = acc - 0.25")
                    b("else:")
                    with b.indent():
                        b("acc = acc * 0.5")
                b(f"{O.name}[{row}] = acc")
                b(f"{Q.name}[{row}] = cnt")
    prog.body = b.lines

    def ref(arr, run):
        m, n = dval(d["M"], run), dval(d["N"], run)
        x = arr[X.name]
        o = np.full(m, np.nan)
        q = np.full(m, np.iinfo(np.int32).min + 7, dtype=np.float64)
        for rr in range(m):
            acc, cnt = 0.0, 0
            for jv in range(n):
                v = x[rr, jv]
                if v > thr1:
                    acc = float(rnd(acc + float(rnd(v, "float32")), "float32"))
                    if brk == "break" and acc > thr2 + 1.0:
                        break
                elif use_elif and v < -abs(thr2):
                    cnt += 1
                    if brk == "continue":
                        continue
                    acc = float(rnd(acc - 0.25, "float32"))
                else:
                    acc = float(rnd(acc * 0.5, "float32"))
            o[rr], q[rr] = acc, cnt
        return {O.name: o, Q.name: q}
    prog.ref = ref


def gen_cumsum(r, prog):
    P = prog.prefix
    d = dims_for(r, prog, [("M", 1, 30), ("N", 1, 30)])
    bm, bn = r.choice([1, 2, 4, 8, 5]), r.choice([1, 4, 8, 16, 7])
    dim, rev, inplace = r.choice([0, 1]), r.random() < 0.5, r.random() < 0.5
    threads = r.choice(THREADS)
    M, N = d["M"][0], d["N"][0]
    X = Param(f"{P}X", (M, N), "float32", "in")
    O = Param(f"{P}O", (M, N), "float32", "out")
    prog.params += [X, O]
    prog.touch("float32", factor=4)
    prog.notes.append(f"cumsum dim={dim} reverse={rev} in_place={inplace} tile {bm}x{bn} threads={threads}")
    b = Body()
    b(f"with T.Kernel(T.ceildiv({N}, {bn}), T.ceildiv({M}, {bm}), threads={threads}) as (bx, by):")
    with b.indent():
        b(f'x = T.alloc_{r.choice(["shared", "fragment"])}(({bm}, {bn}), "float32")')
        b(f'y = T.alloc_fragment(({bm}, {bn}), "float32")')
        b(f"T.copy({X.name}[by * {bm}, bx * {bn}], x)")
        if inplace:
            b(f"T.cumsum(x, dim={dim}, reverse={rev})")
            b("T.copy(x, y)")
        else:
            b(f"T.cumsum(x, y, dim={dim}, reverse={rev})")
        b(f"T.copy(y, {O.name}[by * {bm}, bx * {bn}])")
    prog.body = b.lines

    def ref(arr, run):
        m, n = dval(d["M"], run), dval(d["N"], run)
        o = np.full((m, n), np.nan)
        for by in range(ceildiv(m, bm)):
            for bx in range(ceildiv(n, bn)):
                t = tile_pad(arr[X.name], by * bm, bx * bn, bm, bn)
                if rev:
                    t = np.flip(np.cumsum(np.flip(t, dim), axis=dim), dim)
                else:
                    t = np.cumsum(t, axis=dim)
                tile_store(o, t, by * bm, bx * bn)
        return {O.name: o}
    prog.ref = ref


def gen_views(r, prog):
    """T.reshape of a tile (shared or fragment): element writes through the view, a row
    reduction of the view, and the original tile copied out (it must show the writes)."""
    P = prog.prefix
    bm, bn = r.choice([1, 2, 4, 6, 8]), r.choice([4, 8, 12, 16])
    total = bm * bn
    k = r.choice([d for d in (1, 2, 3, 4, 6, 8, 16, 32) if total % d == 0])
    rows = total // k
    M, N = r.randint(1, 20), r.randint(1, 40)
    gm, gn = ceildiv(M, bm), ceildiv(N, bn)
    threads = r.choice(THREADS)
    scope = r.choice(["shared", "fragment"])
    red = r.choice(["sum", "max"])
    c = r.choice([2.0, -1.0, 0.5])
    X = Param(f"{P}X", (M, N), "float32", "in")
    O = Param(f"{P}O", (M, N), "float32", "out")
    R = Param(f"{P}R", (gm * gn * rows,), "float32", "out")
    prog.params += [X, O, R]
    prog.touch("float32", factor=k)
    prog.notes.append(f"views: {scope} tile {bm}x{bn} seen as {rows}x{k}, reduce_{red}, c={c} threads={threads}")
    b = Body()
    b(f"with T.Kernel({gn}, {gm}, threads={threads}) as (bx, by):")
    with b.indent():
        b(f'x = T.alloc_{scope}(({bm}, {bn}), "float32")')
        b(f"T.copy({X.name}[by * {bm}, bx * {bn}], x)")
        b(f"v = T.reshape(x, [{rows}, {k}])")
        b(f"for i, j in T.Parallel({rows}, {k}):")
        with b.indent():
            b(f"v[i, j] = v[i, j] * {c} + T.cast(i, \"float32\")")
        b(f'rr = T.alloc_fragment(({rows},), "float32")')
        b(f"T.reduce_{red}(v, rr, dim=1)")
        b(f"T.copy(x, {O.name}[by * {bm}, bx * {bn}])")
        b(f"for i in T.Parallel({rows}):")
        with b.indent():
            b(f"{R.name}[(by * {gn} + bx) * {rows} + i] = rr[i]")
    prog.body = b.lines

    def ref(arr, run):
        o = np.full((M, N), np.nan)
        rr = np.full(gm * gn * rows, np.nan)
        for by in range(gm):
            for bx in range(gn):
                t = tile_pad(arr[X.name], by * bm, bx * bn, bm, bn).reshape(rows, k)
                t = rnd(rnd(t * c, "float32") + np.arange(rows)[:, None], "float32")
                red_v = t.sum(axis=1) if red == "sum" else t.max(axis=1)
                rr[(by * gn + bx) * rows:(by * gn + bx + 1) * rows] = red_v
                tile_store(o, t.reshape(bm, bn), by * bm, bx * bn)
        return {O.name: o, R.name: rr}
    prog.ref = ref


def gen_attention(r, prog):
    """GEMM -> masked online softmax (reduce_max / reduce_sum with clear=False) -> GEMM, over
    a pipelined loop of key/value blocks: the chain where layouts meet."""
    P = prog.prefix
    d = dims_for(r, prog, [("Sq", 1, 40), ("Sk", 1, 64)])
    dt = r.choice(["float16", "float16", "bfloat16", "float32"])
    D, Dv = r.choice([8, 16, 32]), r.choice([8, 16, 32])
    bq, bkv = r.choice([8, 16, 32]), r.choice([8, 16, 32])
    stages = r.randint(0, 3)
    causal = r.random() < 0.4
    threads = r.choice(THREADS)
    scale = r.choice([0.25, 0.5, 1.0])
    Sq, Sk = d["Sq"][0], d["Sk"][0]
    if causal:  # every query row needs a key at or before it: Sk >= Sq
        for nm in ("Sq", "Sk"):
            if d[nm][1] is not None:
                prog.dyn[d[nm][0]] = d[nm][1]
        sq_vals = [dval(d["Sq"], k) for k in range(3)]
        sk_vals = [dval(d["Sk"], k) for k in range(3)]
        if d["Sk"][1] is None and d["Sq"][1] is None:
            d["Sk"] = (str(max(int(Sk), int(Sq))), None)
        elif d["Sk"][1] is not None:
            d["Sk"][1][:] = [max(a, b) for a, b in zip(sk_vals, sq_vals)]
        else:  # Sk static, Sq dynamic
            d["Sq"][1][:] = [min(a, int(Sk)) for a in sq_vals]
        Sk = d["Sk"][0]
    Q = Param(f"{P}Q", (Sq, D), dt, "in")
    K = Param(f"{P}K", (Sk, D), dt, "in")
    V = Param(f"{P}V", (Sk, Dv), dt, "in")
    O = Param(f"{P}O", (Sq, Dv), "float32", "out")
    prog.params += [Q, K, V, O]
    prog.touch(dt, "float32", factor=2)
    prog.notes.append(f"attention {dt} D={D} Dv={Dv} bq={bq} bkv={bkv} stages={stages} causal={causal} "
                      f"scale={scale} threads={threads}")
    b = Body()
    b(f"with T.Kernel(T.ceildiv({Sq}, {bq}), threads={threads}) as bx:")
    with b.indent():
        b(f'q = T.alloc_shared(({bq}, {D}), "{dt}")')
        b(f'k_s = T.alloc_shared(({bkv}, {D}), "{dt}")')
        b(f'v_s = T.alloc_shared(({bkv}, {Dv}), "{dt}")')
        b(f's = T.alloc_fragment(({bq}, {bkv}), "float32")')
        b(f'p = T.alloc_fragment(({bq}, {bkv}), "{dt}")')
        b(f'o = T.alloc_fragment(({bq}, {Dv}), "float32")')
        b(f'm = T.alloc_fragment(({bq},), "float32")')
        b(f'm_prev = T.alloc_fragment(({bq},), "float32")')
        b(f'l = T.alloc_fragment(({bq},), "float32")')
        b(f"T.copy({Q.name}[bx * {bq}, 0], q)")
        b("T.clear(o)")
        b('T.fill(m, -T.infinity("float32"))')
        b("T.fill(l, 0)")
        b(f"for kk in T.Pipelined(T.ceildiv({Sk}, {bkv}), num_stages={stages}):")
        with b.indent():
            b(f"T.copy({K.name}[kk * {bkv}, 0], k_s)")
            b(f"T.copy({V.name}[kk * {bkv}, 0], v_s)")
            b("T.clear(s)")
            b("T.gemm(q, k_s, s, transpose_B=True)")
            b(f"for i, j in T.Parallel({bq}, {bkv}):")
            with b.indent():
                mask = f"kk * {bkv} + j < {Sk}"
                if causal:
                    mask = f"(kk * {bkv} + j < {Sk}) and (kk * {bkv} + j <= bx * {bq} + i)"
                b(f'if {mask}:')
                with b.indent():
                    b(f"s[i, j] = s[i, j] * {scale}")
                b("else:")
                with b.indent():
                    b('s[i, j] = -T.infinity("float32")')
            b("T.copy(m, m_prev)")
            b("T.reduce_max(s, m, dim=1, clear=False)")
            b(f"for i, j in T.Parallel({bq}, {bkv}):")
            with b.indent():
                b("s[i, j] = T.exp(s[i, j] - m[i])")
            b(f"for i in T.Parallel({bq}):")
            with b.indent():
                b("l[i] = l[i] * T.exp(m_prev[i] - m[i])")
            b("T.reduce_sum(s, l, dim=1, clear=False)")
            b(f"for i, j in T.Parallel({bq}, {Dv}):")
            with b.indent():
                b("o[i, j] = o[i, j] * T.exp(m_prev[i] - m[i])")
            b("T.copy(s, p)")
            b("T.gemm(p, v_s, o)")
        b(f"for i, j in T.Parallel({bq}, {Dv}):")
        with b.indent():
            b("o[i, j] = o[i, j] / l[i]")
        b(f"T.copy(o, {O.name}[bx * {bq}, 0])")
    prog.body = b.lines

    def ref(arr, run):
        sq, sk = dval(d["Sq"], run), dval(d["Sk"], run)
        sc = arr[Q.name] @ arr[K.name].T * scale
        if causal:
            sc = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None], sc, -np.inf)
        sc = sc - sc.max(axis=1, keepdims=True)
        e = np.exp(sc)
        return {O.name: (e / e.sum(axis=1, keepdims=True)) @ arr[V.name]}
    prog.ref = ref


def gen_reject(r, prog):
    """Programs the front end must refuse with a clear error (never drop silently):
    `for ... else` and `while ... else`. And one it must not truncate: a T.Parallel larger
    than its register fragment (upstream #2957 dropped the extra iterations), which is
    grown to the loop's extent with a warning remark and must compute every element."""
    P = prog.prefix
    X = Param(f"{P}X", (8,), "float32", "inout")
    prog.params.append(X)
    form = r.choice(["for", "while", "parallel_oob"])
    prog.notes.append("parallel past the fragment's end (must be grown, not truncated)" if form == "parallel_oob"
                      else f"{form}-else (must be rejected)")
    b = Body()
    b("with T.Kernel(1, threads=1) as bx:")
    with b.indent():
        if form == "parallel_oob":  # a T.Parallel larger than its tile (upstream #2957 truncated it)
            bm, bn = r.randint(1, 8), r.randint(1, 8)
            em, en = (bm + r.randint(1, 3), bn) if r.random() < 0.5 else (bm, bn + r.randint(1, 3))
            b(f'f = T.alloc_fragment(({bm}, {bn}), "float32")')
            b("T.clear(f)")
            b(f"for i, j in T.Parallel({em}, {en}):")
            with b.indent():
                b("f[i, j] = 1.0")
            b(f"{X.name}[0] = f[{em - 1}, {en - 1}]")  # an element past the declared end

            def ref(arr, run, name=X.name):
                out = arr[name].astype(np.float64).copy()
                out[0] = 1.0
                return {name: out}
            prog.body = b.lines
            prog.ref = ref
            return
        if form == "for":
            b("for i in T.serial(8):")
            with b.indent():
                b("if X[i] > 0:".replace("X", X.name))
                with b.indent():
                    b("break")
            b("else:")
        else:
            b('i = T.alloc_var("int32", 0)')
            b(f"while i < 8:")
            with b.indent():
                b("i = i + 1")
            b("else:")
        with b.indent():
            b(f"{X.name}[0] = 1.0")
    prog.body = b.lines
    prog.expect_reject = True
    prog.ref = lambda arr, run: {}


def gen_threads(r, prog):
    """Thread-level code: T.get_thread_binding, per-thread locals (loop or T.copy fill),
    thread-dependent branches, shared memory exchanged across a barrier, warp reductions
    and shuffles (whole warps only)."""
    P = prog.prefix
    G = r.randint(1, 4)
    t = r.choice([1, 3, 7, 32, 33, 64, 96, 100, 128])
    v = r.randint(1, 8)
    c = r.randint(1, 4)
    shift = r.randint(0, 5) % t
    fill = r.choice(["loop", "copy"])
    warp = t % 32 == 0 and r.random() < 0.6
    wkind = r.choice(["sum", "max", "min"])
    lane_mask = r.choice([1, 2, 4, 8, 16])
    X = Param(f"{P}X", (G * t, v), "float32", "in")
    O = Param(f"{P}O", (G * t,), "float32", "out")
    prog.params += [X, O]
    if warp:
        Wp = Param(f"{P}W", (G, t // 32), "float32", "out")
        S = Param(f"{P}S", (G * t,), "float32", "out")
        prog.params += [Wp, S]
    prog.touch("float32", factor=4)
    prog.notes.append(f"threads={t} grid={G} v={v} c={c} shift={shift} fill={fill} warp={warp}/{wkind}/{lane_mask}")
    b = Body()
    b(f"with T.Kernel({G}, threads={t}) as bx:")
    with b.indent():
        b("tx = T.get_thread_binding()")
        b(f'loc = T.alloc_local(({v},), "float32")')
        b(f'sh = T.alloc_shared(({t},), "float32")')
        b('acc = T.alloc_var("float32")')
        if fill == "copy":
            b(f"T.copy({X.name}[bx * {t} + tx, 0:{v}], loc)")
        else:
            b(f"for k in T.serial({v}):")
            with b.indent():
                b(f"loc[k] = {X.name}[bx * {t} + tx, k]")
        b("acc = 0")
        b(f"for k in T.serial({v}):")
        with b.indent():
            b(f"if (tx + k) % {c} == 0:")
            with b.indent():
                b("acc = acc + loc[k] * k")
            b("else:")
            with b.indent():
                b("acc = acc - loc[k]")
        b("sh[tx] = acc")
        b("T.sync_threads()")
        b(f"{O.name}[bx * {t} + tx] = sh[(tx + {shift}) % {t}] + acc")
        if warp:
            b(f"w = T.warp_reduce_{wkind}(acc)")
            b("if tx % 32 == 0:")
            with b.indent():
                b(f"{Wp.name}[bx, tx // 32] = w")
            b(f"{S.name}[bx * {t} + tx] = T.shfl_xor(acc, {lane_mask})")
    prog.body = b.lines

    def ref(arr, run):
        x = arr[X.name]
        tx = np.arange(G * t) % t
        acc = np.zeros(G * t)
        for k in range(v):
            acc = np.where((tx + k) % c == 0, acc + x[:, k] * k, acc - x[:, k])
        acc = rnd(acc, "float32")
        blk = np.arange(G * t) // t
        out = {O.name: acc[blk * t + (tx + shift) % t] + acc}
        if warp:
            red = {"sum": np.sum, "max": np.max, "min": np.min}[wkind]
            out[Wp.name] = red(acc.reshape(G, t // 32, 32), axis=2)
            out[S.name] = acc[np.arange(G * t) ^ lane_mask]
        return out
    prog.ref = ref


class IntExprGen:
    """int32 expressions over tile elements: floor division and modulo by constants of either
    sign and by run-time odd divisors, bitwise operations, min/max/abs, selects, float->int
    truncation."""

    def __init__(self, r, leaves):
        self.r, self.leaves = r, leaves

    def expr(self, depth):
        r = self.r
        if depth <= 0 or r.random() < 0.2:
            if r.random() < 0.2:
                c = r.randint(-6, 9)
                return str(c), (lambda e, c=c: np.int64(c))
            return r.choice(self.leaves)
        k = r.randrange(10)
        a = self.expr(depth - 1)
        if k <= 2:
            b = self.expr(depth - 1)
            op = "+-*"[k]
            f = {"+": np.add, "-": np.subtract, "*": np.multiply}[op]
            return f"({a[0]} {op} {b[0]})", (lambda e, a=a, b=b, f=f: f(a[1](e), b[1](e)))
        if k in (3, 4):
            op = "//" if k == 3 else "%"
            f = np.floor_divide if op == "//" else np.mod
            if r.random() < 0.5:
                c = r.choice([1, 2, 3, 4, 5, 7, 8, -2, -3, -5])
                return f"({a[0]} {op} {c})", (lambda e, a=a, c=c, f=f: f(a[1](e), c))
            dv = self.expr(depth - 1)  # run-time divisor, made odd (never zero)
            dsrc = f"({dv[0]} * 2 + 1)"
            return (f"({a[0]} {op} {dsrc})",
                    (lambda e, a=a, dv=dv, f=f: f(a[1](e), np.asarray(dv[1](e)) * 2 + 1)))
        if k == 5:
            b = self.expr(depth - 1)
            op = r.choice(["min", "max"])
            f = np.minimum if op == "min" else np.maximum
            return f"T.{op}({a[0]}, {b[0]})", (lambda e, a=a, b=b, f=f: f(a[1](e), b[1](e)))
        if k == 6:
            c = r.randint(1, 31)
            op = r.choice(["&", "|", "^"])
            f = {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}[op]
            return f"({a[0]} {op} {c})", (lambda e, a=a, c=c, f=f: f(np.asarray(a[1](e), dtype=np.int64), c))
        if k == 7:
            sh = r.randint(1, 3)
            if r.random() < 0.5:
                return f"({a[0]} >> {sh})", (lambda e, a=a, sh=sh: np.right_shift(np.asarray(a[1](e), dtype=np.int64), sh))
            return (f"(({a[0]} & 255) << {sh})",
                    (lambda e, a=a, sh=sh: np.left_shift(np.bitwise_and(np.asarray(a[1](e), dtype=np.int64), 255), sh)))
        if k == 8:
            return f"T.abs({a[0]})", (lambda e, a=a: np.abs(a[1](e)))
        b, c1, c2 = self.expr(depth - 1), self.expr(depth - 1), self.expr(depth - 1)
        op = r.choice(["<", ">=", "==", "!="])
        f = {"<": np.less, ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal}[op]
        neg = r.random() < 0.3
        cond = f"({c1[0]} {op} {c2[0]})"
        return (f"T.if_then_else({'not ' if neg else ''}{cond}, {a[0]}, {b[0]})",
                (lambda e, a=a, b=b, c1=c1, c2=c2, f=f, neg=neg:
                 np.where(np.logical_xor(f(c1[1](e), c2[1](e)), neg), a[1](e), b[1](e))))


def gen_intops(r, prog):
    P = prog.prefix
    d = dims_for(r, prog, [("M", 1, 30), ("N", 1, 30)])
    bm, bn = r.choice([1, 2, 4, 8, 3]), r.choice([1, 4, 8, 16, 6])
    do = r.choice(["int32", "int32", "int8", "float32"])
    threads = r.choice(THREADS)
    M, N = d["M"][0], d["N"][0]
    X = Param(f"{P}X", (M, N), "int32", "in")
    Y = Param(f"{P}Y", (M, N), "int32", "in")
    F = Param(f"{P}F", (M, N), "float32", "in")
    O = Param(f"{P}O", (M, N), do, "out")
    prog.params += [X, Y, F, O]
    prog.touch(do)
    leaves = [("x[i, j]", lambda e: e["x"]), ("y[i, j]", lambda e: e["y"]), ("i", lambda e: e["i"]),
              ("j", lambda e: e["j"]), ("bx", lambda e: e["bx"]), ("(by * %d + i)" % bm, lambda e: e["by"] * bm + e["i"]),
              ('T.cast(f[i, j] * 4.0, "int32")', lambda e: np.trunc(e["f"] * 4.0).astype(np.int64))]
    g = IntExprGen(r, leaves)
    e1 = g.expr(r.randint(1, 4))
    prog.notes.append(f"int ops tile {bm}x{bn} out={do} threads={threads}")
    b = Body()
    b(f"with T.Kernel(T.ceildiv({N}, {bn}), T.ceildiv({M}, {bm}), threads={threads}) as (bx, by):")
    with b.indent():
        b(f'x = T.alloc_fragment(({bm}, {bn}), "int32")')
        b(f'y = T.alloc_{r.choice(["fragment", "shared"])}(({bm}, {bn}), "int32")')
        b(f'f = T.alloc_fragment(({bm}, {bn}), "float32")')
        b(f'o = T.alloc_fragment(({bm}, {bn}), "{do}")')
        for nm, src in (("x", X), ("y", Y), ("f", F)):
            b(f"T.copy({src.name}[by * {bm}, bx * {bn}], {nm})")
        b(f"for i, j in T.Parallel({bm}, {bn}):")
        with b.indent():
            b(f"o[i, j] = {e1[0]}" if do == "int32" else f'o[i, j] = T.cast({e1[0]}, "{do}")')
        b(f"T.copy(o, {O.name}[by * {bm}, bx * {bn}])")
    prog.body = b.lines

    def ref(arr, run):
        m, n = dval(d["M"], run), dval(d["N"], run)
        o = np.full((m, n), np.nan)
        ii, jj = np.arange(bm)[:, None], np.arange(bn)[None, :]
        for by in range(ceildiv(m, bm)):
            for bx in range(ceildiv(n, bn)):
                env = {"x": tile_pad(arr[X.name], by * bm, bx * bn, bm, bn).astype(np.int64),
                       "y": tile_pad(arr[Y.name], by * bm, bx * bn, bm, bn).astype(np.int64),
                       "f": rnd(tile_pad(arr[F.name], by * bm, bx * bn, bm, bn), "float32"),
                       "i": ii + 0 * jj, "j": jj + 0 * ii, "bx": bx, "by": by}
                v = np.asarray(e1[1](env), dtype=np.int64) + 0 * ii * jj
                v = ((v + 2**31) % 2**32) - 2**31  # int32 wrap-around
                if do == "int8":
                    v = ((v + 128) % 256) - 128
                tile_store(o, v.astype(np.float64), by * bm, bx * bn)
        return {O.name: o}
    prog.ref = ref


def gen_hopper(r, prog):
    """Hopper-sized attention-backward chains (upstream's example_gqa_bwd found two wrong
    answers the small-tile kinds never reach): a pipelined loop stages q, S = K q^T, P =
    cast(S * scale), dK += P q (A from registers), dQ_k = P^T K through shared memory (M = bn
    rows: too few for wgmma, so K is also an mma.sync operand), and optionally element reads
    of the staged q. Tiles of 64/128 rows and 64-192 columns take wgmma, TMA and warp
    specialization on sm_90a; opt-in (--kinds hopper), so the other kinds' seeds keep their
    programs."""
    P = prog.prefix
    bm = r.choice([64, 128])
    bn = r.choice([32, 64])
    d = r.choice([64, 128, 192])
    nk = r.choice([1, 2, 3, 5])
    stages = r.choice([1, 2, 3])
    threads = r.choice([128 * bm // 64, 128 * bm // 64, 128, 256])  # one warpgroup per 64 rows: wgmma
    nb = r.choice([1, 2])
    elem = r.random() < 0.5
    with_dq = r.random() < 0.6  # without it K and q stay wgmma operands: TMA and warp specialization
    dt = r.choice(["float16", "float16", "bfloat16"])
    scale = round(1.0 / np.sqrt(d), 6)
    M, N = nb * bm, nk * bn
    K = Param(f"{P}K", (M, d), dt, "in")
    Q = Param(f"{P}Q", (N, d), dt, "in")
    DK = Param(f"{P}DK", (M, d), "float32", "out")
    DQ = Param(f"{P}DQ", (nb, N, d), "float32", "out")
    prog.params += [K, Q, DK] + ([DQ] if with_dq else [])
    QS = None
    if elem:
        QS = Param(f"{P}QS", (nb, bn, d), "float32", "out")
        prog.params.append(QS)
    prog.touch(dt, "float32", factor=2)
    prog.notes.append(f"hopper chain bm={bm} bn={bn} d={d} nk={nk} stages={stages} threads={threads} nb={nb} "
                      f"elem={elem} dq={with_dq} dt={dt}")
    b = Body()
    b(f"with T.Kernel({nb}, threads={threads}) as by:")
    with b.indent():
        b(f'k_s = T.alloc_shared(({bm}, {d}), "{dt}")')
        b(f'q_s = T.alloc_shared(({bn}, {d}), "{dt}")')
        b(f'p_s = T.alloc_shared(({bm}, {bn}), "{dt}")')
        b(f's_f = T.alloc_fragment(({bm}, {bn}), "float32")')
        b(f'p_f = T.alloc_fragment(({bm}, {bn}), "{dt}")')
        b(f'dk = T.alloc_fragment(({bm}, {d}), "float32")')
        b(f'dq = T.alloc_fragment(({bn}, {d}), "float32")')
        if elem:
            b(f'qa = T.alloc_fragment(({bn}, {d}), "float32")')
            b("T.clear(qa)")
        b(f"T.copy({K.name}[by * {bm}, 0], k_s)")
        b("T.clear(dk)")
        b(f"for k in T.Pipelined({nk}, num_stages={stages}):")
        with b.indent():
            b(f"T.copy({Q.name}[k * {bn}, 0], q_s)")
            b("T.gemm(k_s, q_s, s_f, transpose_B=True, clear_accum=True)")
            b(f"for i, j in T.Parallel({bm}, {bn}):")
            with b.indent():
                b(f'p_f[i, j] = T.cast(s_f[i, j] * {scale}, "{dt}")')
            b("T.gemm(p_f, q_s, dk)")
            if elem:
                b(f"for i, j in T.Parallel({bn}, {d}):")
                with b.indent():
                    b('qa[i, j] = qa[i, j] + T.cast(q_s[i, j], "float32")')
            if with_dq:
                b("T.copy(p_f, p_s)")
                b("T.gemm(p_s, k_s, dq, transpose_A=True, clear_accum=True)")
                b(f"T.copy(dq, {DQ.name}[by, k * {bn}, 0])")
        b(f"T.copy(dk, {DK.name}[by * {bm}, 0])")
        if elem:
            b(f"T.copy(qa, {QS.name}[by, 0, 0])")
    prog.body = b.lines

    def ref(arr, run):
        kk, qq = arr[K.name], arr[Q.name]
        dk_out = np.zeros((M, d))
        dq_out = np.zeros((nb, N, d))
        out = {}
        for blk in range(nb):
            kb = kk[blk * bm:(blk + 1) * bm]
            acc = np.zeros((bm, d))
            for k in range(nk):
                q = qq[k * bn:(k + 1) * bn]
                p = rnd(rnd(kb @ q.T, "float32") * scale, dt)
                acc = acc + p @ q
                dq_out[blk, k * bn:(k + 1) * bn] = p.T @ kb
            dk_out[blk * bm:(blk + 1) * bm] = acc
        out[DK.name] = dk_out
        if with_dq:
            out[DQ.name] = dq_out
        if elem:
            out[QS.name] = np.broadcast_to(qq.reshape(nk, bn, d).sum(axis=0), (nb, bn, d)).copy()
        return out
    prog.ref = ref


def gen_reducers(r, prog):
    """T.alloc_reducer over k-steps: each step's tile updates it from a T.Parallel nest, by
    rows (acc[i], folding j) or by columns (acc[j], folding i), with sum, max or min; the
    compiler keeps it in registers (privatize-reducers) unless the update reads the reducer
    through another index (acc[i % 2]: the atomic path), then finalize_reducer and a copy out."""
    P = prog.prefix
    bm, bn = r.choice([2, 4, 8, 16, 32, 64]), r.choice([4, 8, 16, 32, 64])
    steps, gm = r.randint(1, 4), r.randint(1, 3)
    threads = r.choice([t for t in THREADS if t >= 32])
    op = r.choice(["sum", "max", "min"])
    by_rows = r.random() < 0.6
    pairs = r.random() < 0.2  # the atomic fallback
    c = r.choice([1.0, -0.5, 2.0])
    staged = r.choice(["fragment", "shared"])
    M, N = gm * bm, steps * bn
    out_len = 2 if pairs else (bm if by_rows else bn)
    X = Param(f"{P}X", (M, N), "float32", "in")
    O = Param(f"{P}O", (gm * out_len,), "float32", "out")
    prog.params += [X, O]
    prog.touch("float32", factor=N if op == "sum" else 1)
    prog.notes.append(f"reducers: {op} {'pairs' if pairs else ('rows' if by_rows else 'cols')} of {bm}x{bn} "
                      f"{staged} tiles, {steps} steps, c={c} threads={threads}")
    b = Body()
    b(f"with T.Kernel({gm}, threads={threads}) as bx:")
    with b.indent():
        b(f'acc = T.alloc_reducer(({out_len},), "float32", op="{op}")')
        b("T.reducer_init(acc)")
        b(f"for s in T.serial({steps}):")
        with b.indent():
            b(f'x = T.alloc_{staged}(({bm}, {bn}), "float32")')
            b(f"T.copy({X.name}[bx * {bm}, s * {bn}], x)")
            b(f"for i, j in T.Parallel({bm}, {bn}):")
            with b.indent():
                target = "acc[(i * {0} + j) % 2]".format(bn) if pairs else ("acc[i]" if by_rows else "acc[j]")
                b(f"T.reducer_update({target}, x[i, j] * {c})")
        b("T.finalize_reducer(acc)")
        b(f"T.copy(acc, {O.name}[bx * {out_len}])")
    prog.body = b.lines

    def ref(arr, run):
        fold = {"sum": np.sum, "max": np.max, "min": np.min}[op]
        o = np.full(gm * out_len, np.nan)
        for g in range(gm):
            t = rnd(arr[X.name][g * bm:(g + 1) * bm, :].astype(np.float64) * c, "float32")
            if pairs:
                flat = np.stack([t[:, s * bn:(s + 1) * bn].reshape(-1) for s in range(steps)])
                v = [fold(flat[:, 0::2]), fold(flat[:, 1::2])]
            elif by_rows:
                v = fold(t, axis=1)
            else:
                v = fold(t.reshape(bm, steps, bn), axis=(0, 1))
            o[g * out_len:(g + 1) * out_len] = v
        return {O.name: o}
    prog.ref = ref


def gen_dtype_views(r, prog):
    """A tile (shared or fragment) read through T.view with another dtype: float32 or int32
    tiles seen as int32/int8 (the same or narrower elements), int8 tiles as int32 (wider),
    copied out or read element by element; checked as the bits numpy's .view gives."""
    P = prog.prefix
    src_dt, dst_dt = r.choice([("float32", "int32"), ("int32", "int8"), ("float32", "int8"), ("int8", "int32")])
    width = {"float32": 4, "int32": 4, "int8": 1}
    ratio_num, ratio_den = width[src_dt], width[dst_dt]
    bm = r.choice([1, 2, 4, 8, 16])
    bn = r.choice([4, 8, 16, 32]) * (ratio_den if ratio_den > 1 else 1)
    vn = bn * ratio_num // ratio_den
    gm, gn = r.randint(1, 3), r.randint(1, 3)
    threads = r.choice(THREADS)
    scope = r.choice(["shared", "fragment"])
    elementwise = r.random() < 0.5
    X = Param(f"{P}X", (gm * bm, gn * bn), src_dt, "in", "small_int" if is_int(src_dt) else "normal")
    O = Param(f"{P}O", (gm * bm, gn * vn), dst_dt, "out")
    prog.params += [X, O]
    prog.touch(dst_dt)
    prog.notes.append(f"dtype views: {scope} {src_dt} {bm}x{bn} seen as {dst_dt} {bm}x{vn}, "
                      f"{'elementwise' if elementwise else 'copy'} threads={threads}")
    b = Body()
    b(f"with T.Kernel({gn}, {gm}, threads={threads}) as (bx, by):")
    with b.indent():
        b(f'x = T.alloc_{scope}(({bm}, {bn}), "{src_dt}")')
        b(f"T.copy({X.name}[by * {bm}, bx * {bn}], x)")
        b(f'v = T.view(x, ({bm}, {vn}), dtype="{dst_dt}")')
        if elementwise:
            b(f"for i, j in T.Parallel({bm}, {vn}):")
            with b.indent():
                b(f"{O.name}[by * {bm} + i, bx * {vn} + j] = v[i, j]")
        else:
            b(f"T.copy(v, {O.name}[by * {bm}, bx * {vn}])")
    prog.body = b.lines

    def ref(arr, run):
        x = np.ascontiguousarray(arr[X.name].astype(NPD[src_dt]))
        o = np.empty((gm * bm, gn * vn), NPD[dst_dt])
        for by in range(gm):
            for bx in range(gn):
                t = np.ascontiguousarray(x[by * bm:(by + 1) * bm, bx * bn:(bx + 1) * bn])
                o[by * bm:(by + 1) * bm, bx * vn:(bx + 1) * vn] = t.view(NPD[dst_dt]).reshape(bm, vn)
        return {O.name: o.astype(np.float64)}
    prog.ref = ref


def _draw_gathered_rows(r, groups):
    """The rows a gathering program reads: element type, row width D (a number of 16-byte
    groups from `groups`), extra columns of the table, the column the rows start at, and the
    table's row count (drawn in this order: a seed draws the same program)."""
    dt = r.choice(["float16", "float32", "bfloat16"])
    vec = 8 if dt != "float32" else 4
    D = vec * r.choice(groups)
    extra = vec * r.choice([0, 0, 1, 2])
    off = vec * r.randint(0, extra // vec) if extra else 0
    return dt, D, extra, off, r.randint(1, 120)


def _gathered_rows_program(prog, dt, D, extra, off, rows, BI, steps):
    """The parameters of a program that gathers BI rows of X (through Idx) at each of
    `steps` steps and accumulates them with weight k + 1 into O, and its float64 reference
    (indices past either end of X give zero rows)."""
    P = prog.prefix
    X = Param(f"{P}X", (rows, D + extra), dt, "in")
    Idx = Param(f"{P}I", (steps * BI,), "int32", "in", f"index:{rows}")
    O = Param(f"{P}O", (BI, D), "float32", "out")
    prog.params += [X, Idx, O]
    prog.touch(dt, "float32", factor=steps * 2)

    def ref(arr, run):
        x, idx = arr[X.name].astype(np.float64), arr[Idx.name].astype(np.int64)
        valid = (idx >= 0) & (idx < rows)
        g = np.where(valid[:, None], x[np.clip(idx, 0, rows - 1)][:, off:off + D], 0.0)
        acc = np.zeros((BI, D))
        for k in range(steps):
            acc = acc + rnd(g[k * BI:(k + 1) * BI], dt) * (k + 1)
        return {O.name: acc}
    prog.ref = ref
    return X, Idx, O


def gen_gathers(r, prog):
    """A T.Pipelined loop whose tiles are gathered rows, `S[i, d] = X[Idx[k * BI + i], d + c]`
    (the sparse attention kernels' loads; cuda-pipeline prefetches them as cp.async with
    tl.enable_gather_pipeline), indices past either end of X giving zero rows, accumulated
    with a per-step weight so the order of the steps shows."""
    dt, D, extra, off, rows = _draw_gathered_rows(r, [1, 2, 4, 8, 16])
    BI, steps, stages = r.choice([1, 2, 4, 8, 16, 32]), r.randint(1, 4), r.randint(1, 3)
    threads = r.choice([t for t in THREADS if t >= 32])
    X, Idx, O = _gathered_rows_program(prog, dt, D, extra, off, rows, BI, steps)
    prog.notes.append(f"gathers: {dt} rows {BI}x{D} of {rows}x{D + extra} from column {off}, {steps} steps, "
                      f"{stages} stages, threads={threads}")
    b = Body()
    b(f"with T.Kernel(1, threads={threads}):")
    with b.indent():
        b(f'S = T.alloc_shared(({BI}, {D}), "{dt}")')
        b(f'acc = T.alloc_fragment(({BI}, {D}), "float32")')
        b("T.clear(acc)")
        b(f"for k in T.Pipelined({steps}, num_stages={stages}):")
        with b.indent():
            b(f"for i, d in T.Parallel({BI}, {D}):")
            with b.indent():
                b(f"S[i, d] = {X.name}[{Idx.name}[k * {BI} + i], d + {off}]")
            b(f"for i, d in T.Parallel({BI}, {D}):")
            with b.indent():
                b('acc[i, d] += T.cast(S[i, d], "float32") * T.cast(k + 1, "float32")')
        b(f"T.copy(acc, {O.name})")
    prog.body = b.lines


def gen_f16_acc_gemms(r, prog):
    """The `gemm` kind's programs with float16 operands into a float16 accumulator: on CUDA
    mma.sync m16n8k16 .f16 where tile and K allow it (tl.mma_f16_accumulators, on by default),
    else the multiply-add loops."""
    gen_gemm(r, prog, f16_acc=True)


def gen_async_gathers(r, prog):
    """Gathered rows copied by `T.Parallel(..., prefer_async=True)` (cp.async on CUDA,
    tl.prefer_async_copies): either committed and waited for by the compiler after the loop,
    or hand-pipelined as upstream's minference example does, the next step's rows prefetched
    into the other stage of a 2-stage tile (`S[(k + 1) % 2, i, d]`) while this step's are
    used, with the program's own T.ptx_commit_group / T.ptx_wait_group(1). Indices past
    either end of X give zero rows; a per-step weight shows the order."""
    dt, D, extra, off, rows = _draw_gathered_rows(r, [1, 2, 4, 8])
    BI, steps = r.choice([1, 2, 4, 8, 16, 32]), r.randint(1, 4)
    threads = r.choice([t for t in THREADS if t >= 32])
    own = r.random() < 0.5
    X, Idx, O = _gathered_rows_program(prog, dt, D, extra, off, rows, BI, steps)
    prog.notes.append(f"async gathers: {dt} rows {BI}x{D} of {rows}x{D + extra} from column {off}, {steps} steps, "
                      f"{'hand-pipelined' if own else 'waited for after each copy'}, threads={threads}")
    par = f"T.Parallel({BI}, {D}, prefer_async=True" + (
        ', annotations={"parallel_async_without_async_commit_wait": True})' if own else ")")
    b = Body()
    b(f"with T.Kernel(1, threads={threads}):")
    with b.indent():
        b(f'S = T.alloc_shared((2, {BI}, {D}), "{dt}")')
        b(f'acc = T.alloc_fragment(({BI}, {D}), "float32")')
        b("T.clear(acc)")
        if own:
            b(f"for i, d in {par}:")
            with b.indent():
                b(f"S[0, i, d] = {X.name}[{Idx.name}[i], d + {off}]")
            b("T.ptx_commit_group()")
        b(f"for k in T.serial({steps}):")
        with b.indent():
            if own:
                b(f"if k + 1 < {steps}:")
                with b.indent():
                    b(f"for i, d in {par}:")
                    with b.indent():
                        b(f"S[(k + 1) % 2, i, d] = {X.name}[{Idx.name}[(k + 1) * {BI} + i], d + {off}]")
                b("T.ptx_commit_group()")
                b("T.ptx_wait_group(1)")
            else:
                b(f"for i, d in {par}:")
                with b.indent():
                    b(f"S[k % 2, i, d] = {X.name}[{Idx.name}[k * {BI} + i], d + {off}]")
            b(f"for i, d in T.Parallel({BI}, {D}):")
            with b.indent():
                b('acc[i, d] += T.cast(S[k % 2, i, d], "float32") * T.cast(k + 1, "float32")')
        b(f"T.copy(acc, {O.name})")
    prog.body = b.lines


def gen_flat_views(r, prog):
    """Tiles moved through flat views of 4-D global tensors, `T.Tensor((N * H * W, F), dt,
    X.data)`, as upstream's convolution writes its epilogue: a tile of bm rows read from one
    view (from a row offset that may break the alignment to W) and written to another, so
    the rows of one copy may cross rows of the owner (split into runs of whole owner rows
    where they line up, TMA boxes on sm_90a; element loops where they do not), with tiles
    past the last row and wider than F."""
    P = prog.prefix
    N, H, W = r.choice([1, 2, 3]), r.choice([1, 2, 4]), r.choice([4, 8, 16, 32])
    F = r.choice([8, 16, 32, 64, 128])
    rows = N * H * W
    bm = r.choice([d for d in (4, 8, 16, 32, 64, 128) if d <= 2 * rows])
    bn = r.choice([c for c in (8, 16, 32, 64, 128, 256) if c <= 2 * F])
    dt = r.choice(["float16", "bfloat16", "float32"])
    off = r.choice([0, 0, 0, W, W // 2, 1])
    scope = r.choice(["shared", "shared", "fragment"])
    threads = r.choice([32, 64, 128, 128, 256])
    c = r.choice([1.0, 2.0, -0.5])
    X = Param(f"{P}X", (N, H, W, F), dt, "in")
    O = Param(f"{P}O", (N, H, W, F), dt, "out")
    prog.params += [X, O]
    prog.touch(dt)
    prog.notes.append(f"flat views: owner {N}x{H}x{W}x{F} {dt}, tile {bm}x{bn} ({scope}), row offset {off}, "
                      f"c={c} threads={threads}")
    b = Body()
    b(f"with T.Kernel(T.ceildiv({F}, {bn}), T.ceildiv({rows}, {bm}), threads={threads}) as (bx, by):")
    with b.indent():
        b(f'x_flat = T.Tensor(({rows}, {F}), "{dt}", {X.name}.data)')
        b(f'o_flat = T.Tensor(({rows}, {F}), "{dt}", {O.name}.data)')
        b(f's = T.alloc_{scope}(({bm}, {bn}), "{dt}")')
        start = f"by * {bm} + {off}" if off else f"by * {bm}"
        b(f"T.copy(x_flat[{start}, bx * {bn}], s)")
        if c != 1.0:
            b(f"for i, j in T.Parallel({bm}, {bn}):")
            with b.indent():
                b(f"s[i, j] = s[i, j] * {c}")
        if scope == "fragment":
            b(f's2 = T.alloc_shared(({bm}, {bn}), "{dt}")')
            b("T.copy(s, s2)")
            b(f"T.copy(s2, o_flat[by * {bm}, bx * {bn}])")
        else:
            b(f"T.copy(s, o_flat[by * {bm}, bx * {bn}])")
    prog.body = b.lines

    def ref(arr, run):
        x = arr[X.name].astype(np.float64).reshape(rows, F)
        o = np.full((rows, F), np.nan)
        for by in range(ceildiv(rows, bm)):
            for bx in range(ceildiv(F, bn)):
                t = tile_pad(x, by * bm + off, bx * bn, bm, bn)
                tile_store(o, rnd(t * c, dt), by * bm, bx * bn)
        return {O.name: o.reshape(N, H, W, F)}
    prog.ref = ref


def gen_fragment_windows(r, prog):
    """Windows of register fragments: GEMM accumulators (which live in registers on CUDA;
    a fragment only copied and computed element-wise is kept in shared memory), a window of
    one copied out to global memory (directly or through a shared tile), and a tile copied
    into a window of the other, whose other elements keep their values."""
    P = prog.prefix
    bm, bn, K = r.choice([16, 32, 64]), r.choice([16, 32, 64]), 16
    r0, r1 = sorted(r.sample(range(bm + 1), 2))
    c0, c1 = sorted(r.sample(range(bn + 1), 2))
    threads = r.choice([32, 64, 128, 128])
    via_shared = r.random() < 0.5
    A = Param(f"{P}A", (bm, K), "float16", "in")
    B = Param(f"{P}B", (K, bn), "float16", "in")
    Y = Param(f"{P}Y", (bm, bn), "float32", "in")
    O = Param(f"{P}O", (bm, bn), "float32", "out")
    Q = Param(f"{P}Q", (bm, bn), "float32", "out")
    prog.params += [A, B, Y, O, Q]
    prog.touch("float16", "float32")
    prog.tol = max(prog.tol, 2e-4)
    prog.notes.append(f"fragment windows: {bm}x{bn}, rows {r0}:{r1}, cols {c0}:{c1}, via_shared={via_shared} "
                      f"threads={threads}")
    win = f"[{r0}:{r1}, {c0}:{c1}]"
    b = Body()
    b(f"with T.Kernel(1, threads={threads}) as _:")
    with b.indent():
        b(f'a = T.alloc_shared(({bm}, {K}), "float16")')
        b(f'bs = T.alloc_shared(({K}, {bn}), "float16")')
        b(f'f = T.alloc_fragment(({bm}, {bn}), "float32")')
        b(f'g = T.alloc_fragment(({bm}, {bn}), "float32")')
        b(f"T.copy({A.name}, a)")
        b(f"T.copy({B.name}, bs)")
        b("T.gemm(a, bs, f, clear_accum=True)")
        b("T.gemm(a, bs, g, clear_accum=True)")
        b(f"for i, j in T.Parallel({bm}, {bn}):")
        with b.indent():
            b("g[i, j] = g[i, j] + 1")
        if via_shared:
            b(f's = T.alloc_shared(({r1 - r0}, {c1 - c0}), "float32")')
            b(f"T.copy(f{win}, s)")
            b(f"T.copy(s, {O.name}{win})")
            b(f"T.copy(s, g{win})")
        else:
            b(f"T.copy(f{win}, {O.name}{win})")
            b(f"T.copy({Y.name}{win}, g{win})")
        b(f"T.copy(g, {Q.name})")
    prog.body = b.lines

    def ref(arr, run):
        f = arr[A.name].astype(np.float64) @ arr[B.name].astype(np.float64)
        o = np.full((bm, bn), np.nan)
        o[r0:r1, c0:c1] = f[r0:r1, c0:c1]
        g = f + 1
        g[r0:r1, c0:c1] = (f if via_shared else arr[Y.name].astype(np.float64))[r0:r1, c0:c1]
        return {O.name: o, Q.name: g}
    prog.ref = ref


KINDS = {
    "copy": (gen_copy, 2), "elementwise": (gen_elementwise, 4), "reduce": (gen_reduce, 3),
    "gemm": (gen_gemm, 3), "pipeline": (gen_pipeline, 2), "atomic": (gen_atomic, 2),
    "control": (gen_control, 2), "cumsum": (gen_cumsum, 1), "attention": (gen_attention, 2),
    "threads": (gen_threads, 1.5), "intops": (gen_intops, 2), "reject": (gen_reject, 0.2),
    "views": (gen_views, 1),
    # opt-in (weight 0): added last, so every other seed draws the program it always did
    "hopper": (gen_hopper, 0),
    "reducers": (gen_reducers, 0),
    "dtype_views": (gen_dtype_views, 0),
    "gathers": (gen_gathers, 0),
    "wide_elementwise": (gen_wide_elementwise, 0),
    "async_gathers": (gen_async_gathers, 0),
    "f16_acc_gemms": (gen_f16_acc_gemms, 0),
    "flat_views": (gen_flat_views, 0),
    "fragment_windows": (gen_fragment_windows, 0),
}


def generate(seed: int, prefix: str = "", kinds=None) -> Program:
    r = random.Random(seed)
    names = [k for k in KINDS if kinds is None or k in kinds]
    # an opt-in kind named in `kinds` counts as weight 1: mixed with default kinds
    # ("hopper,views") it is drawn too, not crowded out by its weight of 0
    weights = [KINDS[k][1] or (1 if kinds is not None else 0) for k in names]
    kind = r.choices(names, weights=weights)[0]
    prog = Program(seed=seed, prefix=prefix or f"p{seed}_", kind=kind)
    KINDS[kind][0](r, prog)
    prog.tol = max(prog.tol, 1e-9)
    return prog


def make_inputs(prog: Program, run: int):
    """Concrete arguments for one run: {name: numpy array or scalar}."""
    rng = np.random.default_rng([prog.seed & 0xFFFFFFFF, run])
    vals = {nm: v[run] for nm, v in prog.dyn.items()}
    args = {}
    for p in prog.params:
        if p.scalar:
            args[p.name] = prog.scalar_vals[p.name][run]
            continue
        shape = tuple(s if isinstance(s, int) else (int(s) if str(s).isdigit() else vals[s]) for s in p.shape)
        dt = NPD[p.dtype]
        if p.role == "out":
            if is_int(p.dtype):
                a = np.full(shape, np.iinfo(dt).min + 7, dtype=dt)
            else:
                a = np.full(shape, np.nan, dtype=dt)
        elif is_int(p.dtype) and p.init.startswith("index:"):
            # row numbers of a tensor with that many rows, one past each end included
            a = rng.integers(-1, int(p.init.split(":")[1]) + 1, size=shape).astype(dt)
        elif is_int(p.dtype):
            lo, hi = (-4, 5) if p.dtype != "int8" else (-3, 4)
            a = rng.integers(lo, hi, size=shape).astype(dt)
        elif p.init == "unit":
            a = rng.uniform(-1, 1, size=shape).astype(dt)
        else:
            a = rng.standard_normal(shape).astype(dt)
        args[p.name] = a
    return args
