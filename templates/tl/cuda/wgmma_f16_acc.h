// SPDX-License-Identifier: Apache-2.0
/// \file wgmma with a float16 accumulator (.f16.f16.f16), included by wgmma.h.
///
/// A T.gemm of float16 tiles into a float16 fragment (upstream's "accum_dtype=float16"
/// GEMMs) keeps its accumulator in half the registers: wgmma .m64nNk16 with .f16 D takes N/4
/// 32-bit registers, each packing two float16 values, and the ISA's D fragment figure is the
/// f32 one with d_i, d_{i+1} (i even: two adjacent columns of one row) sharing register i/2,
/// the lower column in bits 0..15 (PTX ISA, "Register Fragments", accumulator D, .f16). So
/// the thread's accumulator is the same N/2 elements at the same places as wgmma.h's
/// ACCUMULATOR LAYOUT, stored as tl::half, and the array read as uint32_t is the register
/// vector. Only N a multiple of 16 is offered here (N/4 registers); the block GEMMs of
/// wgmma.h pick these overloads from the accumulator's element type.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

// (No namespace here: wgmma.h includes this file inside namespace tl, after its float
// instructions, so that the block GEMMs below them see both overloads.)

// TL_WGMMA_WOPS<H>(w) binds H/2 32-bit registers w[0 .. H/2-1] as "+r" operands: the packed
// accumulator of an instruction N = 2H columns wide, whose operand text is TL_WGMMA_D<H> and
// whose inputs (numbered after them) are TL_WGMMA_IN<H> / TL_WGMMA_RS_IN<H>.
// clang-format off
#define TL_WGMMA_WOPS8(d) "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
#define TL_WGMMA_WOPS16(d) TL_WGMMA_WOPS8(d), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7])
#define TL_WGMMA_WOPS24(d) TL_WGMMA_WOPS16(d), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11])
#define TL_WGMMA_WOPS32(d) TL_WGMMA_WOPS24(d), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
#define TL_WGMMA_WOPS40(d) TL_WGMMA_WOPS32(d), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19])
#define TL_WGMMA_WOPS48(d) TL_WGMMA_WOPS40(d), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23])
#define TL_WGMMA_WOPS56(d) TL_WGMMA_WOPS48(d), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27])
#define TL_WGMMA_WOPS64(d) TL_WGMMA_WOPS56(d), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
#define TL_WGMMA_WOPS72(d) TL_WGMMA_WOPS64(d), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35])
#define TL_WGMMA_WOPS80(d) TL_WGMMA_WOPS72(d), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39])
#define TL_WGMMA_WOPS88(d) TL_WGMMA_WOPS80(d), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43])
#define TL_WGMMA_WOPS96(d) TL_WGMMA_WOPS88(d), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47])
#define TL_WGMMA_WOPS104(d) TL_WGMMA_WOPS96(d), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51])
#define TL_WGMMA_WOPS112(d) TL_WGMMA_WOPS104(d), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55])
#define TL_WGMMA_WOPS120(d) TL_WGMMA_WOPS112(d), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59])
#define TL_WGMMA_WOPS128(d) TL_WGMMA_WOPS120(d), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])

// CASE(N, N/2) for each instruction width N = 16, 32, ..., 256.
#define TL_WGMMA_EACH_N16(CASE) CASE(16, 8) else CASE(32, 16) else CASE(48, 24) else CASE(64, 32) else CASE(80, 40) else CASE(96, 48) else CASE(112, 56) else CASE(128, 64) else CASE(144, 72) else CASE(160, 80) else CASE(176, 88) else CASE(192, 96) else CASE(208, 104) else CASE(224, 112) else CASE(240, 120) else CASE(256, 128)
// clang-format on

#define TL_WGMMA_F16ACC_ASM(NN, HH, IN)                                                    \
  "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, 1, 0;\n\t"                                         \
  "wgmma.mma_async.sync.aligned.m64n" #NN "k16.f16.f16.f16 {" TL_WGMMA_D##HH "}, " IN ";\n}\n"
#define TL_WGMMA_F16ACC_CASE(NN, HH)                                                          \
  if constexpr (N == NN) {                                                                    \
    asm volatile(TL_WGMMA_F16ACC_ASM(NN, HH, TL_WGMMA_IN##HH)                                 \
                 : TL_WGMMA_WOPS##HH(w)                                                       \
                 : "l"(desc_a), "l"(desc_b), "n"(int(MnMajorA)), "n"(int(MnMajorB)));         \
  }
#define TL_WGMMA_F16ACC_RS_CASE(NN, HH)                                                       \
  if constexpr (N == NN) {                                                                    \
    asm volatile(TL_WGMMA_F16ACC_ASM(NN, HH, TL_WGMMA_RS_IN##HH)                              \
                 : TL_WGMMA_WOPS##HH(w)                                                       \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "n"(int(MnMajorB))); \
  }

/// d (this thread's N/2 float16 accumulators of a 64 x N tile) += A (64 x 16) * B (16 x N),
/// float16 operands in shared memory (as the float overload in wgmma.h).
template <int N, typename T, bool MnMajorA, bool MnMajorB>
TL_DEVICE void wgmma_m64k16(half* d, uint64_t desc_a, uint64_t desc_b) {
  static_assert(N >= 16 && N <= 256 && N % 16 == 0, "wgmma_m64k16 (float16 accumulator): N must be 16, 32, ..., 256");
  static_assert(detail::is_same<T, half>::value, "wgmma_m64k16: a float16 accumulator takes float16 operands");
#if TL_WGMMA_AVAILABLE
  uint32_t* w = reinterpret_cast<uint32_t*>(d);
  TL_WGMMA_EACH_N16(TL_WGMMA_F16ACC_CASE)
#elif defined(__CUDA_ARCH__)
  static_assert(detail::wgmma_unavailable<T>::value, "wgmma_m64k16 needs sm_90a (compile for compute_90a)");
#else
  (void)d, (void)desc_a, (void)desc_b;
#endif
}

/// The register-A form with a float16 accumulator (as wgmma_m64k16_rs in wgmma.h).
template <int N, typename T, bool MnMajorB>
TL_DEVICE void wgmma_m64k16_rs(half* d, const uint32_t (&a)[4], uint64_t desc_b) {
  static_assert(N >= 16 && N <= 256 && N % 16 == 0, "wgmma_m64k16_rs (float16 accumulator): N must be 16, 32, ..., 256");
  static_assert(detail::is_same<T, half>::value, "wgmma_m64k16_rs: a float16 accumulator takes float16 operands");
#if TL_WGMMA_AVAILABLE
  uint32_t* w = reinterpret_cast<uint32_t*>(d);
  TL_WGMMA_EACH_N16(TL_WGMMA_F16ACC_RS_CASE)
#elif defined(__CUDA_ARCH__)
  static_assert(detail::wgmma_unavailable<T>::value, "wgmma_m64k16_rs needs sm_90a (compile for compute_90a)");
#else
  (void)d, (void)a, (void)desc_b;
#endif
}

#undef TL_WGMMA_F16ACC_RS_CASE
#undef TL_WGMMA_F16ACC_CASE
#undef TL_WGMMA_F16ACC_ASM
