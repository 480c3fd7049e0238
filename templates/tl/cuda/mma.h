// SPDX-License-Identifier: Apache-2.0
/// \file Warp-level tensor-core MMA (mma.sync, sm_80+) for generated CUDA kernels.
///
/// D = A * B + C for one warp, A row-major (M x K), B column-major (K x N),
/// i.e. the `.row.col` forms. Fragments are per-lane register arrays; all 32
/// lanes must execute the call. d may be the same array as c.
///
/// FRAGMENT LAYOUTS (PTX ISA "Matrix Fragments for mma.m16n8k16 / m16n8k32 /
/// m16n8k8"). Per lane: g = lane >> 2 (groupID, 0..7), t = lane & 3
/// (threadID_in_group, 0..3). A register holding several narrow elements holds
/// the lowest-index one in its least significant bits.
///
/// m16n8k16, A/B .f16 or .bf16 (two 16-bit elements per register), C/D .f32:
///   A (16x16), uint32_t a[4]:
///     a[0] = { A[g  ][2t], A[g  ][2t+1] }
///     a[1] = { A[g+8][2t], A[g+8][2t+1] }
///     a[2] = { A[g  ][2t+8], A[g  ][2t+9] }
///     a[3] = { A[g+8][2t+8], A[g+8][2t+9] }
///   B (16x8), uint32_t b[2]:
///     b[0] = { B[2t  ][g], B[2t+1][g] }
///     b[1] = { B[2t+8][g], B[2t+9][g] }
///   C/D (16x8), float c[4]:
///     c[0] = C[g][2t]    c[1] = C[g][2t+1]
///     c[2] = C[g+8][2t]  c[3] = C[g+8][2t+1]
///   (.f16 accumulators, uint32_t c[2]: c[0] = {C[g][2t], C[g][2t+1]},
///    c[1] = {C[g+8][2t], C[g+8][2t+1]}.)
///   With row-major A in shared memory, ldmatrix_x4 with lane L pointing at
///   &A[L % 16][(L / 16) * 8] yields a[0..3]; with B stored K-major (B^T
///   row-major, N x K) ldmatrix_x2 at &Bt[L % 8][((L / 8) % 2) * 8] yields
///   b[0..1]; with B stored row-major (K x N) ldmatrix_x2_trans at
///   &B[L % 16][0] yields b[0..1].
///
/// m16n8k32, A/B .s8 or .u8 (four 8-bit elements per register), C/D .s32:
///   A (16x32), uint32_t a[4]:
///     a[0] = { A[g  ][4t .. 4t+3] }
///     a[1] = { A[g+8][4t .. 4t+3] }
///     a[2] = { A[g  ][4t+16 .. 4t+19] }
///     a[3] = { A[g+8][4t+16 .. 4t+19] }
///   B (32x8), uint32_t b[2]:
///     b[0] = { B[4t .. 4t+3][g] }
///     b[1] = { B[4t+16 .. 4t+19][g] }
///   C/D (16x8), int c[4]: same positions as the f32 C/D above.
///   (Byte-wise this is the 16-bit layout with each 16-bit element replaced
///   by a pair of bytes, so ldmatrix serves int8 tiles too.)
///
/// m16n8k8, A/B .tf32 (one element per 32-bit register), C/D .f32:
///   A (16x8), uint32_t a[4]:
///     a[0] = A[g][t]    a[1] = A[g+8][t]    a[2] = A[g][t+4]    a[3] = A[g+8][t+4]
///   B (8x8), uint32_t b[2]:
///     b[0] = B[t][g]    b[1] = B[t+4][g]
///   C/D (16x8), float c[4]: same positions as the f32 C/D above.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

// mma.sync has no side effects beyond its outputs; TL_MMA_ASM lets the compiler schedule
// it freely (`asm`) or keeps program order (`asm volatile`, the default).
#ifndef TL_MMA_ASM
#define TL_MMA_ASM asm volatile
#endif

namespace tl {

/// D = A * B + C, m16n8k16, A/B f16, C/D f32 (layouts in the file comment).
TL_DEVICE void mma_m16n8k16_f16f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
  TL_MMA_ASM(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

/// D = A * B + C, m16n8k16, A/B bf16, C/D f32 (layouts in the file comment).
TL_DEVICE void mma_m16n8k16_bf16f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                    const float (&c)[4]) {
  TL_MMA_ASM(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

/// D = A * B + C, m16n8k16, f32 accumulate, input type T = tl::half or tl::bfloat16.
template <typename T>
TL_DEVICE void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
  static_assert(detail::is_same<T, half>::value || detail::is_same<T, bfloat16>::value,
                "mma_m16n8k16<T>: T must be tl::half or tl::bfloat16");
  if constexpr (detail::is_same<T, half>::value) {
    mma_m16n8k16_f16f32(d, a, b, c);
  } else {
    mma_m16n8k16_bf16f32(d, a, b, c);
  }
}

/// D = A * B + C, m16n8k16, A/B f16, C/D f16 (two halves per register; see file comment).
TL_DEVICE void mma_m16n8k16_f16f16(uint32_t (&d)[2], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                   const uint32_t (&c)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
      "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};"
      : "=r"(d[0]), "=r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
}

/// D = A * B + C, m16n8k32, A/B signed int8, C/D int32 (wrapping, no saturation).
TL_DEVICE void mma_m16n8k32_s8s32(int (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const int (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
}

/// D = A * B + C, m16n8k32, A/B unsigned int8, C/D int32 (wrapping, no saturation).
TL_DEVICE void mma_m16n8k32_u8s32(int (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const int (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
}

/// float -> tf32 bit pattern (cvt.rna: round to nearest, ties away from zero),
/// the operand format of the tf32 mma.
TL_DEVICE uint32_t float_to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

/// D = A * B + C, m16n8k8, A/B tf32 bit patterns (see float_to_tf32), C/D f32.
TL_DEVICE void mma_m16n8k8_tf32f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

/// D = A * B + C, m16n8k8 tf32, taking plain floats: rounds A and B to tf32
/// (cvt.rna) first, so float32 GEMMs can feed their fragments directly.
TL_DEVICE void mma_m16n8k8_tf32f32(float (&d)[4], const float (&a)[4], const float (&b)[2], const float (&c)[4]) {
  const uint32_t ta[4] = {float_to_tf32(a[0]), float_to_tf32(a[1]), float_to_tf32(a[2]), float_to_tf32(a[3])};
  const uint32_t tb[2] = {float_to_tf32(b[0]), float_to_tf32(b[1])};
  mma_m16n8k8_tf32f32(d, ta, tb, c);
}


// --- mma_fragment: one warp's m16n8k MMA on per-thread element arrays ---------------------
// What TensorCoreIntrinEmitter.mma lowers to. The operands are arrays of elements (not
// registers) in the register order of the file comment: A's element v sits in register
// v / per at bits (v % per) * width, with per = 32 / width elements per register; likewise B
// (two registers) and C (four values). The registers are assembled here, so the arrays need
// no alignment beyond their element type's. With Words (mma_fragment<true>, printed where
// the code generator knows both operands start on a 4-byte boundary of a 4-byte aligned
// array) each register is read as one 32-bit word instead: ptxas then feeds mma.sync from
// the registers ldmatrix wrote, where assembling them from elements made it copy each
// (an emitter GEMM's k-tile: 47 IMAD with elements, 19 with words).

namespace detail {
TL_DEVICE uint32_t fragment_word(const half* p) { return pack_half2(p[0], p[1]); }
TL_DEVICE uint32_t fragment_word(const bfloat16* p) { return pack_bfloat162(p[0], p[1]); }
TL_DEVICE uint32_t fragment_word(const int8_t* p) {
  return static_cast<uint32_t>(static_cast<uint8_t>(p[0])) | (static_cast<uint32_t>(static_cast<uint8_t>(p[1])) << 8) |
         (static_cast<uint32_t>(static_cast<uint8_t>(p[2])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(p[3])) << 24);
}
TL_DEVICE uint32_t fragment_word(const uint8_t* p) { return fragment_word(reinterpret_cast<const int8_t*>(p)); }
template <bool Words, typename T>
TL_DEVICE void fragment_words(uint32_t (&a)[4], uint32_t (&b)[2], const T* pa, const T* pb) {
  if constexpr (Words) {
    const uint32_t* wa = reinterpret_cast<const uint32_t*>(pa);
    const uint32_t* wb = reinterpret_cast<const uint32_t*>(pb);
    for (int r = 0; r < 4; ++r) a[r] = wa[r];
    for (int r = 0; r < 2; ++r) b[r] = wb[r];
  } else {
    constexpr int per = 4 / sizeof(T);
    for (int r = 0; r < 4; ++r) a[r] = fragment_word(pa + r * per);
    for (int r = 0; r < 2; ++r) b[r] = fragment_word(pb + r * per);
  }
}
}  // namespace detail

/// C (16x8, float) += A (16x16) * B (16x8), A/B half or bfloat16.
template <bool Words = false, typename T>
TL_DEVICE void mma_fragment(float* c, const T* pa, const T* pb) {
  uint32_t a[4], b[2];
  detail::fragment_words<Words>(a, b, pa, pb);
  float acc[4] = {c[0], c[1], c[2], c[3]};
  mma_m16n8k16<T>(acc, a, b, acc);
  for (int i = 0; i < 4; ++i) c[i] = acc[i];
}

/// C (16x8, half) += A (16x16) * B (16x8), all half (the f16-accumulator form).
template <bool Words = false>
TL_DEVICE void mma_fragment(half* c, const half* pa, const half* pb) {
  uint32_t a[4], b[2];
  detail::fragment_words<Words>(a, b, pa, pb);
  uint32_t acc[2] = {pack_half2(c[0], c[1]), pack_half2(c[2], c[3])};
  mma_m16n8k16_f16f16(acc, a, b, acc);
  for (int i = 0; i < 2; ++i) {
    c[2 * i] = half(static_cast<unsigned short>(acc[i] & 0xFFFFu), from_bits_t{});
    c[2 * i + 1] = half(static_cast<unsigned short>(acc[i] >> 16), from_bits_t{});
  }
}

/// C (16x8, int32) += A (16x32) * B (32x8), T = int8_t or uint8_t (wrapping).
template <bool Words = false, typename T, detail::enable_if_t<sizeof(T) == 1, int> = 0>
TL_DEVICE void mma_fragment(int* c, const T* pa, const T* pb) {
  uint32_t a[4], b[2];
  detail::fragment_words<Words>(a, b, pa, pb);
  int acc[4] = {c[0], c[1], c[2], c[3]};
  if constexpr (detail::is_same<T, uint8_t>::value) {
    mma_m16n8k32_u8s32(acc, a, b, acc);
  } else {
    mma_m16n8k32_s8s32(acc, a, b, acc);
  }
  for (int i = 0; i < 4; ++i) c[i] = acc[i];
}

/// C (16x8, float) += A (16x8) * B (8x8), float32 rounded to tf32 (one element per register).
TL_DEVICE void mma_fragment(float* c, const float* pa, const float* pb) {
  const float a[4] = {pa[0], pa[1], pa[2], pa[3]};
  const float b[2] = {pb[0], pb[1]};
  float acc[4] = {c[0], c[1], c[2], c[3]};
  mma_m16n8k8_tf32f32(acc, a, b, acc);
  for (int i = 0; i < 4; ++i) c[i] = acc[i];
}

}  // namespace tl
