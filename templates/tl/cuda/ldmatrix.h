// SPDX-License-Identifier: Apache-2.0
/// \file ldmatrix: warp-wide loads of 8x8 tiles of 16-bit elements from shared memory.
///
/// ldmatrix.sync.aligned.m8n8.xN.shared.b16 (sm_75+) loads N (1, 2 or 4) 8x8
/// matrices of 16-bit elements. Each matrix row is 16 contiguous bytes in
/// shared memory, 16-byte aligned; rows may be anywhere. Lanes give the row
/// addresses: lanes 8*j .. 8*j+7 give rows 0..7 of matrix j (for .x1 only
/// lanes 0-7 are read, for .x2 lanes 0-15; the others' pointers are ignored
/// but must still be passed).
///
/// Result, per lane (g = lane / 4, t = lane % 4), register r[j] from matrix j:
///   plain:  r[j] = { M_j[g][2t], M_j[g][2t+1] }   (low 16 bits first)
///   .trans: r[j] = { M_j[2t][g], M_j[2t+1][g] }
/// which is exactly the mma.sync 16-bit fragment layout (see mma.h). All 32
/// lanes of the warp must execute the call (.sync.aligned).
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

namespace tl {

/// Loads one 8x8 b16 matrix; lanes 0-7 give the row addresses.
TL_DEVICE void ldmatrix_x1(uint32_t (&r)[1], const void* smem_ptr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(smem_addr(smem_ptr)));
}
/// Loads two 8x8 b16 matrices; lanes 0-15 give the row addresses.
TL_DEVICE void ldmatrix_x2(uint32_t (&r)[2], const void* smem_ptr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(smem_ptr)));
}
/// Loads four 8x8 b16 matrices; all 32 lanes give row addresses.
TL_DEVICE void ldmatrix_x4(uint32_t (&r)[4], const void* smem_ptr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem_ptr)));
}
/// Transposing form of ldmatrix_x1: lane holds column elements (see file comment).
TL_DEVICE void ldmatrix_x1_trans(uint32_t (&r)[1], const void* smem_ptr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(smem_addr(smem_ptr)));
}
/// Transposing form of ldmatrix_x2.
TL_DEVICE void ldmatrix_x2_trans(uint32_t (&r)[2], const void* smem_ptr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(smem_ptr)));
}
/// Transposing form of ldmatrix_x4.
TL_DEVICE void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem_ptr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem_ptr)));
}

/// N (2 or 4) matrices into consecutive 32-bit registers of a per-thread array (the
/// ldmatrix_operand intrinsic: TensorCoreIntrinEmitter's operand loads). `row` is this lane's
/// matrix row: lanes 8j .. 8j + 7 give rows 0..7 of matrix j.
template <int N, bool Trans, typename T>
TL_DEVICE void ldmatrix_operand(T* dst, const void* row) {
  static_assert(N == 2 || N == 4, "ldmatrix_operand loads 2 or 4 matrices");
  uint32_t* r = reinterpret_cast<uint32_t*>(dst);
  if constexpr (N == 4) {
    uint32_t v[4];
    if constexpr (Trans) ldmatrix_x4_trans(v, row); else ldmatrix_x4(v, row);
    r[0] = v[0]; r[1] = v[1]; r[2] = v[2]; r[3] = v[3];
  } else {
    uint32_t v[2];
    if constexpr (Trans) ldmatrix_x2_trans(v, row); else ldmatrix_x2(v, row);
    r[0] = v[0]; r[1] = v[1];
  }
}

}  // namespace tl
