"""``TensorCoreIntrinEmitter``: warp-level tensor-core GEMM written by hand, with upstream's
constructor and methods (``ldmatrix_a``, ``ldmatrix_b``, ``mma``, ``mma_atom``, ``stmatrix``).

Each warp owns ``warp_row_tiles x warp_col_tiles`` of the block's ``C`` and multiplies it in
16 x n x k steps (k = 16 for 16-bit inputs, 32 for 8-bit, 8 for float32 as tf32; n = 16, or 8
when ``warp_col_tiles`` is not a multiple of 16). The user allocates the per-thread arrays
(``T.alloc_local``) of ``local_size_a`` / ``local_size_b`` / ``local_size_out`` elements per
micro tile; the methods fill and consume them in mma.sync's register order
(templates/tl/cuda/mma.h): for a lane, g = lane // 4 and q = lane % 4, and with ``per``
elements to a 32-bit register (2, 4, 1),

- A's element v of a 16 x k tile is row g + 8 * (r % 2), column per * q + k/2 * (r // 2) + v % per,
  where r = v // per;
- B's element v of an n x k tile (the n8 halves one after the other) is row (n) g + 8 * (v // (2 per)),
  column (k) per * q + k/2 * ((v // per) % 2) + v % per;
- C's element v of a 16 x n tile is row g + 8 * ((v % 4) // 2), column 8 * (v // 4) + 2 * q + v % 2.

The operand loads of 16-bit tiles whose rows are whole 16-byte chunks are ``ldmatrix_operand``
intrinsics, one per micro tile: printed as one ``ldmatrix`` on CUDA (``tl.emitter_ldmatrix``, on
by default), else, and on the CPU, the element reads of the same registers
(lower-ldmatrix-operands); other operands are plain per-thread reads of the shared tile.
``mma`` is one ``mma_fragment`` intrinsic per n8 half: mma.sync on CUDA, emulated lane by lane
on the CPU.
"""
from __future__ import annotations

from tilelang import _tl
from tilelang.language import builder as _b
from tilelang.language.tileops_extra import _Tile, _nest
from tilelang.language.values import Buffer, BufferRef, as_expr

from ..._unsupported import EMITTER_WHY, unsupported_class

# (input dtype, accumulator dtype) pairs mma.sync takes here, and the input's bits
_PAIRS = {("float16", "float32"), ("bfloat16", "float32"), ("float16", "float16"), ("int8", "int32"),
          ("uint8", "int32"), ("float32", "float32")}
_BITS = {"float16": 16, "bfloat16": 16, "int8": 8, "uint8": 8, "float32": 32}


def _name(dtype) -> str:
    from tilelang.language.dtypes import canonical

    return canonical(str(dtype))


class TensorCoreIntrinEmitter:
    """Warp-level mma.sync GEMM pieces (see the module docstring)."""

    M_DIM = 16
    WARP_SIZE = 32
    is_m_first = False

    def __init__(self, a_dtype="float16", b_dtype="float16", accum_dtype="float16", a_transposed=False,
                 b_transposed=False, block_row_warps=2, block_col_warps=2, warp_row_tiles=8, warp_col_tiles=8,
                 chunk=16, reduce_k=1, num_elems_per_byte=1, is_m_first=False, thread_var=None):
        self.a_dtype, self.b_dtype, self.accum_dtype = _name(a_dtype), _name(b_dtype), _name(accum_dtype)
        if self.a_dtype != self.b_dtype:
            raise ValueError(f"TensorCoreIntrinEmitter: a_dtype and b_dtype must be the same type here, got "
                             f"{self.a_dtype} and {self.b_dtype}")
        if (self.a_dtype, self.accum_dtype) not in _PAIRS:
            pairs = ", ".join(f"{a} -> {c}" for a, c in sorted(_PAIRS))
            raise ValueError(f"TensorCoreIntrinEmitter: inputs {self.a_dtype} accumulating in {self.accum_dtype} "
                             f"are not supported (a_dtype -> accum_dtype: {pairs})")
        if num_elems_per_byte != 1:
            raise ValueError(f"TensorCoreIntrinEmitter: num_elems_per_byte must be 1 (packed sub-byte operands are "
                             f"not supported), got {num_elems_per_byte}")
        self.a_transposed, self.b_transposed = bool(a_transposed), bool(b_transposed)
        self.block_row_warps, self.block_col_warps = int(block_row_warps), int(block_col_warps)
        self.warp_row_tiles, self.warp_col_tiles = int(warp_row_tiles), int(warp_col_tiles)
        self.chunk, self.reduce_k, self.num_elems_per_byte = int(chunk), int(reduce_k), num_elems_per_byte
        if is_m_first is not None:
            self.is_m_first = bool(is_m_first)
        self.thread_var = thread_var

        bits = _BITS[self.a_dtype]
        self.per_register = 32 // bits
        self.k_dim = 8 * self.per_register
        if self.chunk % self.k_dim:
            raise ValueError(f"TensorCoreIntrinEmitter: chunk must be a multiple of {self.k_dim} for {self.a_dtype} "
                             f"(mma.sync m16n8k{self.k_dim}), got {self.chunk}")
        if self.warp_row_tiles < 16 or self.warp_row_tiles % 16:
            raise ValueError(f"TensorCoreIntrinEmitter: warp_row_tiles must be a positive multiple of 16, got "
                             f"{self.warp_row_tiles}")
        if self.warp_col_tiles < 8 or self.warp_col_tiles % 8:
            raise ValueError(f"TensorCoreIntrinEmitter: warp_col_tiles must be a positive multiple of 8, got "
                             f"{self.warp_col_tiles}")
        self.n_dim = 16 if self.warp_col_tiles % 16 == 0 else 8
        self.micro_size_x, self.micro_size_y, self.micro_size_k = self.M_DIM, self.n_dim, self.k_dim
        self.warp_rows = self.warp_row_tiles // self.M_DIM
        self.warp_cols = self.warp_col_tiles // self.n_dim
        self.local_size_a = self.M_DIM * self.k_dim // self.WARP_SIZE
        self.local_size_b = self.n_dim * self.k_dim // self.WARP_SIZE
        self.local_size_out = self.M_DIM * self.n_dim // self.WARP_SIZE
        self.threads = self.WARP_SIZE * self.block_row_warps * self.block_col_warps * self.reduce_k
        self.mma_prefix = f"m16n8k{self.k_dim}"

    # ---- threads

    def get_thread_binding(self):
        if self.thread_var is not None:
            return self.thread_var
        from tilelang.language import get_thread_binding

        return get_thread_binding(0)

    def extract_thread_binding(self, thread_id, is_m_first=None):
        """(lane, warp_n, warp_m) of thread `thread_id`: warps along M first unless is_m_first
        says the warps run along N first (upstream's two orders)."""
        is_m_first = self.is_m_first if is_m_first is None else is_m_first
        w = self.WARP_SIZE
        lane = thread_id % w
        if is_m_first:
            warp_n = (thread_id // w) % self.block_col_warps
            warp_m = (thread_id // (w * self.block_col_warps)) % self.block_row_warps
        else:
            warp_m = (thread_id // w) % self.block_row_warps
            warp_n = (thread_id // (w * self.block_row_warps)) % self.block_col_warps
        return lane, warp_n, warp_m

    @property
    def mma_num_inst_m(self) -> int:
        return self.warp_rows

    @property
    def mma_num_inst_n(self) -> int:
        return self.warp_cols

    # ---- element positions inside a micro tile (module docstring)

    def _a_position(self, g, q, v):
        per, half_k = self.per_register, self.k_dim // 2
        r = v // per
        return g + 8 * (r % 2), per * q + half_k * (r // 2) + v % per

    def _b_position(self, g, q, v):
        """(n, k) of B's element v."""
        per, half_k = self.per_register, self.k_dim // 2
        return g + 8 * (v // (2 * per)), per * q + half_k * ((v // per) % 2) + v % per

    @staticmethod
    def _c_position(g, q, v):
        return g + 8 * ((v % 4) // 2), 8 * (v // 4) + 2 * q + v % 2

    # ---- the operations

    def _local(self, buf, what):
        if isinstance(buf, BufferRef):
            buf = buf.buffer
        if not isinstance(buf, Buffer) or buf.scope not in ("local", "local.var"):
            raise _b._UserError(f"TensorCoreIntrinEmitter.{what} takes a per-thread array (T.alloc_local), got "
                                f"{getattr(buf, 'name', type(buf).__name__)}"
                                f"{' in ' + buf.scope if isinstance(buf, Buffer) else ''}")
        return _Tile(buf, f"TensorCoreIntrinEmitter.{what}")

    @staticmethod
    def _shared(buf, what):
        tile = _Tile(buf, f"TensorCoreIntrinEmitter.{what}")
        if len(tile.extents) < 2:
            raise _b._UserError(f"TensorCoreIntrinEmitter.{what}: the operand tile must have two dimensions at "
                                f"least, got {tile.name} {tile.extents}")
        TensorCoreIntrinEmitter._ask_for_panels(tile.buffer)
        return tile

    @staticmethod
    def _ask_for_panels(buf):
        """Each lane reads rows g = lane // 4 of a micro tile, 4 bytes of each: in a plain
        row-major tile of 64- or 128k-byte rows, rows g and g + 2 (or g + 1) share their banks.
        Asks the CUDA plan for wgmma's panel layout (16-byte chunks XOR-ed by the row), where
        those reads are conflict-free, for the tiles it fits (panel_layout: no code; the CPU
        ignores it)."""
        if buf.scope not in ("shared", "shared.dyn") or len(buf.shape) < 2:
            return
        rows, cols = buf.shape[-2], buf.shape[-1]
        elem = _BITS.get(_name(buf.dtype), 0) // 8
        if not (isinstance(rows, int) and isinstance(cols, int)) or elem not in (2, 4) or rows % 8:
            return
        if cols * elem != 64 and (cols * elem) % 128:
            return
        at = _tl.call("handle", "address_of", [buf[tuple(0 for _ in buf.shape)].load().node])
        _b.emit(_tl.evaluate(_tl.call("void", "panel_layout", [at, at]), _b.current_span()))

    def _by_register(self, count, load, contiguous):
        """load(v, e) for the `count` elements, a register (`per_register` elements, consecutive
        along K) at a time: one vectorized access per register where they are consecutive in
        the shared tile too, element by element where they are not."""
        per = self.per_register
        for v in range(0, count, per):
            if contiguous and per > 1:
                _nest([per], ["vectorized"], lambda e, v=v: load(v, e[0]), prefix="e")
            else:
                for e in range(per):
                    load(v, e)

    def _lane(self):
        lane, warp_n, warp_m = self.extract_thread_binding(self.get_thread_binding())
        return lane // 4, lane % 4, warp_n, warp_m

    def _lane_of_thread(self):
        return self.extract_thread_binding(self.get_thread_binding())[0]

    def _ldmatrix_fits(self, S, shared_buf) -> bool:
        """Whether the operand loads can be ldmatrix: 16-bit elements, a whole shared tile (not a
        slice) whose rows are whole 16-byte chunks, so each matrix row is 16 aligned bytes in any
        of its layouts (plain, or chunks XOR-swizzled)."""
        if self.per_register != 2 or not isinstance(shared_buf, Buffer) or shared_buf.scope not in ("shared", "shared.dyn"):
            return False
        cols = S.extents[-1]
        return isinstance(cols, int) and (cols * 2) % 16 == 0 and all(isinstance(e, int) for e in S.extents)

    def ldmatrix_a(self, A_local_buf, A_shared_buf, ki, rk=0):
        """A's micro tiles of step `ki` (of reduction slice `rk`) from the shared tile ((K, M) when
        a_transposed, else (M, K)) into A_local_buf."""
        self._load_operand("ldmatrix_a", A_local_buf, A_shared_buf, ki, rk, "m", self.warp_rows,
                           self.warp_row_tiles, self.M_DIM, self.local_size_a, self._a_position,
                           k_first=self.a_transposed)

    def ldmatrix_b(self, B_local_buf, B_shared_buf, ki, rk=0):
        """B's micro tiles of step `ki` from the shared tile ((N, K) when b_transposed, else (K, N))."""
        self._load_operand("ldmatrix_b", B_local_buf, B_shared_buf, ki, rk, "n", self.warp_cols,
                           self.warp_col_tiles, self.n_dim, self.local_size_b, self._b_position,
                           k_first=not self.b_transposed)

    def _load_operand(self, what, local_buf, shared_buf, ki, rk, axis, tiles, warp_tiles, tile, size, position,
                      k_first):
        """The warp's `tiles` micro tiles along `axis` ("m" or "n"; `tile` rows of M or columns of
        N each, `size` elements per thread) of step `ki` into `local_buf`: element v of micro tile
        t is the shared tile's (mn, k) from position(g, q, v), stored (k, mn) when `k_first`."""
        _b.require_kernel(f"TensorCoreIntrinEmitter.{what}")
        L, S = self._local(local_buf, what), self._shared(shared_buf, what)
        g, q, warp_n, warp_m = self._lane()
        warp = warp_m if axis == "m" else warp_n
        lead = [0] * (len(S.extents) - 2)
        wk = rk * self.chunk + ki * self.k_dim
        lane = self._lane_of_thread()
        for t in range(tiles):
            base = warp * warp_tiles + t * tile
            if self._ldmatrix_fits(S, shared_buf):
                # One warp-wide ldmatrix per micro tile on CUDA (tl.emitter_ldmatrix, on); else
                # lower-ldmatrix-operands makes it the element loads of the same registers.
                # Matrix j of A is rows 8 (j % 2), columns (K) 8 (j // 2) of the 16 x 16 tile; of B,
                # n 8 (j // 2), k 8 (j % 2); stored (k, mn), the same with rows and columns swapped.
                along_rows = (axis == "m") != k_first
                steps = (1, 0, 0, 1) if along_rows else (0, 1, 1, 0)
                origin = [wk, base] if k_first else [base, wk]
                shape = [as_expr(v, "int32").node for v in (size // 2, int(k_first), *steps)]
                args = [self._address(L, t * size), self._element_address(S.buffer, lead + origin),
                        as_expr(lane, "int32").node, *shape]
                _b.emit(_tl.evaluate(_tl.call("void", "ldmatrix_operand", args), _b.current_span()))
                continue

            def load(v, e, t=t, base=base):  # element v + e of micro tile t; e runs along K in a register
                mn, k = position(g, q, v)
                at = [wk + k + e, base + mn] if k_first else [base + mn, wk + k + e]
                L.store([t * size + v + e], S.load(lead + at))

            self._by_register(size, load, contiguous=not k_first)

    def mma(self, A_local_buf, B_local_buf, C_local_buf, k_inner=0):
        """C += A * B over the warp's micro tiles."""
        for i in range(self.warp_rows):
            for j in range(self.warp_cols):
                self.mma_atom(A_local_buf, B_local_buf, C_local_buf, i, j, k_inner)

    def mma_atom(self, A_local_buf, B_local_buf, C_local_buf, inst_m_idx, inst_n_idx, k_inner=0):
        """C's micro tile (inst_m_idx, inst_n_idx) += A's row inst_m_idx * B's column inst_n_idx."""
        _b.require_kernel("TensorCoreIntrinEmitter.mma")
        A, B = self._local(A_local_buf, "mma"), self._local(B_local_buf, "mma")
        C = self._local(C_local_buf, "mma")
        for tile, want, what in ((A, self.a_dtype, "A"), (B, self.b_dtype, "B"), (C, self.accum_dtype, "C")):
            if _name(tile.buffer.dtype) != want:
                raise _b._UserError(f"TensorCoreIntrinEmitter.mma: {what} ({tile.name}) must be {want} as the emitter "
                                    f"was made, got {_name(tile.buffer.dtype)}")
        a_off = inst_m_idx * self.local_size_a
        b_off = inst_n_idx * self.local_size_b
        c_off = (inst_m_idx * self.warp_cols + inst_n_idx) * self.local_size_out
        halves = self.n_dim // 8
        for h in range(halves):
            args = [self._address(C, c_off + 4 * h), self._address(A, a_off),
                    self._address(B, b_off + h * (self.local_size_b // halves))]
            _b.emit(_tl.evaluate(_tl.call("void", "mma_fragment", args), _b.current_span()))

    @staticmethod
    def _address(tile, offset):
        return TensorCoreIntrinEmitter._element_address(tile.buffer, [offset])

    @staticmethod
    def _element_address(buf, indices):
        load = buf[tuple(as_expr(i, "int32") for i in indices)].load()
        return _tl.call("handle", "address_of", [load.node])

    def stmatrix(self, C_local_buf, C_buf, pid_m=None, pid_n=None):
        """The warp's C micro tiles into C_buf: a (M/16, N/n, 16, n) or (M, N) tile of the block, or,
        with pid_m and pid_n, the (M, N) global tensor at block (pid_m, pid_n)."""
        _b.require_kernel("TensorCoreIntrinEmitter.stmatrix")
        L = self._local(C_local_buf, "stmatrix")
        D = _Tile(C_buf, "TensorCoreIntrinEmitter.stmatrix")
        if len(D.extents) not in (2, 4):
            raise _b._UserError(f"TensorCoreIntrinEmitter.stmatrix: C_buf must be 2-D or 4-D, got {D.name} "
                                f"{D.extents}")
        g, q, warp_n, warp_m = self._lane()
        block_m, block_n = self.block_row_warps * self.warp_rows, self.block_col_warps * self.warp_cols

        def store(ijv):
            i, j, v = ijv
            ti, tj = warp_m * self.warp_rows + i, warp_n * self.warp_cols + j
            if pid_m is not None and pid_n is not None:
                ti, tj = pid_m * block_m + ti, pid_n * block_n + tj
            row, col = self._c_position(g, q, v)
            at = [ti, tj, row, col] if len(D.extents) == 4 else [ti * self.M_DIM + row, tj * self.n_dim + col]
            D.store(at, L.load([(i * self.warp_cols + j) * self.local_size_out + v]))

        # One loop nest, not one statement per element: the threads' stores are one piece of
        # work to the barrier pass, which otherwise orders each against the one before it.
        _nest([self.warp_rows, self.warp_cols, self.local_size_out], ["unroll"] * 3, store, prefix="c")

    def make_mma_load_layout(self, local_buf, matrix="A"):
        raise NotImplementedError("TensorCoreIntrinEmitter.make_mma_load_layout (a T.Fragment of the operand "
                                  "registers) is not provided by this compiler; use T.alloc_local arrays with "
                                  "ldmatrix_a / ldmatrix_b")

    def make_mma_store_layout(self, local_buf):
        raise NotImplementedError("TensorCoreIntrinEmitter.make_mma_store_layout (a T.Fragment of the "
                                  "accumulator) is not provided by this compiler; use a T.alloc_local array "
                                  "with stmatrix")


TensorCoreIntrinEmitterWithLadderTransform = unsupported_class("TensorCoreIntrinEmitterWithLadderTransform",
                                                               EMITTER_WHY)

__all__ = ["TensorCoreIntrinEmitter", "TensorCoreIntrinEmitterWithLadderTransform"]
