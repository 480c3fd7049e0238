// SPDX-License-Identifier: Apache-2.0
/// \file Hopper warpgroup MMA (wgmma.mma_async, sm_90a only) and the block GEMM built on it.
///
/// gemm_ss_wgmma<M, N, K, TransA, TransB>(A, B, C):
///   C (M x N, f32, registers) += op(A) (M x K) * op(B) (K x N), A and B tl::half or
///   tl::bfloat16 in shared memory. All threads of the block call it; the block has exactly
///   M/16 warps. Warpgroup g (warps 4g .. 4g+3) computes rows 64g .. 64g+63 with
///   wgmma.mma_async.m64nNk16, one instruction per k16 step and per column chunk of at most
///   256 (the largest N of the instruction). On return C is complete and A and B may be
///   overwritten. For tl::half A and B, C may be tl::half too (wgmma .f16 accumulators,
///   wgmma_f16_acc.h: the same places, two values per register), per warpgroup N a multiple
///   of 16.
///
/// gemm_rs_wgmma<M, N, K, TransB>(A, B, C):
///   C (M x N, f32, registers) += A (M x K, registers) * op(B) (K x N, shared memory), with
///   the same block shape, instructions, C layout and B layout as gemm_ss_wgmma, but the
///   register-A form of wgmma.mma_async (operands d, {a0, a1, a2, a3}, b-desc, scale-d,
///   imm-scale-a, imm-scale-b, imm-trans-b: no A descriptor and no imm-trans-a). A points to
///   the thread's K/2 values of T, the M x K tile in the ACCUMULATOR LAYOUT below with K in
///   place of N (what gemm_rs in tile_ops.h takes with WM = M/16): lane l of warp w holds in
///   A[kt*4 + h*2 + c] (kt = 0 .. K/8-1) row 16w + l/4 + 8h, column kt*8 + 2*(l%4) + c.
///   The k16 step at k = 16s takes the tiles kt = 2s and 2s+1 and packs them, low element
///   in bits 0..15, into the instruction's four .f16x2 / .bf16x2 registers: a0 = tile 2s
///   regs 0, 1; a1 = tile 2s regs 2, 3; a2 = tile 2s+1 regs 0, 1; a3 = tile 2s+1 regs 2, 3
///   (the packing gemm_rs gives mma.sync m16n8k16). That is the A fragment of wgmma
///   .m64nNk16 (PTX ISA, "Register Fragments", figure "WGMMA .m64nNk16 register fragment
///   layout for matrix A"): warp r of the warpgroup holds rows 16r .. 16r+15 of the 64 and,
///   with groupID = l/4 and threadID_in_group = l%4, elements a0..a7 (two per register, low
///   half first) sit at row groupID (a0, a1, a4, a5) or groupID + 8 (a2, a3, a6, a7) and
///   column 2*threadID_in_group + i%2, plus 8 for a4..a7. Row 16r + l/4 + 8h of warpgroup g
///   is row 16w + l/4 + 8h of the block (w = 4g + r), so each thread passes its own values
///   and nothing moves between threads.
///
/// ACCUMULATOR LAYOUT (each thread holds N/2 floats). Warp w owns rows 16w .. 16w+15; lane l
/// holds in C[nt*4 + h*2 + c] (nt = 0 .. N/8-1, h, c = 0 or 1) the element
///   row 16w + l/4 + 8h, column nt*8 + 2*(l%4) + c.
/// This is the mma.sync m16n8 accumulator layout of mma.h, one 16x8 tile after the other
/// along N (layout::MmaAccumulatorLayout with M/16 x 1 warps), and it is exactly the f32 D
/// fragment of wgmma .m64nNk16 (PTX ISA, "Register Fragments", figure "WGMMA .m64nNk16
/// register fragment layout for accumulator matrix D"): warp r of the warpgroup holds rows
/// 16r .. 16r+15 of the 64, and d_i sits at row groupID + 8*((i/2)%2), column
/// (i/4)*8 + 2*threadID_in_group + i%2. A column chunk starting at n0 is therefore just the
/// registers from C + n0/2 on.
///
/// SHARED-MEMORY LAYOUT (both operands). A tile is stored row-major as R x Cc, its
/// contiguous dimension Cc a multiple of 64 elements (128 bytes) cut into column panels of
/// 64: element (r, c) lies at element offset (c/64)*(R*64) + r*64 + c%64 of the tile base,
/// and that byte offset b is then swizzled to b ^ (((b >> 7) & 7) << 4): the 16-byte chunk
/// index XORed with the row modulo 8. Tile bases are 1024-byte aligned, R a multiple of 8.
///   A, !TransA: M x K  (K-major)       A, TransA: K x M  (M-major, imm-trans-a = 1)
///   B, !TransB: K x N  (N-major, imm-trans-b = 1)    B, TransB: N x K  (K-major)
/// This is the PTX ISA's 128-byte swizzling mode: each panel is a column of "swizzle atoms"
/// of 8 rows x 128 bytes (1024 bytes, 1024-aligned), and inside an atom 16-byte chunk j of
/// row r is stored at chunk j ^ r. The hardware applies the XOR to address bits [4, 7) from
/// bits [7, 10), which is why the atoms must be 1024-byte aligned.
///
/// DESCRIPTORS (PTX ISA "Matrix Descriptor Format"): a 64-bit value with the start address
/// in bits 0-13, the leading-dimension byte offset (LBO) in bits 16-29 and the
/// stride-dimension byte offset (SBO) in bits 32-45, each encoded as (x & 0x3FFFF) >> 4;
/// the base offset in bits 49-51 (0: the swizzle pattern repeats from 1024-byte boundaries,
/// as here) and the swizzle mode in bits 62-63 (1 = 128-byte swizzle). What LBO and SBO mean
/// depends on the major-ness ("Major-ness supported by strides"), with rows of 128 bytes:
///   K-major:  SBO = 1024, the distance between 8-row groups along M (or N); LBO is unused
///             for swizzled K-major layouts ("assumed to be 1"), so it is set to 1 (16 bytes).
///             A k16 step is 32 bytes of a 128-byte row: the start address moves by
///             (k/64) * (panel bytes) + (k%64) * 2 inside the atom, and the hardware's address
///             XOR then finds the swizzled chunks, since the atom itself stays 1024-aligned
///             (base offset 0; checked on an H200 by tests/cuda/wgmma_test.cu).
///   MN-major: SBO = 1024, the distance between 8-row groups along K; LBO = the distance
///             between 64-element panels along M (or N) = (stored rows) * 128 = K * 128. A
///             k16 step is 16 stored rows: the start address moves by k * 128 bytes.
/// K = 32 exception: a K-major operand of 32 columns is one 32-element panel (64-byte rows) in
/// the 64-byte swizzling mode (swizzle mode 2, b ^ (((b >> 7) & 3) << 4), 512-byte atoms of
/// 8 rows): SBO = 512, and rows are 64 bytes where the text says 128.
/// Warpgroup g starts at row 64g of A (K-major: + 64g * 128 bytes; M-major: panel g,
/// + g * K * 128 bytes); the B chunk at column n0 starts at row n0 (K-major: + n0 * 128) or
/// at panel n0/64 (N-major: + (n0/64) * K * 128), plus (n0 % 64) * 2 bytes when warpgroups
/// split one panel of N-major B (each warpgroup's N dividing 64).
///
/// ORDERING. The callers have written A and B with generic-proxy stores or cp.async and then
/// synchronised the block; wgmma reads shared memory through the async proxy, so the
/// function first issues fence.proxy.async.shared::cta, then wgmma.fence (required before
/// the first wgmma touching registers that other instructions wrote), the wgmmas,
/// wgmma.commit_group and wgmma.wait_group 0. The accumulators are "+f" operands of every
/// wgmma, and empty asm statements pin them in registers before the fence and after the
/// wait, so the compiler can neither read them while the wgmmas are in flight nor move
/// other accesses across. gemm_rs_wgmma packs all of A's registers before the fence and
/// pins them the same way: the instruction reads them asynchronously, so they must be
/// written before wgmma.fence and stay unchanged until wgmma.wait_group returns.
///
/// Everything here needs sm_90a (__CUDA_ARCH_FEAT_SM90_ALL). The header compiles for every
/// target; instantiating the templates for another device target is a compile-time error,
/// and the non-template helpers trap there.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TL_WGMMA_AVAILABLE 1
#else
#define TL_WGMMA_AVAILABLE 0
#endif

namespace tl {

namespace detail {
/// False for every T, but only once T is known: static_asserts in templates that must not
/// be instantiated.
template <typename T>
struct wgmma_unavailable {
  static constexpr bool value = false;
};
}  // namespace detail

/// Orders this thread's earlier generic-proxy accesses to shared memory (st.shared,
/// cp.async results) before its later async-proxy accesses (wgmma operand reads). sm_90+.
TL_DEVICE void fence_proxy_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// wgmma.fence: orders earlier register and shared-memory accesses before the next
/// wgmma.mma_async of the warp (all threads of the warp execute it).
TL_DEVICE void wgmma_fence() {
#if TL_WGMMA_AVAILABLE
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// Closes the group of wgmma.mma_async operations this warp issued since the last commit.
TL_DEVICE void wgmma_commit_group() {
#if TL_WGMMA_AVAILABLE
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// Waits until at most N of this warp's committed wgmma groups are pending (0: all done).
template <int N>
TL_DEVICE void wgmma_wait_group() {
  static_assert(N >= 0, "wgmma_wait_group<N>: N must be >= 0");
#if TL_WGMMA_AVAILABLE
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#elif defined(__CUDA_ARCH__)
  static_assert(detail::wgmma_unavailable<char[N + 1]>::value, "wgmma needs sm_90a");
#endif
}

/// Descriptor of a wgmma operand in the 128-byte swizzling mode (see the file comment):
/// start = .shared address of the first element, lbo / sbo in bytes (multiples of 16).
/// Built as two 32-bit words: the start address and lbo in the low one, sbo and the mode in
/// the high one, which stays a constant the compiler keeps in a uniform register.
TL_DEVICE uint64_t wgmma_desc_sw128(uint32_t start, uint32_t lbo, uint32_t sbo, uint32_t mode = 1) {
  const uint32_t lo = ((start & 0x3FFFFu) >> 4) | (((lbo & 0x3FFFFu) >> 4) << 16);
  const uint32_t hi = ((sbo & 0x3FFFFu) >> 4) | (mode << 30);
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

/// `desc` moved `bytes` (a multiple of 16) further into shared memory. Only the 14-bit start
/// address changes and an address below 256 KB never carries out of it, so the sum stays in
/// the low word: a 64-bit add would make the compiler carry into the high word before every
/// wgmma (UIADD3 + UIADD3.X in each k step of a GEMM's loop).
TL_DEVICE uint64_t wgmma_desc_advance(uint64_t desc, uint32_t bytes) {
  return (desc & 0xFFFFFFFF00000000ull) | static_cast<uint32_t>(static_cast<uint32_t>(desc) + (bytes >> 4));
}

/// Keeps the R floats of d in registers at this point of the program: no access to them
/// moves across it (the empty asm "reads and writes" each one).
template <int R>
TL_DEVICE void wgmma_hold(float* d) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
/// The same for R 32-bit registers (wgmma's A operand in registers).
template <int R>
TL_DEVICE void wgmma_hold(uint32_t* r) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+r"(r[i])::"memory");
}
/// The same for R float16 accumulators (an even count), held as the R/2 32-bit registers
/// wgmma's .f16 accumulator packs them in (two columns each, the lower one in bits 0..15).
template <int R>
TL_DEVICE void wgmma_hold(half* d) {
  static_assert(R % 2 == 0, "wgmma_hold: float16 accumulators come in pairs");
  wgmma_hold<R / 2>(reinterpret_cast<uint32_t*>(d));
}

// --- One wgmma.mma_async.m64nNk16 with an f32 accumulator --------------------
// The asm statement names every accumulator register, so each N needs its own operand
// list: TL_WGMMA_D<N> is the "%0, ..., %(N/2-1)" text, TL_WGMMA_OPS<N>(d) binds those
// operands to d[0 .. N/2-1] ("+f": read and written), and TL_WGMMA_IN<N> names the inputs
// that follow them: a-desc, b-desc, scale-d (the predicate p, always true: D += A*B),
// imm-scale-a = imm-scale-b = 1, imm-trans-a, imm-trans-b. TL_WGMMA_RS_IN<N> names the
// inputs of the register-A form: the four A registers, b-desc, p, 1, 1, imm-trans-b.
// clang-format off
#define TL_WGMMA_D8 "%0, %1, %2, %3"
#define TL_WGMMA_D16 TL_WGMMA_D8 ", %4, %5, %6, %7"
#define TL_WGMMA_D24 TL_WGMMA_D16 ", %8, %9, %10, %11"
#define TL_WGMMA_D32 TL_WGMMA_D24 ", %12, %13, %14, %15"
#define TL_WGMMA_D40 TL_WGMMA_D32 ", %16, %17, %18, %19"
#define TL_WGMMA_D48 TL_WGMMA_D40 ", %20, %21, %22, %23"
#define TL_WGMMA_D56 TL_WGMMA_D48 ", %24, %25, %26, %27"
#define TL_WGMMA_D64 TL_WGMMA_D56 ", %28, %29, %30, %31"
#define TL_WGMMA_D72 TL_WGMMA_D64 ", %32, %33, %34, %35"
#define TL_WGMMA_D80 TL_WGMMA_D72 ", %36, %37, %38, %39"
#define TL_WGMMA_D88 TL_WGMMA_D80 ", %40, %41, %42, %43"
#define TL_WGMMA_D96 TL_WGMMA_D88 ", %44, %45, %46, %47"
#define TL_WGMMA_D104 TL_WGMMA_D96 ", %48, %49, %50, %51"
#define TL_WGMMA_D112 TL_WGMMA_D104 ", %52, %53, %54, %55"
#define TL_WGMMA_D120 TL_WGMMA_D112 ", %56, %57, %58, %59"
#define TL_WGMMA_D128 TL_WGMMA_D120 ", %60, %61, %62, %63"
#define TL_WGMMA_D136 TL_WGMMA_D128 ", %64, %65, %66, %67"
#define TL_WGMMA_D144 TL_WGMMA_D136 ", %68, %69, %70, %71"
#define TL_WGMMA_D152 TL_WGMMA_D144 ", %72, %73, %74, %75"
#define TL_WGMMA_D160 TL_WGMMA_D152 ", %76, %77, %78, %79"
#define TL_WGMMA_D168 TL_WGMMA_D160 ", %80, %81, %82, %83"
#define TL_WGMMA_D176 TL_WGMMA_D168 ", %84, %85, %86, %87"
#define TL_WGMMA_D184 TL_WGMMA_D176 ", %88, %89, %90, %91"
#define TL_WGMMA_D192 TL_WGMMA_D184 ", %92, %93, %94, %95"
#define TL_WGMMA_D200 TL_WGMMA_D192 ", %96, %97, %98, %99"
#define TL_WGMMA_D208 TL_WGMMA_D200 ", %100, %101, %102, %103"
#define TL_WGMMA_D216 TL_WGMMA_D208 ", %104, %105, %106, %107"
#define TL_WGMMA_D224 TL_WGMMA_D216 ", %108, %109, %110, %111"
#define TL_WGMMA_D232 TL_WGMMA_D224 ", %112, %113, %114, %115"
#define TL_WGMMA_D240 TL_WGMMA_D232 ", %116, %117, %118, %119"
#define TL_WGMMA_D248 TL_WGMMA_D240 ", %120, %121, %122, %123"
#define TL_WGMMA_D256 TL_WGMMA_D248 ", %124, %125, %126, %127"

#define TL_WGMMA_OPS8(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define TL_WGMMA_OPS16(d) TL_WGMMA_OPS8(d), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define TL_WGMMA_OPS24(d) TL_WGMMA_OPS16(d), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
#define TL_WGMMA_OPS32(d) TL_WGMMA_OPS24(d), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define TL_WGMMA_OPS40(d) TL_WGMMA_OPS32(d), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19])
#define TL_WGMMA_OPS48(d) TL_WGMMA_OPS40(d), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
#define TL_WGMMA_OPS56(d) TL_WGMMA_OPS48(d), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
#define TL_WGMMA_OPS64(d) TL_WGMMA_OPS56(d), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define TL_WGMMA_OPS72(d) TL_WGMMA_OPS64(d), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])
#define TL_WGMMA_OPS80(d) TL_WGMMA_OPS72(d), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
#define TL_WGMMA_OPS88(d) TL_WGMMA_OPS80(d), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43])
#define TL_WGMMA_OPS96(d) TL_WGMMA_OPS88(d), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define TL_WGMMA_OPS104(d) TL_WGMMA_OPS96(d), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51])
#define TL_WGMMA_OPS112(d) TL_WGMMA_OPS104(d), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
#define TL_WGMMA_OPS120(d) TL_WGMMA_OPS112(d), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59])
#define TL_WGMMA_OPS128(d) TL_WGMMA_OPS120(d), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define TL_WGMMA_OPS136(d) TL_WGMMA_OPS128(d), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67])
#define TL_WGMMA_OPS144(d) TL_WGMMA_OPS136(d), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71])
#define TL_WGMMA_OPS152(d) TL_WGMMA_OPS144(d), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75])
#define TL_WGMMA_OPS160(d) TL_WGMMA_OPS152(d), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
#define TL_WGMMA_OPS168(d) TL_WGMMA_OPS160(d), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83])
#define TL_WGMMA_OPS176(d) TL_WGMMA_OPS168(d), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define TL_WGMMA_OPS184(d) TL_WGMMA_OPS176(d), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91])
#define TL_WGMMA_OPS192(d) TL_WGMMA_OPS184(d), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define TL_WGMMA_OPS200(d) TL_WGMMA_OPS192(d), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99])
#define TL_WGMMA_OPS208(d) TL_WGMMA_OPS200(d), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103])
#define TL_WGMMA_OPS216(d) TL_WGMMA_OPS208(d), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107])
#define TL_WGMMA_OPS224(d) TL_WGMMA_OPS216(d), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define TL_WGMMA_OPS232(d) TL_WGMMA_OPS224(d), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115])
#define TL_WGMMA_OPS240(d) TL_WGMMA_OPS232(d), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119])
#define TL_WGMMA_OPS248(d) TL_WGMMA_OPS240(d), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123])
#define TL_WGMMA_OPS256(d) TL_WGMMA_OPS248(d), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

#define TL_WGMMA_IN8 "%4, %5, p, 1, 1, %6, %7"
#define TL_WGMMA_IN16 "%8, %9, p, 1, 1, %10, %11"
#define TL_WGMMA_IN24 "%12, %13, p, 1, 1, %14, %15"
#define TL_WGMMA_IN32 "%16, %17, p, 1, 1, %18, %19"
#define TL_WGMMA_IN40 "%20, %21, p, 1, 1, %22, %23"
#define TL_WGMMA_IN48 "%24, %25, p, 1, 1, %26, %27"
#define TL_WGMMA_IN56 "%28, %29, p, 1, 1, %30, %31"
#define TL_WGMMA_IN64 "%32, %33, p, 1, 1, %34, %35"
#define TL_WGMMA_IN72 "%36, %37, p, 1, 1, %38, %39"
#define TL_WGMMA_IN80 "%40, %41, p, 1, 1, %42, %43"
#define TL_WGMMA_IN88 "%44, %45, p, 1, 1, %46, %47"
#define TL_WGMMA_IN96 "%48, %49, p, 1, 1, %50, %51"
#define TL_WGMMA_IN104 "%52, %53, p, 1, 1, %54, %55"
#define TL_WGMMA_IN112 "%56, %57, p, 1, 1, %58, %59"
#define TL_WGMMA_IN120 "%60, %61, p, 1, 1, %62, %63"
#define TL_WGMMA_IN128 "%64, %65, p, 1, 1, %66, %67"
#define TL_WGMMA_IN136 "%68, %69, p, 1, 1, %70, %71"
#define TL_WGMMA_IN144 "%72, %73, p, 1, 1, %74, %75"
#define TL_WGMMA_IN152 "%76, %77, p, 1, 1, %78, %79"
#define TL_WGMMA_IN160 "%80, %81, p, 1, 1, %82, %83"
#define TL_WGMMA_IN168 "%84, %85, p, 1, 1, %86, %87"
#define TL_WGMMA_IN176 "%88, %89, p, 1, 1, %90, %91"
#define TL_WGMMA_IN184 "%92, %93, p, 1, 1, %94, %95"
#define TL_WGMMA_IN192 "%96, %97, p, 1, 1, %98, %99"
#define TL_WGMMA_IN200 "%100, %101, p, 1, 1, %102, %103"
#define TL_WGMMA_IN208 "%104, %105, p, 1, 1, %106, %107"
#define TL_WGMMA_IN216 "%108, %109, p, 1, 1, %110, %111"
#define TL_WGMMA_IN224 "%112, %113, p, 1, 1, %114, %115"
#define TL_WGMMA_IN232 "%116, %117, p, 1, 1, %118, %119"
#define TL_WGMMA_IN240 "%120, %121, p, 1, 1, %122, %123"
#define TL_WGMMA_IN248 "%124, %125, p, 1, 1, %126, %127"
#define TL_WGMMA_IN256 "%128, %129, p, 1, 1, %130, %131"

#define TL_WGMMA_RS_IN8 "{%4, %5, %6, %7}, %8, p, 1, 1, %9"
#define TL_WGMMA_RS_IN16 "{%8, %9, %10, %11}, %12, p, 1, 1, %13"
#define TL_WGMMA_RS_IN24 "{%12, %13, %14, %15}, %16, p, 1, 1, %17"
#define TL_WGMMA_RS_IN32 "{%16, %17, %18, %19}, %20, p, 1, 1, %21"
#define TL_WGMMA_RS_IN40 "{%20, %21, %22, %23}, %24, p, 1, 1, %25"
#define TL_WGMMA_RS_IN48 "{%24, %25, %26, %27}, %28, p, 1, 1, %29"
#define TL_WGMMA_RS_IN56 "{%28, %29, %30, %31}, %32, p, 1, 1, %33"
#define TL_WGMMA_RS_IN64 "{%32, %33, %34, %35}, %36, p, 1, 1, %37"
#define TL_WGMMA_RS_IN72 "{%36, %37, %38, %39}, %40, p, 1, 1, %41"
#define TL_WGMMA_RS_IN80 "{%40, %41, %42, %43}, %44, p, 1, 1, %45"
#define TL_WGMMA_RS_IN88 "{%44, %45, %46, %47}, %48, p, 1, 1, %49"
#define TL_WGMMA_RS_IN96 "{%48, %49, %50, %51}, %52, p, 1, 1, %53"
#define TL_WGMMA_RS_IN104 "{%52, %53, %54, %55}, %56, p, 1, 1, %57"
#define TL_WGMMA_RS_IN112 "{%56, %57, %58, %59}, %60, p, 1, 1, %61"
#define TL_WGMMA_RS_IN120 "{%60, %61, %62, %63}, %64, p, 1, 1, %65"
#define TL_WGMMA_RS_IN128 "{%64, %65, %66, %67}, %68, p, 1, 1, %69"
#define TL_WGMMA_RS_IN136 "{%68, %69, %70, %71}, %72, p, 1, 1, %73"
#define TL_WGMMA_RS_IN144 "{%72, %73, %74, %75}, %76, p, 1, 1, %77"
#define TL_WGMMA_RS_IN152 "{%76, %77, %78, %79}, %80, p, 1, 1, %81"
#define TL_WGMMA_RS_IN160 "{%80, %81, %82, %83}, %84, p, 1, 1, %85"
#define TL_WGMMA_RS_IN168 "{%84, %85, %86, %87}, %88, p, 1, 1, %89"
#define TL_WGMMA_RS_IN176 "{%88, %89, %90, %91}, %92, p, 1, 1, %93"
#define TL_WGMMA_RS_IN184 "{%92, %93, %94, %95}, %96, p, 1, 1, %97"
#define TL_WGMMA_RS_IN192 "{%96, %97, %98, %99}, %100, p, 1, 1, %101"
#define TL_WGMMA_RS_IN200 "{%100, %101, %102, %103}, %104, p, 1, 1, %105"
#define TL_WGMMA_RS_IN208 "{%104, %105, %106, %107}, %108, p, 1, 1, %109"
#define TL_WGMMA_RS_IN216 "{%108, %109, %110, %111}, %112, p, 1, 1, %113"
#define TL_WGMMA_RS_IN224 "{%112, %113, %114, %115}, %116, p, 1, 1, %117"
#define TL_WGMMA_RS_IN232 "{%116, %117, %118, %119}, %120, p, 1, 1, %121"
#define TL_WGMMA_RS_IN240 "{%120, %121, %122, %123}, %124, p, 1, 1, %125"
#define TL_WGMMA_RS_IN248 "{%124, %125, %126, %127}, %128, p, 1, 1, %129"
#define TL_WGMMA_RS_IN256 "{%128, %129, %130, %131}, %132, p, 1, 1, %133"

// The float8 form (k32, K-major A and B only): a-desc, b-desc, p, imm-scale-a, imm-scale-b.
#define TL_WGMMA_FP8_IN8 "%4, %5, p, 1, 1"
#define TL_WGMMA_FP8_IN16 "%8, %9, p, 1, 1"
#define TL_WGMMA_FP8_IN24 "%12, %13, p, 1, 1"
#define TL_WGMMA_FP8_IN32 "%16, %17, p, 1, 1"
#define TL_WGMMA_FP8_IN40 "%20, %21, p, 1, 1"
#define TL_WGMMA_FP8_IN48 "%24, %25, p, 1, 1"
#define TL_WGMMA_FP8_IN56 "%28, %29, p, 1, 1"
#define TL_WGMMA_FP8_IN64 "%32, %33, p, 1, 1"
#define TL_WGMMA_FP8_IN72 "%36, %37, p, 1, 1"
#define TL_WGMMA_FP8_IN80 "%40, %41, p, 1, 1"
#define TL_WGMMA_FP8_IN88 "%44, %45, p, 1, 1"
#define TL_WGMMA_FP8_IN96 "%48, %49, p, 1, 1"
#define TL_WGMMA_FP8_IN104 "%52, %53, p, 1, 1"
#define TL_WGMMA_FP8_IN112 "%56, %57, p, 1, 1"
#define TL_WGMMA_FP8_IN120 "%60, %61, p, 1, 1"
#define TL_WGMMA_FP8_IN128 "%64, %65, p, 1, 1"
#define TL_WGMMA_FP8_IN136 "%68, %69, p, 1, 1"
#define TL_WGMMA_FP8_IN144 "%72, %73, p, 1, 1"
#define TL_WGMMA_FP8_IN152 "%76, %77, p, 1, 1"
#define TL_WGMMA_FP8_IN160 "%80, %81, p, 1, 1"
#define TL_WGMMA_FP8_IN168 "%84, %85, p, 1, 1"
#define TL_WGMMA_FP8_IN176 "%88, %89, p, 1, 1"
#define TL_WGMMA_FP8_IN184 "%92, %93, p, 1, 1"
#define TL_WGMMA_FP8_IN192 "%96, %97, p, 1, 1"
#define TL_WGMMA_FP8_IN200 "%100, %101, p, 1, 1"
#define TL_WGMMA_FP8_IN208 "%104, %105, p, 1, 1"
#define TL_WGMMA_FP8_IN216 "%108, %109, p, 1, 1"
#define TL_WGMMA_FP8_IN224 "%112, %113, p, 1, 1"
#define TL_WGMMA_FP8_IN232 "%116, %117, p, 1, 1"
#define TL_WGMMA_FP8_IN240 "%120, %121, p, 1, 1"
#define TL_WGMMA_FP8_IN248 "%124, %125, p, 1, 1"
#define TL_WGMMA_FP8_IN256 "%128, %129, p, 1, 1"

// CASE(8) else CASE(16) else ... CASE(256): one `if constexpr` per instruction width.
#define TL_WGMMA_EACH_N(CASE)                                                               \
  CASE(8) else CASE(16) else CASE(24) else CASE(32) else CASE(40) else CASE(48)             \
  else CASE(56) else CASE(64) else CASE(72) else CASE(80) else CASE(88) else CASE(96)       \
  else CASE(104) else CASE(112) else CASE(120) else CASE(128) else CASE(136) else CASE(144) \
  else CASE(152) else CASE(160) else CASE(168) else CASE(176) else CASE(184) else CASE(192) \
  else CASE(200) else CASE(208) else CASE(216) else CASE(224) else CASE(232) else CASE(240) \
  else CASE(248) else CASE(256)
// clang-format on

// One statement per type: scale-d is the predicate p, set from SCALE_D ("1": D += A * B;
// "0": D = A * B, the accumulators' old values ignored). IN is the operand text after d
// (TL_WGMMA_IN##NN or TL_WGMMA_RS_IN##NN).
#define TL_WGMMA_ASM_SCALED(NN, TY, IN, SCALE_D)                                          \
  "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, " SCALE_D ", 0;\n\t"                              \
  "wgmma.mma_async.sync.aligned.m64n" #NN "k16.f32." TY "." TY " {" TL_WGMMA_D##NN "}, " \
  IN ";\n}\n"
#define TL_WGMMA_ASM(NN, TY, IN) TL_WGMMA_ASM_SCALED(NN, TY, IN, "1")
#define TL_WGMMA_SS_ASM(NN, TY, SCALE_D)                                              \
  asm volatile(TL_WGMMA_ASM_SCALED(NN, TY, TL_WGMMA_IN##NN, SCALE_D)                  \
               : TL_WGMMA_OPS##NN(d)                                                  \
               : "l"(desc_a), "l"(desc_b), "n"(int(MnMajorA)), "n"(int(MnMajorB)))
#define TL_WGMMA_CASE(NN)                                            \
  if constexpr (N == NN) {                                           \
    constexpr bool kHalf = detail::is_same<T, half>::value;          \
    if constexpr (kHalf && ScaleD) {                                 \
      TL_WGMMA_SS_ASM(NN, "f16", "1");                               \
    } else if constexpr (kHalf) {                                    \
      TL_WGMMA_SS_ASM(NN, "f16", "0");                               \
    } else if constexpr (ScaleD) {                                   \
      TL_WGMMA_SS_ASM(NN, "bf16", "1");                              \
    } else {                                                         \
      TL_WGMMA_SS_ASM(NN, "bf16", "0");                              \
    }                                                                \
  }

/// d (this thread's N/2 floats of a 64 x N f32 tile, layout in the file comment) +=
/// A (64 x 16) * B (16 x N), both read from shared memory through the descriptors
/// (ScaleD = false: d = A * B, whatever d held).
/// MnMajorA / MnMajorB: the operand is stored M- / N-major (the instruction's imm-trans-a /
/// imm-trans-b = 1) rather than K-major. Note that gemm_ss_wgmma's TransB has the opposite
/// sense: B not transposed (K x N) is N-major.
/// Asynchronous: issue wgmma_fence() before and commit / wait after (see gemm_ss_wgmma).
template <int N, typename T, bool MnMajorA, bool MnMajorB, bool ScaleD = true>
TL_DEVICE void wgmma_m64k16(float* d, uint64_t desc_a, uint64_t desc_b) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma_m64k16: N must be 8, 16, ..., 256");
  static_assert(detail::is_same<T, half>::value || detail::is_same<T, bfloat16>::value,
                "wgmma_m64k16: T must be tl::half or tl::bfloat16");
#if TL_WGMMA_AVAILABLE
  TL_WGMMA_EACH_N(TL_WGMMA_CASE)
#elif defined(__CUDA_ARCH__)
  static_assert(detail::wgmma_unavailable<T>::value, "wgmma_m64k16 needs sm_90a (compile for compute_90a)");
#endif
}

#undef TL_WGMMA_CASE
#undef TL_WGMMA_SS_ASM

// The register-A form: the A operand is the vector of four 32-bit registers.
#define TL_WGMMA_RS_CASE(NN)                                                                       \
  if constexpr (N == NN) {                                                                         \
    if constexpr (detail::is_same<T, half>::value) {                                               \
      asm volatile(TL_WGMMA_ASM(NN, "f16", TL_WGMMA_RS_IN##NN)                                     \
                   : TL_WGMMA_OPS##NN(d)                                                           \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "n"(int(MnMajorB))); \
    } else {                                                                                       \
      asm volatile(TL_WGMMA_ASM(NN, "bf16", TL_WGMMA_RS_IN##NN)                                    \
                   : TL_WGMMA_OPS##NN(d)                                                           \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "n"(int(MnMajorB))); \
    }                                                                                              \
  }

/// d (as in wgmma_m64k16) += A (64 x 16, from registers) * B (16 x N, shared memory).
/// a: this thread's four A-fragment registers of the k16 step (see gemm_rs_wgmma in the
/// file comment). MnMajorB: B is stored N-major (imm-trans-b = 1).
/// Asynchronous: the registers of a and d must be written before wgmma_fence() and left
/// alone until wgmma_wait_group() has covered this instruction.
template <int N, typename T, bool MnMajorB>
TL_DEVICE void wgmma_m64k16_rs(float* d, const uint32_t (&a)[4], uint64_t desc_b) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma_m64k16_rs: N must be 8, 16, ..., 256");
  static_assert(detail::is_same<T, half>::value || detail::is_same<T, bfloat16>::value,
                "wgmma_m64k16_rs: T must be tl::half or tl::bfloat16");
#if TL_WGMMA_AVAILABLE
  TL_WGMMA_EACH_N(TL_WGMMA_RS_CASE)
#elif defined(__CUDA_ARCH__)
  static_assert(detail::wgmma_unavailable<T>::value, "wgmma_m64k16_rs needs sm_90a (compile for compute_90a)");
#endif
}

#undef TL_WGMMA_RS_CASE

namespace detail {
/// The PTX type name of a float8 operand type.
template <typename T>
struct fp8_ptx;
template <>
struct fp8_ptx<float8_e4m3> {
  static constexpr bool e4m3 = true;
};
template <>
struct fp8_ptx<float8_e5m2> {
  static constexpr bool e4m3 = false;
};
template <typename T>
constexpr bool is_fp8_v = is_same<T, float8_e4m3>::value || is_same<T, float8_e5m2>::value;
}  // namespace detail

#define TL_WGMMA_FP8_ASM(NN, TA, TB, SCALE_D)                                               \
  "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, " SCALE_D ", 0;\n\t"                                  \
  "wgmma.mma_async.sync.aligned.m64n" #NN "k32.f32." TA "." TB " {" TL_WGMMA_D##NN "}, " \
  TL_WGMMA_FP8_IN##NN ";\n}\n"
#define TL_WGMMA_FP8_STMT(NN, TY, SCALE_D) \
  asm volatile(TL_WGMMA_FP8_ASM(NN, TY, TY, SCALE_D) : TL_WGMMA_OPS##NN(d) : "l"(desc_a), "l"(desc_b))
#define TL_WGMMA_FP8_CASE(NN)                                      \
  if constexpr (N == NN) {                                         \
    constexpr bool kE4m3 = detail::fp8_ptx<T>::e4m3;               \
    if constexpr (kE4m3 && ScaleD) {                               \
      TL_WGMMA_FP8_STMT(NN, "e4m3", "1");                          \
    } else if constexpr (kE4m3) {                                  \
      TL_WGMMA_FP8_STMT(NN, "e4m3", "0");                          \
    } else if constexpr (ScaleD) {                                 \
      TL_WGMMA_FP8_STMT(NN, "e5m2", "1");                          \
    } else {                                                       \
      TL_WGMMA_FP8_STMT(NN, "e5m2", "0");                          \
    }                                                              \
  }

/// d (as in wgmma_m64k16) += A (64 x 32, float8) * B (32 x N, float8), both K-major in
/// shared memory (float8 wgmma has no transpose immediates), one k32 step (ScaleD = false:
/// d = A * B).
template <int N, typename T, bool ScaleD = true>
TL_DEVICE void wgmma_m64k32_fp8(float* d, uint64_t desc_a, uint64_t desc_b) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma_m64k32_fp8: N must be 8, 16, ..., 256");
  static_assert(detail::is_fp8_v<T>, "wgmma_m64k32_fp8: T must be tl::float8_e4m3 or tl::float8_e5m2");
#if TL_WGMMA_AVAILABLE
  TL_WGMMA_EACH_N(TL_WGMMA_FP8_CASE)
#elif defined(__CUDA_ARCH__)
  static_assert(detail::wgmma_unavailable<T>::value, "wgmma_m64k32_fp8 needs sm_90a (compile for compute_90a)");
#endif
}

#undef TL_WGMMA_FP8_CASE
#undef TL_WGMMA_FP8_STMT
#undef TL_WGMMA_ASM

#include "wgmma_f16_acc.h"

namespace detail {

constexpr uint32_t kWgmmaRowBytes = 128;                   ///< one stored row of a 64-element panel
constexpr uint32_t kWgmmaAtomBytes = 8 * kWgmmaRowBytes;  ///< one swizzle atom: 8 rows; SBO in every case

/// Bytes of a stored row of a K-major operand of this K: 128 (64-element panels, 128-byte
/// swizzle), or 64 when K is 32 (one 32-element panel, 64-byte swizzle).
template <int K, typename T>
constexpr uint32_t kKmajorRowBytes = K * sizeof(T) == 64 ? 64u : kWgmmaRowBytes;
/// The descriptor's swizzle mode of a K-major operand: 1 (128-byte) or 2 (64-byte).
template <int K, typename T>
constexpr uint32_t kKmajorSwizzleMode = K * sizeof(T) == 64 ? 2u : 1u;
/// Elements of one wgmma k step: 16 for 16-bit types, 32 for float8.
template <typename T>
constexpr int kWgmmaKStep = sizeof(T) == 1 ? 32 : 16;

/// Descriptor of B (K x N N-major, or N x K K-major when TransB) at column 0, k = 0.
template <int K, bool TransB, typename T>
TL_DEVICE uint64_t wgmma_desc_b(const T* B) {
  if constexpr (TransB) return wgmma_desc_sw128(smem_addr(B), 16u, 8 * kKmajorRowBytes<K, T>, kKmajorSwizzleMode<K, T>);
  return wgmma_desc_sw128(smem_addr(B), uint32_t(K) * kWgmmaRowBytes, kWgmmaAtomBytes);
}

/// Byte offset of B's k16 step at k: K-major B (N x K) moves k/64 panels and (k%64)*2 bytes
/// along the row (one 32-element panel when K is 32); N-major B (K x N) moves k rows of 128
/// bytes.
template <int N, int K, bool TransB, typename T>
TL_DEVICE uint32_t wgmma_b_k_offset(int k) {
  constexpr uint32_t kRow = kKmajorRowBytes<K, T>, kPanel = kRow / sizeof(T);
  return TransB ? uint32_t(k / kPanel) * uint32_t(N) * kRow + uint32_t(k % kPanel) * uint32_t(sizeof(T))
                : uint32_t(k) * kWgmmaRowBytes;
}

/// Issues, for one k16 step, the wgmmas of the column chunks [N0, N) of a warpgroup's
/// 64 x N tile, 256 columns at a time (the last chunk may be narrower).
/// a is A's descriptor (uint64_t) or its four fragment registers (uint32_t[4]);
/// desc_b0 addresses column 0 of this k step; chunk n0 adds its own offset.
/// Acc: float, or tl::half for float16 operands into float16 accumulators (wgmma_f16_acc.h),
/// whose chunks then start on multiples of 16 columns.
template <int N0, int N, int K, bool TransA, bool TransB, typename T, bool ScaleD = true, typename AOperand,
          typename Acc>
TL_DEVICE void wgmma_k16_chunks(Acc* C, const AOperand& a, uint64_t desc_b0) {
  constexpr int kChunk = N - N0 < 256 ? N - N0 : 256;
  // Byte offset of column n0: K-major B (N x K) moves down n0 rows of 128 bytes, N-major B
  // (K x N) moves right n0/64 panels of K rows.
  constexpr uint32_t kOffset =
      TransB ? uint32_t(N0) * kKmajorRowBytes<K, T> : uint32_t(N0 / 64) * uint32_t(K) * kWgmmaRowBytes;
  static_assert(ScaleD || (is_same<Acc, float>::value && is_same<AOperand, uint64_t>::value),
                "wgmma_k16_chunks: D = A * B (ScaleD false) is for float accumulators and A in shared memory");
  if constexpr (is_fp8_v<T>) {
    wgmma_m64k32_fp8<kChunk, T, ScaleD>(C + N0 / 2, a, wgmma_desc_advance(desc_b0, kOffset));
  } else if constexpr (is_same<AOperand, uint64_t>::value && is_same<Acc, float>::value) {
    wgmma_m64k16<kChunk, T, TransA, !TransB, ScaleD>(C + N0 / 2, a, wgmma_desc_advance(desc_b0, kOffset));
  } else if constexpr (is_same<AOperand, uint64_t>::value) {
    wgmma_m64k16<kChunk, T, TransA, !TransB>(C + N0 / 2, a, wgmma_desc_advance(desc_b0, kOffset));
  } else {
    wgmma_m64k16_rs<kChunk, T, !TransB>(C + N0 / 2, a, wgmma_desc_advance(desc_b0, kOffset));
  }
  if constexpr (N0 + kChunk < N) wgmma_k16_chunks<N0 + kChunk, N, K, TransA, TransB, T, ScaleD>(C, a, desc_b0);
}

}  // namespace detail

/// ProxyFence = false: the caller guarantees no generic-proxy write to A or B since the
/// last proxy fence (tiles loaded by TMA, or fenced once after they were written).
/// Issues the block's tile GEMM and commits it as one wgmma group without waiting: C's
/// registers stay in flight until wgmma_wait_hold (a warp-specialized main loop keeps one
/// k-tile's group in flight while it issues the next).
///
/// WgN > 1: the block has WgN warpgroups per 64-row block, which split N: warpgroup g
/// computes rows 64 (g % (M/64)) and columns (g / (M/64)) N/WgN of C (the compiler's
/// m-fastest warp order), and C holds that part's N/WgN/2 registers.
/// MReps > 1: each warpgroup owns MReps 64-row blocks, block r of warpgroup g being rows
/// 64 (r M/64/MReps + g) (the compiler's interleaved rows), one m64 wgmma per block per k16
/// step; C holds the blocks' registers one after the other (N/2 each).
///
/// KTileA / KTileB: the columns of the tile a K-major A (M x K) / B (N x K) is a window of
/// (T.wgmma_gemm on A_s[:, c0 : c0 + K]): the pointer is the window's first element and
/// the stored rows are those of the whole tile (its panels and swizzle mode); the window
/// starts on a panel or lies inside one. For an MN-major operand they equal K.
///
/// C: float accumulators, or tl::half ones for float16 operands (wgmma .f16 accumulate,
/// wgmma_f16_acc.h; N/WgN a multiple of 16), at the same places.
///
/// AccumulateC = false: C = A * B, C's old values ignored (the first k step's wgmmas set
/// scale-d to 0), so no instructions zero C first (the softmax overlap's Q K^T, whose mask
/// is added after it; float C only).
template <int M, int N, int K, bool TransA, bool TransB, bool ProxyFence = true, int WgN = 1, int MReps = 1,
          int KTileA = K, int KTileB = K, bool AccumulateC = true, typename T, typename Acc>
TL_DEVICE void gemm_ss_wgmma_issue(const T* A, const T* B, Acc* C) {
  static_assert(detail::is_same<T, half>::value || detail::is_same<T, bfloat16>::value || detail::is_fp8_v<T>,
                "gemm_ss_wgmma: T must be tl::half, tl::bfloat16 or a float8 type");
  static_assert(detail::is_same<Acc, float>::value ||
                    (detail::is_same<Acc, half>::value && detail::is_same<T, half>::value && (N / WgN) % 16 == 0),
                "gemm_ss_wgmma: C must be float, or tl::half with tl::half operands and N/WgN a multiple of 16");
  static_assert(!detail::is_fp8_v<T> || (!TransA && TransB),
                "gemm_ss_wgmma: float8 wgmma reads K-major A (M x K) and K-major B (N x K) only");
  static_assert(M >= 64 && M % 64 == 0, "gemm_ss_wgmma: M must be a multiple of 64 (one warpgroup per 64 rows)");
  static_assert(N >= 8 && N % 8 == 0, "gemm_ss_wgmma: N must be a multiple of 8");
  static_assert(K >= detail::kWgmmaKStep<T> && K % detail::kWgmmaKStep<T> == 0,
                "gemm_ss_wgmma: K must be a multiple of the k step (16, or 32 for float8)");
  static_assert(TransA || (KTileA * sizeof(T)) % 128 == 0 || KTileA * sizeof(T) == 64,
                "gemm_ss_wgmma: K-major A (M x K) needs rows of a multiple of 128 bytes, or of 64");
  static_assert(!TransB || (KTileB * sizeof(T)) % 128 == 0 || KTileB * sizeof(T) == 64,
                "gemm_ss_wgmma: K-major B (N x K) needs rows of a multiple of 128 bytes, or of 64");
  static_assert((!TransA || KTileA == K) && (TransB || KTileB == K) && KTileA >= K && KTileB >= K,
                "gemm_ss_wgmma: only a K-major operand can be a window of a wider tile");
  static_assert(TransB || N % 64 == 0, "gemm_ss_wgmma: N-major B (K x N) needs N a multiple of 64 (128-byte rows)");
  static_assert(WgN >= 1 && N % WgN == 0 && (N / WgN) % 8 == 0, "gemm_ss_wgmma: N/WgN must be a multiple of 8");
  static_assert(TransB || (N / WgN) % 64 == 0 || 64 % (N / WgN) == 0,
                "gemm_ss_wgmma: N-major B split over warpgroups needs N/WgN whole 64-column panels, or a part "
                "of one panel (N/WgN dividing 64)");
  static_assert(MReps >= 1 && M % (64 * MReps) == 0 && (MReps == 1 || WgN == 1),
                "gemm_ss_wgmma: M must be MReps 64-row blocks per warpgroup, and not with WgN > 1");
#if TL_WGMMA_AVAILABLE
  constexpr uint32_t kRow = detail::kWgmmaRowBytes;
  constexpr int kN = N / WgN;             // this warpgroup's columns
  constexpr int kWgM = M / 64 / MReps;    // warpgroups along M
  const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  // The same in all lanes; the shuffle lets the compiler know it (uniform registers).
  // (modulo the GEMM's warpgroups: one of a range of warpgroups under a branch on the
  // thread index, starting on a multiple of its size, numbers them from the range's first)
  const int warpgroup = __shfl_sync(0xffffffffu, tid / 128 % (kWgM * WgN), 0);
  const int wg_m = warpgroup % kWgM, wg_n = warpgroup / kWgM;
  constexpr uint32_t kKRow = detail::kKmajorRowBytes<KTileA, T>, kKPanel = kKRow / sizeof(T);  // K-major A rows
  // Column n of B: K-major B (N x K) n rows down; N-major B (K x N) panel n / 64, and
  // (n % 64) * 2 bytes into its 128-byte rows when warpgroups split one panel (N/WgN of 32:
  // the second warpgroup starts 64 bytes in; the atom stays 1024-aligned, so the hardware's
  // address XOR finds the swizzled chunks, as for a K-major k step inside a row).
  const uint32_t b_col = TransB ? uint32_t(wg_n * kN) * detail::kKmajorRowBytes<KTileB, T>
                                : uint32_t(wg_n * kN / 64) * uint32_t(K) * kRow +
                                      uint32_t(wg_n * kN % 64) * uint32_t(sizeof(T));
  const uint64_t desc_b0 = wgmma_desc_advance(detail::wgmma_desc_b<KTileB, TransB>(B), b_col);

  if constexpr (ProxyFence) fence_proxy_async_shared();
  wgmma_hold<kN / 2 * MReps>(C);
  wgmma_fence();
#pragma unroll
  for (int r = 0; r < MReps; ++r) {
    // Rows 64b of A for block b: K-major (M x K) 64b rows down; M-major (K x M) panel b.
    const uint32_t block = uint32_t(r * kWgM + wg_m);
    const uint32_t a_start = smem_addr(A) + (TransA ? block * uint32_t(K) * kRow : block * 64u * kKRow);
    const uint64_t desc_a0 =
        TransA ? wgmma_desc_sw128(a_start, uint32_t(K) * kRow, detail::kWgmmaAtomBytes)
               : wgmma_desc_sw128(a_start, 16u, 8 * kKRow, detail::kKmajorSwizzleMode<KTileA, T>);
#pragma unroll
    for (int k = 0; k < K; k += detail::kWgmmaKStep<T>) {
      // k step: K-major A moves (k/64) panels and (k%64)*2 bytes along the row; M-major A
      // moves k rows of 128 bytes (B: detail::wgmma_b_k_offset, panels of all N rows).
      const uint32_t a_off = TransA ? uint32_t(k) * kRow
                                    : uint32_t(k / kKPanel) * M * kKRow + uint32_t(k % kKPanel) * uint32_t(sizeof(T));
      const uint32_t b_off = detail::wgmma_b_k_offset<N, KTileB, TransB, T>(k);
      const uint64_t desc_a = wgmma_desc_advance(desc_a0, a_off), desc_b = wgmma_desc_advance(desc_b0, b_off);
      if constexpr (!AccumulateC) {
        if (k == 0) {  // (the loop is unrolled: no branch remains)
          detail::wgmma_k16_chunks<0, kN, KTileB, TransA, TransB, T, false>(C + r * (kN / 2), desc_a, desc_b);
          continue;
        }
      }
      detail::wgmma_k16_chunks<0, kN, KTileB, TransA, TransB, T>(C + r * (kN / 2), desc_a, desc_b);
    }
  }
  wgmma_commit_group();
#elif defined(__CUDA_ARCH__)
  static_assert(detail::wgmma_unavailable<T>::value, "gemm_ss_wgmma needs sm_90a (compile for compute_90a)");
#else
  (void)A, (void)B, (void)C;
#endif
}

/// Waits until at most Pending wgmma groups of this warp are in flight, then pins the
/// Regs accumulator registers at C so the compiler reads them only after the wait.
template <int Pending, int Regs, typename Acc>
TL_DEVICE void wgmma_wait_hold(Acc* C) {
#if TL_WGMMA_AVAILABLE
  wgmma_wait_group<Pending>();
  wgmma_hold<Regs>(C);
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#else
  (void)C;
#endif
}

/// T.wait_wgmma(N): waits until at most N of this warp's committed wgmma groups (those
/// T.wgmma_gemm issued: gemm_ss_wgmma_issue) are pending. The compiler follows it with
/// wgmma_hold on each accumulator those GEMMs write, so that no read of them moves above it.
template <int N>
TL_DEVICE void wait_wgmma() {
  wgmma_wait_group<N>();
}

/// The block's tile GEMM on Hopper tensor cores (see the file comment for the layouts and
/// the ordering). All threads of the block (exactly M/16 warps) must call it.
template <int M, int N, int K, bool TransA, bool TransB, bool ProxyFence = true, int WgN = 1, int MReps = 1,
          typename T, typename Acc>
TL_DEVICE void gemm_ss_wgmma(const T* A, const T* B, Acc* C) {
  gemm_ss_wgmma_issue<M, N, K, TransA, TransB, ProxyFence, WgN, MReps>(A, B, C);
  wgmma_wait_hold<0, N / WgN / 2 * MReps>(C);
}

/// Packs A's 16-bit values (this thread's part of a register A, the accumulator layout)
/// into the Regs 32-bit operand registers gemm_rs_wgmma_issue takes: register i holds
/// A[2i] (bits 0..15) and A[2i + 1]; for the k16 step s, registers 4s..4s+3 are tile 2s's
/// regs 0, 1 and 2, 3, then tile 2s + 1's.
template <int Regs, typename T>
TL_DEVICE void wgmma_pack_a(uint32_t* dst, const T* A) {
#pragma unroll
  for (int i = 0; i < Regs; ++i) dst[i] = uint32_t(A[2 * i].bits) | (uint32_t(A[2 * i + 1].bits) << 16);
}

/// A branch on v that ptxas cannot remove, so that it computes v (the end of a softmax)
/// before whatever follows, a wgmma wait above all: its list scheduler otherwise takes the
/// wait for a zero-latency instruction and issues it early, ending the overlap of P V with
/// the softmax (tl.ws_softmax_overlap_pin). Taken only for one NaN bit pattern arithmetic
/// does not produce, and then harmless (a zero-length sleep).
TL_DEVICE void schedule_after(float v) {
#if defined(__CUDA_ARCH__)
  if (__float_as_uint(v) == 0x7fbfffffu) __nanosleep(0);
#else
  (void)v;
#endif
}

/// The tile GEMM with A in registers, issued and committed as one wgmma group without
/// waiting: `a` holds A packed by wgmma_pack_a (MReps * K / 4 registers), and both `a` and
/// C stay in flight until a wait (gemm_rs_wgmma below; the warp-specialized attention loop
/// computes the next step's softmax meanwhile, tl.ws_softmax_overlap). All steps are
/// packed before the fence, since the wgmmas read these registers while they run.
template <int M, int N, int K, bool TransB, bool ProxyFence = true, int MReps = 1, typename T, typename Acc>
TL_DEVICE void gemm_rs_wgmma_issue(uint32_t* a, const T* B, Acc* C) {
  static_assert(detail::is_same<T, half>::value || detail::is_same<T, bfloat16>::value,
                "gemm_rs_wgmma: T must be tl::half or tl::bfloat16");
  static_assert(detail::is_same<Acc, float>::value ||
                    (detail::is_same<Acc, half>::value && detail::is_same<T, half>::value && N % 16 == 0),
                "gemm_rs_wgmma: C must be float, or tl::half with tl::half operands and N a multiple of 16");
  static_assert(M >= 64 && M % 64 == 0, "gemm_rs_wgmma: M must be a multiple of 64 (one warpgroup per 64 rows)");
  static_assert(N >= 8 && N % 8 == 0, "gemm_rs_wgmma: N must be a multiple of 8");
  static_assert(K >= 16 && K % 16 == 0, "gemm_rs_wgmma: K must be a multiple of 16");
  static_assert(!TransB || K % 64 == 0 || K == 32,
                "gemm_rs_wgmma: K-major B (N x K) needs K a multiple of 64 (128-byte rows) or 32 (64-byte rows)");
  static_assert(TransB || N % 64 == 0, "gemm_rs_wgmma: N-major B (K x N) needs N a multiple of 64 (128-byte rows)");
  static_assert(MReps >= 1 && M % (64 * MReps) == 0, "gemm_rs_wgmma: M must be MReps 64-row blocks per warpgroup");
#if TL_WGMMA_AVAILABLE
  const uint64_t desc_b0 = detail::wgmma_desc_b<K, TransB>(B);
  if constexpr (ProxyFence) fence_proxy_async_shared();
  wgmma_hold<MReps * K / 4>(a);
  wgmma_hold<MReps * N / 2>(C);
  wgmma_fence();
#pragma unroll
  for (int r = 0; r < MReps; ++r) {
#pragma unroll
    for (int k = 0; k < K; k += 16) {
      const uint32_t b_off = detail::wgmma_b_k_offset<N, K, TransB, T>(k);
      const uint32_t(&step)[4] = *reinterpret_cast<const uint32_t(*)[4]>(a + (r * (K / 16) + k / 16) * 4);
      detail::wgmma_k16_chunks<0, N, K, false, TransB, T>(C + r * (N / 2), step, wgmma_desc_advance(desc_b0, b_off));
    }
  }
  wgmma_commit_group();
#elif defined(__CUDA_ARCH__)
  static_assert(detail::wgmma_unavailable<T>::value, "gemm_rs_wgmma needs sm_90a (compile for compute_90a)");
#else
  (void)a, (void)B, (void)C;
#endif
}

/// The block's tile GEMM with A in registers (see gemm_rs_wgmma in the file comment): A
/// holds this thread's K/2 values in the accumulator layout, B is the shared tile of
/// gemm_ss_wgmma. All threads of the block (exactly M/16 warps) must call it.
/// MReps > 1: each warpgroup owns MReps 64-row blocks (see gemm_ss_wgmma_issue); A and C
/// hold the blocks' registers one after the other (K/2 and N/2 each).
template <int M, int N, int K, bool TransB, bool ProxyFence = true, int MReps = 1, typename T, typename Acc>
TL_DEVICE void gemm_rs_wgmma(const T* A, const T* B, Acc* C) {
  uint32_t a[MReps * K / 4];
  wgmma_pack_a<MReps * K / 4>(a, A);
  gemm_rs_wgmma_issue<M, N, K, TransB, ProxyFence, MReps>(a, B, C);
#if TL_WGMMA_AVAILABLE
  wgmma_wait_group<0>();
  wgmma_hold<MReps * N / 2>(C);
  wgmma_hold<MReps * K / 4>(a);
#endif
}

}  // namespace tl
