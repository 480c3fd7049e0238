// SPDX-License-Identifier: Apache-2.0
/// \file Single-threaded tile GEMM for generated CPU kernels.
///
/// Generated kernels call tl::cpu::gemm once per K-step of a blocked matmul,
/// from inside their own OpenMP parallel region, so this code never spawns
/// threads and keeps its scratch buffers on the stack (large thread_local
/// arrays can fail to load in dlopen'ed kernels).
///
/// Float path (C float, A/B float, half or bfloat16): B is packed (and, for
/// 16-bit inputs, widened) into zero-padded panels of kNR columns, so the
/// micro-kernel always reads whole aligned vectors of B whatever the
/// transposition and however ragged N is. A is read in place when it is float
/// (a broadcast works equally well from either layout) and widened into a
/// row-major block otherwise. The micro-kernel keeps a kMR x kNR tile of C in
/// vector registers for the whole K loop: per k it loads kNV vectors of B,
/// broadcasts kMR values of A and issues kMR * kNV fused multiply-adds.
/// Everything else (double, int8 -> int32, ...) uses a plain loop.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "math.h"
#include "types.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace tl::cpu {

namespace gemm_detail {

// Register tile: kMR rows x kNV vectors of C. The accumulators, kNV vectors
// of B and one broadcast must fit the register file (32 zmm / 16 ymm / 16
// xmm) with enough independent FMA chains to cover FMA latency. Wide, short
// tiles measured best on the 128x128x32 shape (AVX-512: 4x64 ran at ~85% of
// peak, 8x32 at ~78%, 2x128 at ~72%; AVX2: 3x32 beat 6x16): each k step
// needs only kMR + kNV loads, and C rows are touched in long contiguous runs.
#if defined(__AVX512F__)
inline constexpr int kVec = 16;  ///< Floats per vector register.
inline constexpr int kMR = 4;    ///< Rows of C per micro-tile.
inline constexpr int kNV = 4;    ///< Vectors of C per micro-tile row.
#elif defined(__AVX__)
inline constexpr int kVec = 8;
inline constexpr int kMR = 3;
inline constexpr int kNV = 4;
#else
inline constexpr int kVec = 4;
inline constexpr int kMR = 3;
inline constexpr int kNV = 4;
#endif
inline constexpr int kNR = kVec * kNV;    ///< Columns of C per micro-tile (= B panel width).
inline constexpr int kKC = 64;            ///< K block: B block (kKC x kNC floats) stays in L1.
inline constexpr int kNC = 128;           ///< N block, a multiple of kNR.
inline constexpr int kMC = 64;            ///< M block when A must be widened.
static_assert(kNC % kNR == 0, "N block must hold whole panels");

#if defined(__GNUC__)
/// One SIMD register of floats (GCC/Clang vector extension; lowered to the
/// widest ISA enabled, and to scalar code where there is none).
typedef float vfloat __attribute__((vector_size(kVec * sizeof(float))));
#define TL_CPU_GEMM_VECTOR 1
#else
/// Portable stand-in for a SIMD register.
struct vfloat {
  float v[kVec];
};
#endif

/// Loads kVec floats from any address.
inline vfloat vload(const float* p) {
  vfloat v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Stores kVec floats to any address.
inline void vstore(float* p, vfloat v) { std::memcpy(p, &v, sizeof v); }

/// acc += b * s.
inline void vfma(vfloat& acc, vfloat b, float s) {
#if defined(TL_CPU_GEMM_VECTOR)
  acc += b * s;  // Contracted to an FMA where the ISA has one.
#else
  for (int l = 0; l < kVec; ++l) acc.v[l] += b.v[l] * s;
#endif
}

/// All-zero vector.
inline vfloat vzero() {
  vfloat v;
  std::memset(&v, 0, sizeof v);
  return v;
}

/// C[0:MR, 0:nr] += a[0:MR, 0:kc] * bp[0:kc, 0:nr], with NV = ceil(nr / kVec).
/// a(r, k) is a[r * lda + k], or a[k * lda + r] when kTransA. bp is a packed
/// panel (row k at bp + k * kNR, zero-padded). kFull: nr == NV * kVec, so C
/// is read and written as whole vectors; otherwise the tile goes through a
/// buffer so that no column past nr is touched.
template <int MR, int NV, bool kTransA, bool kFull>
inline void micro_kernel(int kc, const float* a, std::ptrdiff_t lda, const float* bp, float* c,
                         std::ptrdiff_t ldc, int nr) {
  vfloat acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = kFull ? vload(c + r * ldc + v * kVec) : vzero();
  // kc >= 1 always; a do-while spares the compiler a zero-trip path that
  // would force the accumulators through memory.
  int k = 0;
  do {
    vfloat b[NV];
    for (int v = 0; v < NV; ++v) b[v] = vload(bp + k * kNR + v * kVec);
    for (int r = 0; r < MR; ++r) {
      const float s = kTransA ? a[k * lda + r] : a[r * lda + k];
      for (int v = 0; v < NV; ++v) vfma(acc[r][v], b[v], s);
    }
  } while (++k < kc);
  if constexpr (kFull) {
    for (int r = 0; r < MR; ++r)
      for (int v = 0; v < NV; ++v) vstore(c + r * ldc + v * kVec, acc[r][v]);
  } else {
    alignas(64) float tile[MR][NV * kVec];
    for (int r = 0; r < MR; ++r)
      for (int v = 0; v < NV; ++v) vstore(&tile[r][v * kVec], acc[r][v]);
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < nr; ++j) c[r * ldc + j] += tile[r][j];
  }
}

/// Runs the micro-kernel for a tile of mr (1..MR) rows and nv (1..NV)
/// vectors. Every shape is its own instantiation so that the accumulators
/// stay in registers and narrow edge panels do no wasted work.
template <int MR, int NV, bool kTransA, bool kFull>
inline void micro_dispatch(int mr, int nv, int kc, const float* a, std::ptrdiff_t lda, const float* bp, float* c,
                           std::ptrdiff_t ldc, int nr) {
  if constexpr (NV > 1) {
    if (nv < NV) return micro_dispatch<MR, NV - 1, kTransA, kFull>(mr, nv, kc, a, lda, bp, c, ldc, nr);
  }
  if constexpr (MR > 1) {
    if (mr < MR) return micro_dispatch<MR - 1, NV, kTransA, kFull>(mr, nv, kc, a, lda, bp, c, ldc, nr);
  }
  micro_kernel<MR, NV, kTransA, kFull>(kc, a, lda, bp, c, ldc, nr);
}

/// Widens one element to float (identity for float).
template <typename T>
inline float to_f32(T x) {
  return static_cast<float>(x);
}

/// dst[0:n] = float(src[0:n]). Vectorised for half (F16C) and bfloat16 (a
/// shift the compiler vectorises): element-wise conversion would otherwise
/// cost more than the GEMM itself.
template <typename T>
inline void widen_row(const T* src, float* dst, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
  if constexpr (std::is_same<T, half>::value) {
#if defined(__F16C__)
    // (A separate bound, rather than i + 8 <= n, keeps GCC's loop analysis quiet.)
    const std::ptrdiff_t n8 = n & ~std::ptrdiff_t(7);
    for (; i < n8; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
    for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
  } else if constexpr (std::is_same<T, bfloat16>::value) {
    for (; i < n; ++i) dst[i] = detail::bfloat16_bits_to_float(src[i].bits);
  } else {
    for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
  }
}

#if defined(__AVX__)
/// Transposes an 8x8 float block: dst[c * ds + r] = src[r * ss + c].
/// The 128-bit halves are placed by (cheap) inserting loads, so only two
/// rounds of in-lane shuffles are needed instead of three.
inline void transpose_8x8(const float* src, std::ptrdiff_t ss, float* dst, std::ptrdiff_t ds) {
  auto pair = [&](int r, int c) {  // [row r, cols c..c+3 | row r+4, cols c..c+3]
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(src + r * ss + c)),
                                _mm_loadu_ps(src + (r + 4) * ss + c), 1);
  };
  for (int c = 0; c < 8; c += 4) {
    const __m256 r0 = pair(0, c), r1 = pair(1, c), r2 = pair(2, c), r3 = pair(3, c);
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    _mm256_storeu_ps(dst + (c + 0) * ds, _mm256_shuffle_ps(t0, t2, 0x44));
    _mm256_storeu_ps(dst + (c + 1) * ds, _mm256_shuffle_ps(t0, t2, 0xee));
    _mm256_storeu_ps(dst + (c + 2) * ds, _mm256_shuffle_ps(t1, t3, 0x44));
    _mm256_storeu_ps(dst + (c + 3) * ds, _mm256_shuffle_ps(t1, t3, 0xee));
  }
}
#else
/// Transposes an 8x8 float block: dst[c * ds + r] = src[r * ss + c].
inline void transpose_8x8(const float* src, std::ptrdiff_t ss, float* dst, std::ptrdiff_t ds) {
  for (int c = 0; c < 8; ++c)
    for (int r = 0; r < 8; ++r) dst[c * ds + r] = src[r * ss + c];
}
#endif

/// Packs b(k0:k0+kc, j0:j0+nc) into panels of kNR columns: panel p holds
/// columns j0 + p*kNR ..., row k at dst + p*kc*kNR + k*kNR, zero-padded.
template <bool kTransB, typename TB>
inline void pack_b(const TB* B, std::ptrdiff_t ldb, int k0, int kc, int j0, int nc, float* dst) {
  using idx = std::ptrdiff_t;  // Wide indices: no int overflow, and no UB for the optimiser to reason about.
  for (idx jr = 0; jr < nc; jr += kNR) {
    const idx nr = std::min<idx>(kNR, nc - jr);
    float* panel = dst + jr * kc;  // == (jr / kNR) * kc * kNR
    if constexpr (!kTransB) {
      for (idx k = 0; k < kc; ++k) {
        const TB* src = B + (k0 + k) * ldb + j0 + jr;
        float* row = panel + k * kNR;
        if constexpr (std::is_same<TB, float>::value) {
          if (nr == kNR) {  // Whole vectors: a plain loop here becomes a slow `rep movs` memcpy.
            for (int v = 0; v < kNV; ++v) vstore(row + v * kVec, vload(src + v * kVec));
            continue;
          }
        }
        widen_row(src, row, nr);
        for (idx j = nr; j < kNR; ++j) row[j] = 0.0f;
      }
    } else {
      // b(k, j) = B[j * ldb + k]: source rows run along k. Groups of 8 rows
      // go through 8x8 register transposes (16-bit rows are widened into a
      // small buffer first); the remaining rows and k tail are copied singly.
      const TB* src = B + (j0 + jr) * ldb + k0;
      const idx nr8 = nr & ~idx(7), kc8 = kc & ~idx(7);
      alignas(64) float wide[std::is_same<TB, float>::value ? 1 : 8 * kKC];
      for (idx j = 0; j < nr8; j += 8) {
        const float* rows;
        idx rs;
        if constexpr (std::is_same<TB, float>::value) {
          rows = src + j * ldb;
          rs = ldb;
        } else {
          for (idx jj = 0; jj < 8; ++jj) widen_row(src + (j + jj) * ldb, wide + jj * kKC, kc);
          rows = wide;
          rs = kKC;
        }
        for (idx k = 0; k < kc8; k += 8) transpose_8x8(rows + k, rs, panel + k * kNR + j, kNR);
        for (idx k = kc8; k < kc; ++k)
          for (idx jj = 0; jj < 8; ++jj) panel[k * kNR + j + jj] = rows[jj * rs + k];
      }
      for (idx j = nr8; j < nr; ++j)
        for (idx k = 0; k < kc; ++k) panel[k * kNR + j] = to_f32(src[j * ldb + k]);
      for (idx k = 0; k < kc; ++k)
        for (idx jj = nr; jj < kNR; ++jj) panel[k * kNR + jj] = 0.0f;
    }
  }
}

/// Widens a 16-bit A block into floats, keeping A's own layout (so no
/// transposition is needed): a(i0:i0+mc, k0:k0+kc) goes to a row-major
/// mc x kc block, or for kTransA to a kc x mc block; either way the leading
/// dimension of the result is its row length.
template <bool kTransA, typename TA>
inline void pack_a(const TA* A, std::ptrdiff_t lda, int i0, int mc, int k0, int kc, float* dst) {
  if constexpr (!kTransA) {
    for (std::ptrdiff_t i = 0; i < mc; ++i) widen_row(A + (i0 + i) * lda + k0, dst + i * kc, kc);
  } else {
    for (std::ptrdiff_t k = 0; k < kc; ++k) widen_row(A + (k0 + k) * lda + i0, dst + k * mc, mc);
  }
}

/// C(0:mc, 0:nc) += a(0:mc, 0:kc) * packed B block.
template <bool kTransA>
inline void macro_kernel(int mc, int nc, int kc, const float* a, std::ptrdiff_t lda, const float* bpack,
                         float* c, std::ptrdiff_t ldc) {
  // Rows outermost: the packed B block (kc x nc) stays in L1 while each
  // strip of A and C is streamed through exactly once.
  for (int ir = 0; ir < mc; ir += kMR) {
    const int mr = std::min(kMR, mc - ir);
    const float* ap = kTransA ? a + ir : a + ir * lda;
    for (int jr = 0; jr < nc; jr += kNR) {
      const int nr = std::min(kNR, nc - jr);
      const int nv = (nr + kVec - 1) / kVec;
      const float* bp = bpack + static_cast<std::ptrdiff_t>(jr) * kc;  // Panel jr / kNR.
      float* cp = c + ir * ldc + jr;
      if (nr == nv * kVec)
        micro_dispatch<kMR, kNV, kTransA, true>(mr, nv, kc, ap, lda, bp, cp, ldc, nr);
      else
        micro_dispatch<kMR, kNV, kTransA, false>(mr, nv, kc, ap, lda, bp, cp, ldc, nr);
    }
  }
}

/// Float-accumulating path for float / half / bfloat16 operands.
template <bool kTransA, bool kTransB, typename TA, typename TB>
inline void gemm_f32(const TA* A, const TB* B, float* C, int M, int N, int K, std::ptrdiff_t lda,
                     std::ptrdiff_t ldb, std::ptrdiff_t ldc) {
  alignas(64) float bpack[kKC * kNC];
  for (int k0 = 0; k0 < K; k0 += kKC) {
    const int kc = std::min(kKC, K - k0);
    for (int j0 = 0; j0 < N; j0 += kNC) {
      const int nc = std::min(kNC, N - j0);
      pack_b<kTransB>(B, ldb, k0, kc, j0, nc, bpack);
      if constexpr (std::is_same<TA, float>::value) {
        const float* a = kTransA ? A + k0 * lda : A + k0;
        macro_kernel<kTransA>(M, nc, kc, a, lda, bpack, C + j0, ldc);
      } else {
        alignas(64) float apack[kMC * kKC];
        for (int i0 = 0; i0 < M; i0 += kMC) {
          const int mc = std::min(kMC, M - i0);
          pack_a<kTransA>(A, lda, i0, mc, k0, kc, apack);
          macro_kernel<kTransA>(mc, nc, kc, apack, kTransA ? mc : kc, bpack, C + i0 * ldc + j0, ldc);
        }
      }
    }
  }
}

/// Every other type combination (double, int8 -> int32, ...); products in TC.
/// B is converted block by block into a row-major TC buffer, so the inner
/// loop is a contiguous multiply-add over j that the compiler vectorises
/// whatever the operand types and transposition.
template <bool kTransA, bool kTransB, typename TA, typename TB, typename TC>
inline void gemm_generic(const TA* A, const TB* B, TC* C, int M, int N, int K, std::ptrdiff_t lda,
                         std::ptrdiff_t ldb, std::ptrdiff_t ldc) {
  using idx = std::ptrdiff_t;
  constexpr int kBK = 64, kBN = 64;  // At most 32 KiB of stack for double.
  TC bbuf[kBK * kBN];
  for (idx k0 = 0; k0 < K; k0 += kBK) {
    const idx kc = std::min<idx>(kBK, K - k0);
    for (idx j0 = 0; j0 < N; j0 += kBN) {
      const idx nc = std::min<idx>(kBN, N - j0);
      if constexpr (!kTransB) {
        for (idx k = 0; k < kc; ++k)
          for (idx j = 0; j < nc; ++j) bbuf[k * nc + j] = static_cast<TC>(B[(k0 + k) * ldb + j0 + j]);
      } else {
        for (idx j = 0; j < nc; ++j)
          for (idx k = 0; k < kc; ++k) bbuf[k * nc + j] = static_cast<TC>(B[(j0 + j) * ldb + k0 + k]);
      }
      for (idx i = 0; i < M; ++i) {
        TC* crow = C + i * ldc + j0;
        for (idx k = 0; k < kc; ++k) {
          const TC a = static_cast<TC>(kTransA ? A[(k0 + k) * lda + i] : A[i * lda + k0 + k]);
          const TC* brow = bbuf + k * nc;
          for (idx j = 0; j < nc; ++j) crow[j] += a * brow[j];
        }
      }
    }
  }
}

/// True for the operand types the float path widens on the fly.
template <typename T>
inline constexpr bool is_f32_operand_v =
    std::is_same<T, float>::value || std::is_same<T, half>::value || std::is_same<T, bfloat16>::value;

}  // namespace gemm_detail

/// C[i*ldc + j] += sum_k a(i,k) * b(k,j) for 0 <= i < M, 0 <= j < N.
///
/// a(i,k) = A[i*lda + k], or A[k*lda + i] when kTransA;
/// b(k,j) = B[k*ldb + j], or B[j*ldb + k] when kTransB.
/// Products and sums are computed in TC. Any M, N, K >= 0 is accepted.
/// kTf32 (float A, B and C only): every element of A and B is rounded to TF32 first
/// (tl::round_tf32, as the CUDA target's tf32 tensor cores take them), a T.gemm on tfloat32 tiles.
/// Single-threaded and reentrant: safe to call from inside an OpenMP region.
template <bool kTransA, bool kTransB, bool kTf32 = false, typename TA, typename TB, typename TC>
inline void gemm(const TA* A, const TB* B, TC* C, int M, int N, int K, int lda, int ldb, int ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  if constexpr (kTf32) {
    static_assert(std::is_same<TA, float>::value && std::is_same<TB, float>::value && std::is_same<TC, float>::value,
                  "tf32 GEMM: float operands and accumulator");
    // Rounded copies of A and B (each in its own orientation, rows packed), then the float path.
    const int ra = kTransA ? K : M, ca = kTransA ? M : K, rb = kTransB ? N : K, cb = kTransB ? K : N;
    std::unique_ptr<float[]> a(new float[static_cast<std::size_t>(ra) * ca]);
    std::unique_ptr<float[]> b(new float[static_cast<std::size_t>(rb) * cb]);
    for (int r = 0; r < ra; ++r)
      for (int c = 0; c < ca; ++c) a[static_cast<std::size_t>(r) * ca + c] = round_tf32(A[static_cast<std::ptrdiff_t>(r) * lda + c]);
    for (int r = 0; r < rb; ++r)
      for (int c = 0; c < cb; ++c) b[static_cast<std::size_t>(r) * cb + c] = round_tf32(B[static_cast<std::ptrdiff_t>(r) * ldb + c]);
    gemm_detail::gemm_f32<kTransA, kTransB>(a.get(), b.get(), C, M, N, K, ca, cb, ldc);
  } else if constexpr (std::is_same<TC, half>::value || std::is_same<TC, bfloat16>::value || detail::is_float8<TC>::value) {
    // A 16- or 8-bit accumulator: the call's K products are summed in float and rounded
    // into C once (as the CUDA library does, and as a tensor core rounds once per
    // instruction), not after every multiply-add.
    std::unique_ptr<float[]> acc(new float[static_cast<std::size_t>(M) * N]);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) acc[static_cast<std::size_t>(i) * N + j] = static_cast<float>(C[i * ldc + j]);
    if constexpr (gemm_detail::is_f32_operand_v<TA> && gemm_detail::is_f32_operand_v<TB>) {
      gemm_detail::gemm_f32<kTransA, kTransB>(A, B, acc.get(), M, N, K, lda, ldb, N);
    } else {
      gemm_detail::gemm_generic<kTransA, kTransB>(A, B, acc.get(), M, N, K, lda, ldb, N);
    }
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) C[i * ldc + j] = TC(acc[static_cast<std::size_t>(i) * N + j]);
  } else if constexpr (std::is_same<TC, float>::value && gemm_detail::is_f32_operand_v<TA> &&
                       gemm_detail::is_f32_operand_v<TB>) {
    gemm_detail::gemm_f32<kTransA, kTransB>(A, B, C, M, N, K, lda, ldb, ldc);
  } else {
    gemm_detail::gemm_generic<kTransA, kTransB>(A, B, C, M, N, K, lda, ldb, ldc);
  }
}

}  // namespace tl::cpu
