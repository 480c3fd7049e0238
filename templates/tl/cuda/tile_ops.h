// SPDX-License-Identifier: Apache-2.0
/// \file Block-level tile operations called by generated kernels: the shared-memory GEMM
/// (gemm_ss) and small copy helpers. Built on the primitives of tl_cuda.h.
///
/// gemm_ss<M, N, K, WM, WN, TransA, TransB, LdA, LdB, SwzA, SwzB>(A, B, C):
///   C (M x N, in registers) += op(A) (M x K) * op(B) (K x N), A and B in shared memory.
///   A is stored M x K row-major with row stride LdA (K x M when TransA), B is K x N with
///   stride LdB (N x K when TransB). Swz* is the operand's shared layout (kRowMajor,
///   kXorRows or kWgmmaPanels + rows; see swizzle below).
///   The block's warps form a WM x WN grid; warp w owns rows (w / WN) * M/WM and columns
///   (w % WN) * N/WN, or with MFastest (the order of a wgmma accumulator whose warpgroups
///   split N) rows (w % WM) * M/WM and columns (w / WM) * N/WN. With InterleaveM a warp's
///   16-row slices are spaced 16 WM apart (slice t of warp row wm: rows (t WM + wm) 16..),
///   the layout of a wgmma accumulator whose warpgroups each own several 64-row blocks. Within a warp, mma tiles (16 x 8) are numbered row-major and each
///   holds 4 registers of C, in the mma.sync m16n8 accumulator layout (mma.h). This is
///   the layout the compiler gives the accumulator fragment (layout::MmaAccumulatorLayout).
///   With Tf32 (float A, B, C: a T.gemm on tfloat32 tiles) A and B are rounded to TF32 and
///   multiplied on the tf32 tensor cores (m16n8k8), or in loops where the layouts do not fit.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h before tile_ops.h"
#endif

#include "mma_operand.h"

#ifndef TL_MMA_SPLIT_ADDRESSES
#define TL_MMA_SPLIT_ADDRESSES 1  // gemm_ss_mma: ldmatrix addresses split as mma_operand.h says (0: per-read swizzle)
#endif

#ifndef TL_MMA_PREFETCH_FRAGMENTS
#define TL_MMA_PREFETCH_FRAGMENTS 1  // gemm_ss's Prefetch default: the next k-step's fragments load during this one's mmas
#endif

namespace tl {

/// Stores Bytes zero bytes (1, 2, 4, 8 or 16; dst aligned to Bytes).
template <int Bytes>
TL_DEVICE void vec_zero(void* dst) {
  using V = typename detail::vec_of<Bytes>::type;
  *static_cast<V*>(dst) = V{};
}

/// Moves N elements from src to dst with a conversion, in the widest aligned accesses
/// (up to 16 bytes) on both sides: the copies between a register tile and memory. Both
/// pointers are aligned to the size of their N elements (or to 16 bytes when larger).
/// Pair, when given (code generation names it where the two types have one), converts two
/// elements at a time (pair_convert.h: one packed instruction per pair).
template <int N, auto Pair = nullptr, typename D, typename S>
TL_DEVICE void cast_copy(D* dst, const S* src) {
  constexpr int kIn = N * int(sizeof(S)), kOut = N * int(sizeof(D));
  constexpr int kInStep = kIn < 16 ? kIn : 16, kOutStep = kOut < 16 ? kOut : 16;
  alignas(16) S in[N];
  alignas(16) D out[N];
#pragma unroll
  for (int b = 0; b < kIn; b += kInStep) {
    copy<kInStep>(reinterpret_cast<char*>(in) + b, reinterpret_cast<const char*>(src) + b);
  }
  constexpr bool kFloatTo16 = N % 2 == 0 && detail::is_same<S, float>::value &&
                              (detail::is_same<D, half>::value || detail::is_same<D, bfloat16>::value);
  if constexpr (!detail::is_same<decltype(Pair), decltype(nullptr)>::value) {
    static_assert(N % 2 == 0, "cast_copy: a pair conversion needs an even count");
#pragma unroll
    for (int i = 0; i < N; i += 2) Pair(&out[i], in[i], in[i + 1]);
  } else if constexpr (kFloatTo16) {
    // float -> half / bfloat16 two at a time: one packed conversion (cvt.rn.f16x2.f32).
#pragma unroll
    for (int i = 0; i < N; i += 2) reinterpret_cast<uint32_t*>(out)[i / 2] = pack_float2<D>(in[i], in[i + 1]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = static_cast<D>(in[i]);
  }
#pragma unroll
  for (int b = 0; b < kOut; b += kOutStep) {
    copy<kOutStep>(reinterpret_cast<char*>(dst) + b, reinterpret_cast<const char*>(out) + b);
  }
}

/// The warp stores 8 accumulator values per lane (two 16x8 mma tiles side by side, as the
/// accumulator layout holds them: c0 c1 of the left tile's row l/4, c2 c3 of its row l/4 + 8,
/// then the right tile's) into a 16-bit shared tile as four 8x8 matrices: stmatrix.x4
/// (sm_90), one instruction where element stores take four. `row` is the first element of
/// row lane % 8 of matrix lane / 8 (the compiler's MmaAccumulatorLayout::StmatrixRowStart);
/// every lane of the warp must call it.
template <typename D, typename S>
TL_DEVICE void stmatrix_x4(D* row, const S* regs) {
  static_assert(detail::is_same<D, half>::value || detail::is_same<D, bfloat16>::value,
                "stmatrix_x4 stores half or bfloat16");
  uint32_t r[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (detail::is_same<S, float>::value) {
      r[i] = pack_float2<D>(regs[2 * i], regs[2 * i + 1]);
    } else {
      static_assert(detail::is_same<S, D>::value, "stmatrix_x4: registers of float or of the tile's type");
      r[i] = uint32_t(regs[2 * i].bits) | (uint32_t(regs[2 * i + 1].bits) << 16);
    }
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr(row)), "r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#elif defined(__CUDA_ARCH__)
  static_assert(sizeof(D) == 0, "stmatrix_x4 needs sm_90");
#endif
}

TL_DEVICE int flat_thread_index() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

/// x, with nothing known about its bits (an empty asm in between).
TL_DEVICE unsigned opaque_u32(unsigned x) {
  asm("" : "+r"(x));
  return x;
}

/// flat_thread_index read through volatile asm: values computed from it stay where they are
/// computed (the compiler may not hoist them out of loops, where they would hold registers).
TL_DEVICE int opaque_flat_thread_index() {
  unsigned x;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(x));
  return static_cast<int>(x) + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

namespace detail {

/// The mma.sync shape gemm_ss_mma / gemm_rs use for operand type T: 16-bit inputs take
/// m16n8k16 into float, 8-bit integers m16n8k32 into int32, and float held as TF32 (Tf32:
/// a T.gemm on tfloat32 tiles) m16n8k8 into float. Each way one 16 x kK tile of A is 16 rows
/// of 16 bytes (mma.h), so ldmatrix (which moves 16-byte rows: an 8 x 8 tile of 16-bit
/// elements is 8 x 4 floats) loads all three; only its .trans form is 16-bit specific.
template <typename T, bool Tf32 = false>
struct mma_shape {
  static constexpr bool kInt8 = is_same<T, int8_t>::value || is_same<T, uint8_t>::value;
  static constexpr bool kSixteen = is_same<T, half>::value || is_same<T, bfloat16>::value;
  static constexpr bool kTf32 = Tf32 && is_same<T, float>::value;
  static constexpr int kK = kInt8 ? 32 : kTf32 ? 8 : 16;  ///< K of one mma
  static constexpr int kChunk = kK / 2;                   ///< elements in a 16-byte row of an 8x8 ldmatrix tile
  using Acc = typename conditional<kInt8, int, float>::type;
};

/// D += A * B for one m16n8 tile of mma_shape<T> (fragments as in mma.h; for float, tf32
/// bit patterns, see float_to_tf32). A half accumulator (TL_MMA_F16_ACC) holds the float
/// one's four elements in the same places; the .f16 mma takes them as two pairs, (0, 1)
/// and (2, 3), each pair one register with the first element in its low half.
template <typename T, typename Acc>
TL_DEVICE void mma_tile(Acc (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (is_same<Acc, half>::value) {
    static_assert(is_same<T, half>::value, "mma_tile: a half accumulator takes half operands");
    // (read and written as 32-bit words in place, so ptxas keeps each pair in one register:
    // packing them by shifts kept a register per element and 1.6x the registers)
    uint32_t(&c)[2] = *reinterpret_cast<uint32_t(*)[2]>(&d[0]);
    mma_m16n8k16_f16f16(c, a, b, c);
  } else if constexpr (is_same<T, float>::value) {
    mma_m16n8k8_tf32f32(d, a, b, d);
  } else if constexpr (is_same<T, int8_t>::value) {
    mma_m16n8k32_s8s32(d, a, b, d);
  } else if constexpr (is_same<T, uint8_t>::value) {
    mma_m16n8k32_u8s32(d, a, b, d);
  } else {
    mma_m16n8k16<T>(d, a, b, d);
  }
}

/// Tensor-core path: ldmatrix + mma.sync, for 16-bit inputs into float32 (any transposes),
/// for int8 / uint8 into int32 and for float rounded to TF32 (Tf32) into float32, these two
/// with A row-major and B stored N x K (TransB): the layouts whose 4-byte groups lie along K
/// in shared memory (ldmatrix.trans moves 16-bit elements, so it cannot transpose bytes or
/// floats).
///
/// ARegs (tf32 only, gemm_rs_tf32): A is this thread's registers in the tf32 A-operand layout
/// (layout::MmaTf32ALayout): slice mt's k-step at kk is the 4 registers from
/// (mt K/4 + kk/4) 2, already an mma operand; B is read as above. AExact: A's values are
/// exact in TF32 already (not rounded). Prefetch: two fragment buffers, the next k-step's
/// loaded during this one's mmas (false: one, loaded right before its mmas; the compiler
/// asks for that in kernels whose register tiles nearly fill the register file).
template <int M, int N, int K, int WM, int WN, bool TransA, bool TransB, int LdA, int LdB, int SwzA, int SwzB,
          bool MFastest, bool InterleaveM, bool Tf32, bool ARegs = false, bool AExact = false,
          bool Prefetch = TL_MMA_PREFETCH_FRAGMENTS != 0, typename T, typename Acc>
TL_DEVICE void gemm_ss_mma(const T* A, const T* B, Acc* C) {
  using Shape = mma_shape<T, Tf32>;
  constexpr int kK = Shape::kK, kChunk = Shape::kChunk;
  static_assert(is_same<Acc, typename Shape::Acc>::value || (is_same<Acc, half>::value && is_same<T, half>::value),
                "gemm_ss_mma: accumulator type");
  static_assert(Shape::kSixteen || Shape::kInt8 || Shape::kTf32, "gemm_ss_mma: operand type");
  static_assert(Shape::kSixteen || (!TransA && TransB), "gemm_ss_mma: 8- and 32-bit operands need A M x K, B N x K");
  static_assert(!ARegs || (Shape::kTf32 && !TransA), "gemm_ss_mma: A from registers is the tf32 path's");
  constexpr int kWarpM = M / WM, kWarpN = N / WN;
  constexpr int kTilesM = kWarpM / 16, kTilesN = kWarpN / 8;
  static_assert(kWarpM % 16 == 0 && kWarpN % 8 == 0, "warp tile must be a multiple of 16x8");
  static_assert(K % kK == 0, "K must be a multiple of the mma's K for the tensor-core path");
  const int tid = flat_thread_index();
  // (modulo the GEMM's warps: a GEMM of a range of warps under a branch on the thread
  // index, starting on a multiple of its size, numbers them from the range's first)
  const int lane = tid & 31, warp = (tid >> 5) % (WM * WN);
  const int wm = MFastest ? warp % WM : warp / WN, n0 = (MFastest ? warp / WM : warp % WN) * kWarpN;
  // First row of the warp's 16-row slice mt.
  auto slice = [&](int mt) { return InterleaveM ? (mt * WM + wm) * 16 : wm * kWarpM + mt * 16; };
  // Read addresses as a per-thread offset and per-step constants where the layouts allow
  // (mma_operand.h): one LOP3 per ldmatrix instead of the swizzle's five or six. Only with
  // Prefetch: the split keeps a few more addresses live, and where registers are short
  // (one fragment buffer) that costs more than the instructions it saves (H200: sparse MLA
  // backward 0.1505 ms per-read, 0.1572 split; mma.sync GEMMs of 32-row blocks 0.7-1.8%
  // faster split).
  using Grid = mma_warp_grid<M, N, WM, WN, MFastest, InterleaveM>;
  using PartsA = layout_parts<sizeof(T), SwzA, LdA>;
  using PartsB = layout_parts<sizeof(T), SwzB, LdB>;
  using ReadsA = mma_a_reads<Grid, K, kK, kChunk, TransA>;
  using ReadsB = mma_b_reads<Grid, K, kK, kChunk, TransB>;
  constexpr bool kSplitA = TL_MMA_SPLIT_ADDRESSES && Prefetch && !ARegs && split_reads<PartsA, ReadsA, Grid::kWarps>();
  constexpr bool kSplitB = TL_MMA_SPLIT_ADDRESSES && Prefetch && split_reads<PartsB, ReadsB, Grid::kWarps>();
  unsigned a_thread = 0, b_thread = 0;
  if constexpr (kSplitA || kSplitB) {
    // The thread parts come from a thread index read the compiler cannot hoist: computed per
    // GEMM call, they hold no registers across the loop around it (hoisted, a kernel with
    // several GEMMs in a loop kept a dozen of them live and spilled).
    const int opaque_tid = opaque_flat_thread_index(), opaque_lane = opaque_tid & 31,
              opaque_warp = (opaque_tid >> 5) % (WM * WN);
    // (And their bits are hidden: knowing them, the compiler turns the step constant's add
    // into an OR, which no longer folds into the ldmatrix address's immediate.)
    if constexpr (kSplitA) a_thread = opaque_u32(split_thread_offset<PartsA>(ReadsA::thread(opaque_lane, opaque_warp)));
    if constexpr (kSplitB) b_thread = opaque_u32(split_thread_offset<PartsB>(ReadsB::thread(opaque_lane, opaque_warp)));
  }
  Acc(*acc)[kTilesN][4] = reinterpret_cast<Acc(*)[kTilesN][4]>(C);
  // Prefetch: fragments of step kk + kK are loaded before the mma of step kk, so
  // shared-memory latency overlaps tensor-core work (two register buffers, selected at
  // compile time). Without: one buffer, loaded right before its mmas (fewer live registers
  // in kernels whose accumulators nearly fill the register file).
  uint32_t a[Prefetch ? 2 : 1][kTilesM][4];
  uint32_t b[Prefetch ? 2 : 1][kTilesN][2];
  auto load = [&](int kk, uint32_t (&fa)[kTilesM][4], uint32_t (&fb)[kTilesN][2]) {
#pragma unroll
    for (int mt = 0; mt < kTilesM; ++mt) {
      const int m = slice(mt);
      if constexpr (ARegs) {
        const uint32_t* regs = reinterpret_cast<const uint32_t*>(A) + (mt * (K / 4) + kk / 4) * 2;
#pragma unroll
        for (int i = 0; i < 4; ++i) fa[mt][i] = regs[i];
      } else if constexpr (kSplitA) {
        const char* p = reinterpret_cast<const char*>(A) + split_offset<PartsA>(a_thread, ReadsA::step_at(kk, mt));
        if constexpr (!TransA) {
          ldmatrix_x4(fa[mt], p);
        } else {
          ldmatrix_x4_trans(fa[mt], p);
        }
      } else if constexpr (!TransA) {
        const int row = m + (lane & 15), col = kk + (lane >> 4) * kChunk;
        ldmatrix_x4(fa[mt], A + swizzle<sizeof(T), SwzA, LdA>(row * LdA + col));
      } else {
        const int row = kk + (lane & 7) + (lane >> 4) * 8, col = m + ((lane >> 3) & 1) * 8;
        ldmatrix_x4_trans(fa[mt], A + swizzle<sizeof(T), SwzA, LdA>(row * LdA + col));
      }
    }
#pragma unroll
    for (int nt = 0; nt + 1 < kTilesN; nt += 2) {
      const int n = n0 + nt * 8;
      uint32_t r[4];
      if constexpr (kSplitB) {
        const char* p = reinterpret_cast<const char*>(B) + split_offset<PartsB>(b_thread, ReadsB::step_at(kk, nt));
        if constexpr (!TransB) {
          ldmatrix_x4_trans(r, p);
        } else {
          ldmatrix_x4(r, p);
        }
      } else if constexpr (!TransB) {
        const int row = kk + (lane & 15), col = n + (lane >> 4) * 8;
        ldmatrix_x4_trans(r, B + swizzle<sizeof(T), SwzB, LdB>(row * LdB + col));
      } else {
        const int row = n + (lane & 7) + (lane >> 4) * 8, col = kk + ((lane >> 3) & 1) * kChunk;
        ldmatrix_x4(r, B + swizzle<sizeof(T), SwzB, LdB>(row * LdB + col));
      }
      fb[nt][0] = r[0];
      fb[nt][1] = r[1];
      fb[nt + 1][0] = r[2];
      fb[nt + 1][1] = r[3];
    }
    if constexpr (kTilesN % 2 == 1) {
      const int nt = kTilesN - 1, n = n0 + nt * 8;
      uint32_t r[2];
      if constexpr (!TransB) {
        const int row = kk + (lane & 15), col = n;
        ldmatrix_x2_trans(r, B + swizzle<sizeof(T), SwzB, LdB>(row * LdB + col));
      } else {
        const int row = n + (lane & 7), col = kk + ((lane >> 3) & 1) * kChunk;
        ldmatrix_x2(r, B + swizzle<sizeof(T), SwzB, LdB>(row * LdB + col));
      }
      fb[nt][0] = r[0];
      fb[nt][1] = r[1];
    }
    if constexpr (Shape::kTf32) {
      // The tensor cores read only a tf32 register's top 19 bits (truncating); round to
      // nearest first (cvt.rna), as the CPU target and the loop path do.
      if constexpr (!AExact) {
#pragma unroll
        for (int mt = 0; mt < kTilesM; ++mt)
#pragma unroll
          for (int i = 0; i < 4; ++i) fa[mt][i] = float_to_tf32(__uint_as_float(fa[mt][i]));
      }
#pragma unroll
      for (int nt = 0; nt < kTilesN; ++nt)
#pragma unroll
        for (int i = 0; i < 2; ++i) fb[nt][i] = float_to_tf32(__uint_as_float(fb[nt][i]));
    }
  };
  if constexpr (Prefetch) load(0, a[0], b[0]);
#pragma unroll
  for (int kk = 0; kk < K; kk += kK) {
    const int cur = Prefetch ? (kk / kK) & 1 : 0;
    if constexpr (Prefetch) {
      if (kk + kK < K) load(kk + kK, a[cur ^ 1], b[cur ^ 1]);
    } else {
      load(kk, a[0], b[0]);
    }
#pragma unroll
    for (int mt = 0; mt < kTilesM; ++mt) {
#pragma unroll
      for (int nt = 0; nt < kTilesN; ++nt) {
        mma_tile<T>(acc[mt][nt], a[cur][mt], b[cur][nt]);
      }
    }
  }
}

/// Any other types: each thread computes its own accumulator elements from shared memory
/// (Tf32: float operands rounded to TF32 first, tl::round_tf32).
template <int M, int N, int K, int WM, int WN, bool TransA, bool TransB, int LdA, int LdB, int SwzA, int SwzB,
          bool MFastest, bool InterleaveM, bool Tf32, typename TA, typename TB, typename TC>
TL_DEVICE void gemm_ss_simt(const TA* A, const TB* B, TC* C) {
  constexpr int kWarpM = M / WM, kWarpN = N / WN, kTilesN = kWarpN / 8;
  constexpr int kLocal = M * N / (32 * WM * WN);
  const int tid = flat_thread_index();
  // (modulo the GEMM's warps: a GEMM of a range of warps under a branch on the thread
  // index, starting on a multiple of its size, numbers them from the range's first)
  const int lane = tid & 31, warp = (tid >> 5) % (WM * WN);
  const int wm = MFastest ? warp % WM : warp / WN, n0 = (MFastest ? warp / WM : warp % WN) * kWarpN;
#pragma unroll 1
  for (int l = 0; l < kLocal; ++l) {
    const int reg = l & 3, tile = l >> 2, mt = tile / kTilesN;
    const int i = (InterleaveM ? (mt * WM + wm) * 16 : wm * kWarpM + mt * 16) + (lane >> 2) + (reg >> 1) * 8;
    const int j = n0 + (tile % kTilesN) * 8 + (lane & 3) * 2 + (reg & 1);
    // A 16- or 8-bit accumulator sums the call's K products in float and is rounded once
    // (as a tensor core rounds once per instruction), not after every multiply-add.
    using Acc = typename detail::compute_type<TC>::type;
    Acc sum = static_cast<Acc>(C[l]);
    for (int k = 0; k < K; ++k) {
      TA a = A[swizzle<sizeof(TA), SwzA, LdA>(TransA ? k * LdA + i : i * LdA + k)];
      TB b = B[swizzle<sizeof(TB), SwzB, LdB>(TransB ? j * LdB + k : k * LdB + j)];
      if constexpr (Tf32) {
        a = round_tf32(a);
        b = round_tf32(b);
      }
      sum += static_cast<Acc>(static_cast<TC>(a)) * static_cast<Acc>(static_cast<TC>(b));
    }
    C[l] = static_cast<TC>(sum);
  }
}

}  // namespace detail

/// C (M x N, registers) += A (M x K, registers) * op(B) (K x N, shared), for warps stacked
/// along M only (WM warps, each owning M/WM whole rows). A is held in the accumulator
/// layout of an M x K mma tile grid (as the fragment of a previous GEMM, cast to 16 bits):
/// two adjacent 16x8 accumulator tiles are exactly one m16n8k16 A operand, so A's
/// registers are packed in place, with no trip through shared memory.
template <int M, int N, int K, int WM, bool TransB, int LdB, int SwzB, typename T>
TL_DEVICE void gemm_rs(const T* A, const T* B, float* C) {
  constexpr int kWarpM = M / WM, kTilesM = kWarpM / 16, kTilesN = N / 8, kTilesK = K / 8;
  static_assert(kWarpM % 16 == 0 && N % 8 == 0 && K % 16 == 0, "gemm_rs: tile shape");
  const int lane = flat_thread_index() & 31;
  float(*acc)[kTilesN][4] = reinterpret_cast<float(*)[kTilesN][4]>(C);
  const T(*a_regs)[kTilesK][4] = reinterpret_cast<const T(*)[kTilesK][4]>(A);
  auto pack = [](T lo, T hi) { return uint32_t(lo.bits) | (uint32_t(hi.bits) << 16); };
#pragma unroll
  for (int kk = 0; kk < K; kk += 16) {
    const int kt = kk / 8;
    uint32_t a[kTilesM][4];
#pragma unroll
    for (int mt = 0; mt < kTilesM; ++mt) {
      a[mt][0] = pack(a_regs[mt][kt][0], a_regs[mt][kt][1]);
      a[mt][1] = pack(a_regs[mt][kt][2], a_regs[mt][kt][3]);
      a[mt][2] = pack(a_regs[mt][kt + 1][0], a_regs[mt][kt + 1][1]);
      a[mt][3] = pack(a_regs[mt][kt + 1][2], a_regs[mt][kt + 1][3]);
    }
#pragma unroll
    for (int nt = 0; nt < kTilesN; nt += 2) {
      uint32_t b[2][2];
      const int n = nt * 8;
      if (nt + 1 < kTilesN) {
        uint32_t r[4];
        if constexpr (!TransB) {
          const int row = kk + (lane & 15), col = n + (lane >> 4) * 8;
          ldmatrix_x4_trans(r, B + swizzle<sizeof(T), SwzB, LdB>(row * LdB + col));
        } else {
          const int row = n + (lane & 7) + (lane >> 4) * 8, col = kk + ((lane >> 3) & 1) * 8;
          ldmatrix_x4(r, B + swizzle<sizeof(T), SwzB, LdB>(row * LdB + col));
        }
        b[0][0] = r[0];
        b[0][1] = r[1];
        b[1][0] = r[2];
        b[1][1] = r[3];
      } else {
        uint32_t r[2];
        if constexpr (!TransB) {
          const int row = kk + (lane & 15), col = n;
          ldmatrix_x2_trans(r, B + swizzle<sizeof(T), SwzB, LdB>(row * LdB + col));
        } else {
          const int row = n + (lane & 7), col = kk + ((lane >> 3) & 1) * 8;
          ldmatrix_x2(r, B + swizzle<sizeof(T), SwzB, LdB>(row * LdB + col));
        }
        b[0][0] = r[0];
        b[0][1] = r[1];
      }
#pragma unroll
      for (int mt = 0; mt < kTilesM; ++mt) {
        mma_m16n8k16<T>(acc[mt][nt], a[mt], b[0], acc[mt][nt]);
        if (nt + 1 < kTilesN) mma_m16n8k16<T>(acc[mt][nt + 1], a[mt], b[1], acc[mt][nt + 1]);
      }
    }
  }
}

/// C (M x N, registers) += A (M x K, registers) * B^T (B: N x K, shared) on the tf32 tensor
/// cores (m16n8k8), A held in the tf32 A-operand layout over the accumulator's warp grid
/// (layout::MmaTf32ALayout: each warp along N has a copy of its rows), rounded to TF32 as
/// gemm_ss rounds; no trip through shared memory for A.
/// AExact: every value of A is already exact in TF32 (widened from 16-bit floats): A is not
/// rounded again.
template <int M, int N, int K, int WM, int WN, bool MFastest, bool InterleaveM, int LdB, int SwzB, bool AExact = false>
TL_DEVICE void gemm_rs_tf32(const float* A, const float* B, float* C) {
  detail::gemm_ss_mma<M, N, K, WM, WN, false, true, K, LdB, kRowMajor, SwzB, MFastest, InterleaveM, true, true, AExact>(
      A, B, C);
}

/// The block's tile GEMM (see the file comment). All threads of the block must call it, or
/// all those of a range of WM x WN warps starting on a multiple of that count.
/// Tf32: a T.gemm on tfloat32 tiles (float A, B, C): operands rounded to TF32, on the tf32
/// tensor cores (m16n8k8) where the layouts allow, else in the loops.
template <int M, int N, int K, int WM, int WN, bool TransA, bool TransB, int LdA, int LdB, int SwzA, int SwzB,
          bool MFastest = false, bool InterleaveM = false, bool Tf32 = false,
          bool Prefetch = TL_MMA_PREFETCH_FRAGMENTS != 0, typename TA, typename TB, typename TC>
TL_DEVICE void gemm_ss(const TA* A, const TB* B, TC* C) {
  // Mirrors the compiler's choice (cuda::MmaSyncUnfit), which reports it.
  using Shape = detail::mma_shape<TA, Tf32>;
  static_assert(!Tf32 || (detail::is_same<TA, float>::value && detail::is_same<TB, float>::value &&
                          detail::is_same<TC, float>::value), "gemm_ss: a tf32 GEMM takes float A, B and C");
  // The tf32 tensor-core path only with TL_TF32_MMA, which the JIT defines unless the pass
  // config "tl.enable_tf32_mma" is false; without it the rounding loops (same layout, same
  // rounding of the operands).
#ifdef TL_TF32_MMA
  constexpr bool kTf32Mma = true;
#else
  constexpr bool kTf32Mma = false;
#endif
  // A half accumulator for half operands (m16n8k16 .f16) with TL_MMA_F16_ACC, which the JIT
  // defines unless the pass config "tl.mma_f16_accumulators" is turned off.
#ifdef TL_MMA_F16_ACC
  constexpr bool kF16Acc = detail::is_same<TA, half>::value && detail::is_same<TC, half>::value;
#else
  constexpr bool kF16Acc = false;
#endif
  constexpr bool kTensorCore = detail::is_same<TA, TB>::value &&
                               (detail::is_same<TC, typename Shape::Acc>::value || kF16Acc) && K % Shape::kK == 0 &&
                               (Shape::kSixteen || ((Shape::kInt8 || (Shape::kTf32 && kTf32Mma)) && !TransA && TransB));
  if constexpr (kTensorCore) {
    detail::gemm_ss_mma<M, N, K, WM, WN, TransA, TransB, LdA, LdB, SwzA, SwzB, MFastest, InterleaveM, Tf32, false,
                        false, Prefetch>(A, B, C);
  } else {
    detail::gemm_ss_simt<M, N, K, WM, WN, TransA, TransB, LdA, LdB, SwzA, SwzB, MFastest, InterleaveM, Tf32>(A, B, C);
  }
}

}  // namespace tl
