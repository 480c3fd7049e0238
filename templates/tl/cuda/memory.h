// SPDX-License-Identifier: Apache-2.0
/// \file Vector copies, shared-memory addresses and cp.async for generated CUDA kernels.
///
/// Vector copies move 4, 8 or 16 bytes with one load and one store through
/// aligned register types of our own (no uint4 / float4: NVRTC has no
/// vector_types.h unless the toolkit headers are on its path). They work for
/// global and shared memory alike; addresses must be aligned to the size.
///
/// cp.async (sm_80+) copies global -> shared without passing through
/// registers. Copies are grouped: cp_async_commit() closes the group of copies
/// issued since the last commit, cp_async_wait<N>() blocks until at most N
/// groups are still in flight; a __syncthreads() is still needed before other
/// threads read the data. The zero-fill variants copy nothing and write zeros
/// when the predicate is false (the source size operand is 0), which handles
/// out-of-bounds tiles without a branch around the copy.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

namespace tl {

/// 16 bytes in four 32-bit registers; 16-byte aligned so loads are one v4 instruction.
struct alignas(16) uint32x4 {
  uint32_t x, y, z, w;
};
/// 8 bytes in two 32-bit registers; 8-byte aligned so loads are one v2 instruction.
struct alignas(8) uint32x2 {
  uint32_t x, y;
};

namespace detail {
/// The register type that moves Bytes bytes at once.
template <int Bytes>
struct vec_of;
template <>
struct vec_of<1> {
  using type = unsigned char;
};
template <>
struct vec_of<2> {
  using type = unsigned short;
};
template <>
struct vec_of<4> {
  using type = uint32_t;
};
template <>
struct vec_of<8> {
  using type = uint32x2;
};
template <>
struct vec_of<16> {
  using type = uint32x4;
};
}  // namespace detail

/// Copies Bytes (1, 2, 4, 8 or 16) bytes with one load and one store.
/// dst and src (global or shared) must be aligned to Bytes.
template <int Bytes>
TL_DEVICE void copy(void* dst, const void* src) {
  using V = typename detail::vec_of<Bytes>::type;
  *static_cast<V*>(dst) = *static_cast<const V*>(src);
}
/// Copies 16 bytes (one 128-bit load and store); both pointers 16-byte aligned.
TL_DEVICE void copy16(void* dst, const void* src) { copy<16>(dst, src); }
/// Copies 8 bytes; both pointers 8-byte aligned.
TL_DEVICE void copy8(void* dst, const void* src) { copy<8>(dst, src); }
/// Copies 4 bytes; both pointers 4-byte aligned.
TL_DEVICE void copy4(void* dst, const void* src) { copy<4>(dst, src); }

/// Loads 16 bytes into registers (src 16-byte aligned).
TL_DEVICE uint32x4 load16(const void* src) { return *static_cast<const uint32x4*>(src); }
/// Stores 16 bytes from registers (dst 16-byte aligned).
TL_DEVICE void store16(void* dst, const uint32x4& v) { *static_cast<uint32x4*>(dst) = v; }
/// Loads 8 bytes into registers (src 8-byte aligned).
TL_DEVICE uint32x2 load8(const void* src) { return *static_cast<const uint32x2*>(src); }
/// Stores 8 bytes from registers (dst 8-byte aligned).
TL_DEVICE void store8(void* dst, const uint32x2& v) { *static_cast<uint32x2*>(dst) = v; }
/// Loads 4 bytes into a register (src 4-byte aligned).
TL_DEVICE uint32_t load4(const void* src) { return *static_cast<const uint32_t*>(src); }
/// Stores 4 bytes from a register (dst 4-byte aligned).
TL_DEVICE void store4(void* dst, uint32_t v) { *static_cast<uint32_t*>(dst) = v; }

/// 32-bit .shared address of a generic pointer into shared memory: the form
/// ldmatrix, cp.async and other shared-memory PTX take (cvta.to.shared).
/// CUDA's builtin conversion, which the compiler sees through (an asm cvta it cannot):
/// the address arithmetic of an unrolled run of ldmatrix / cp.async then stays in 32 bits
/// with immediate offsets, instead of a 64-bit multiply-add and a conversion per access.
TL_DEVICE uint32_t smem_addr(const void* smem_ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
}

/// .global address of a generic pointer into global memory (cvta.to.global),
/// as the source operand of cp.async requires.
TL_DEVICE uint64_t gmem_addr(const void* gmem_ptr) {
  uint64_t addr;
  asm("cvta.to.global.u64 %0, %1;" : "=l"(addr) : "l"(gmem_ptr));
  return addr;
}

// --- cp.async (sm_80+) -----------------------------------------------------
// 16-byte copies use .cg (cache in L2 only: tiles are staged in shared memory,
// so L1 would only be polluted); .cg allows no other size, so 8- and 4-byte
// copies use .ca. Both pointers must be aligned to the copy size.

/// Asynchronously copies 16 bytes global -> shared.
TL_DEVICE void cp_async_16(void* smem_dst, const void* gmem_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(smem_dst)), "l"(gmem_addr(gmem_src))
               : "memory");
}
/// Asynchronously copies 8 bytes global -> shared.
TL_DEVICE void cp_async_8(void* smem_dst, const void* gmem_src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(smem_addr(smem_dst)), "l"(gmem_addr(gmem_src))
               : "memory");
}
/// Asynchronously copies 4 bytes global -> shared.
TL_DEVICE void cp_async_4(void* smem_dst, const void* gmem_src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem_addr(smem_dst)), "l"(gmem_addr(gmem_src))
               : "memory");
}

/// Asynchronously copies 16 bytes global -> shared when pred is true; writes
/// 16 zero bytes to smem_dst otherwise. gmem_src is not read when pred is
/// false, but should still be a valid address (e.g. the tensor's base).
TL_DEVICE void cp_async_zfill_16(void* smem_dst, const void* gmem_src, bool pred) {
  const int src_bytes = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(smem_dst)), "l"(gmem_addr(gmem_src)),
               "r"(src_bytes)
               : "memory");
}
/// 8-byte form of cp_async_zfill_16.
TL_DEVICE void cp_async_zfill_8(void* smem_dst, const void* gmem_src, bool pred) {
  const int src_bytes = pred ? 8 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(smem_addr(smem_dst)), "l"(gmem_addr(gmem_src)),
               "r"(src_bytes)
               : "memory");
}
/// 4-byte form of cp_async_zfill_16.
TL_DEVICE void cp_async_zfill_4(void* smem_dst, const void* gmem_src, bool pred) {
  const int src_bytes = pred ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem_addr(smem_dst)), "l"(gmem_addr(gmem_src)),
               "r"(src_bytes)
               : "memory");
}
/// Copies the first src_bytes (0..16) of 16 bytes and zero-fills the rest:
/// for ragged row ends. Same alignment rules as cp_async_16.
TL_DEVICE void cp_async_16_partial(void* smem_dst, const void* gmem_src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(smem_dst)), "l"(gmem_addr(gmem_src)),
               "r"(src_bytes)
               : "memory");
}

/// T.ptx_cp_async(dst, src, n): this thread's cp.async of 4, 8 or 16 bytes (a constant: the
/// front end turns the element count into bytes).
TL_DEVICE void ptx_cp_async(void* smem_dst, const void* gmem_src, int bytes) {
  if (bytes == 16) {
    cp_async_16(smem_dst, gmem_src);
  } else if (bytes == 8) {
    cp_async_8(smem_dst, gmem_src);
  } else {
    cp_async_4(smem_dst, gmem_src);
  }
}
/// T.ptx_cp_async(dst, src, n, predicate): zero-fills the destination when pred is false
/// (the source is not read then).
TL_DEVICE void ptx_cp_async(void* smem_dst, const void* gmem_src, int bytes, bool pred) {
  if (bytes == 16) {
    cp_async_zfill_16(smem_dst, gmem_src, pred);
  } else if (bytes == 8) {
    cp_async_zfill_8(smem_dst, gmem_src, pred);
  } else {
    cp_async_zfill_4(smem_dst, gmem_src, pred);
  }
}

/// Closes the group of cp.async copies this thread issued since the last commit.
TL_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

/// Waits until at most N of this thread's committed cp.async groups are still
/// in flight (N = 0: all done). Other threads' copies need a __syncthreads().
template <int N>
TL_DEVICE void cp_async_wait() {
  static_assert(N >= 0, "cp_async_wait<N>: N must be >= 0");
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/// Waits for all of this thread's cp.async copies, committed or not.
TL_DEVICE void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

}  // namespace tl

// --- Bits and explicit 32-bit global accesses (T.reinterpret, T.ldg32 / T.stg32) ----------

namespace tl {

/// The bits of `from` as a To of the same size (a register move; NVRTC has no memcpy
/// builtin, and CUDA defines reading the other member of a union of trivial types).
template <typename To, typename From>
TL_DEVICE To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs types of one size");
  union {
    From from;
    To to;
  } u;
  u.from = from;
  return u.to;
}

/// The 32 bits at a (4-byte aligned) global address.
TL_DEVICE uint32_t load_global_32(const void* p) { return *static_cast<const uint32_t*>(p); }
/// The 32 bits at p where pred holds, else 0 (the load is not made).
TL_DEVICE uint32_t load_global_32_conditional(const void* p, bool pred) { return pred ? load_global_32(p) : 0u; }
/// Stores 32 bits at a (4-byte aligned) global address.
TL_DEVICE void store_global_32(void* p, uint32_t v) { *static_cast<uint32_t*>(p) = v; }
/// Stores 32 bits at p where pred holds.
TL_DEVICE void store_global_32_conditional(void* p, uint32_t v, bool pred) {
  if (pred) store_global_32(p, v);
}
/// The 32 bits at a (4-byte aligned) shared address (T.lds32).
TL_DEVICE uint32_t load_shared_32(const void* p) { return *static_cast<const uint32_t*>(p); }
/// Stores 32 bits at a (4-byte aligned) shared address (T.sts32).
TL_DEVICE void store_shared_32(void* p, uint32_t v) { *static_cast<uint32_t*>(p) = v; }

/// The 64- and 128-bit forms (T.ldg64 / T.stg128 / T.lds64 / ...): the value is a vector of
/// 32-bit words held in a register array (`regs`, aligned to the access width), one vector
/// load or store of the address (aligned to the access width too).
template <typename V>
TL_DEVICE void load_vector(void* regs, const void* p) {
  *static_cast<V*>(regs) = *static_cast<const V*>(p);
}
template <typename V>
TL_DEVICE void load_vector_conditional(void* regs, const void* p, bool pred) {
  if (pred) {
    load_vector<V>(regs, p);
  } else {
    *static_cast<V*>(regs) = V{};
  }
}
template <typename V>
TL_DEVICE void store_vector(void* p, const void* regs) {
  *static_cast<V*>(p) = *static_cast<const V*>(regs);
}
template <typename V>
TL_DEVICE void store_vector_conditional(void* p, const void* regs, bool pred) {
  if (pred) store_vector<V>(p, regs);
}
TL_DEVICE void load_global_64(void* regs, const void* p) { load_vector<uint2>(regs, p); }
TL_DEVICE void load_global_128(void* regs, const void* p) { load_vector<uint4>(regs, p); }
TL_DEVICE void load_global_64_conditional(void* regs, const void* p, bool pred) {
  load_vector_conditional<uint2>(regs, p, pred);
}
TL_DEVICE void load_global_128_conditional(void* regs, const void* p, bool pred) {
  load_vector_conditional<uint4>(regs, p, pred);
}
TL_DEVICE void store_global_64(void* p, const void* regs) { store_vector<uint2>(p, regs); }
TL_DEVICE void store_global_128(void* p, const void* regs) { store_vector<uint4>(p, regs); }
TL_DEVICE void store_global_64_conditional(void* p, const void* regs, bool pred) {
  store_vector_conditional<uint2>(p, regs, pred);
}
TL_DEVICE void store_global_128_conditional(void* p, const void* regs, bool pred) {
  store_vector_conditional<uint4>(p, regs, pred);
}
TL_DEVICE void load_shared_64(void* regs, const void* p) { load_vector<uint2>(regs, p); }
TL_DEVICE void load_shared_128(void* regs, const void* p) { load_vector<uint4>(regs, p); }
TL_DEVICE void store_shared_64(void* p, const void* regs) { store_vector<uint2>(p, regs); }
TL_DEVICE void store_shared_128(void* p, const void* regs) { store_vector<uint4>(p, regs); }

}  // namespace tl

// __ldg (the read-only data cache) for the library's own 16- and 8-bit floats, beside the
// CUDA overloads for the built-in types.
TL_DEVICE tl::half __ldg(const tl::half* p) {
  return tl::half_from_bits(__ldg(reinterpret_cast<const unsigned short*>(p)));
}
TL_DEVICE tl::bfloat16 __ldg(const tl::bfloat16* p) {
  return tl::bfloat16_from_bits(__ldg(reinterpret_cast<const unsigned short*>(p)));
}
template <typename F>
TL_DEVICE tl::float8<F> __ldg(const tl::float8<F>* p) {
  return tl::float8<F>::from_bits(__ldg(reinterpret_cast<const unsigned char*>(p)));
}
TL_DEVICE tl::float8_e8m0 __ldg(const tl::float8_e8m0* p) {
  return tl::float8_e8m0::from_bits(__ldg(reinterpret_cast<const unsigned char*>(p)));
}
