// SPDX-License-Identifier: Apache-2.0
/// \file Bits and explicit 32-bit accesses for generated CPU kernels (T.reinterpret,
/// T.ldg32 / T.stg32 and their 64- and 128-bit forms): the same functions as the CUDA library's memory.h, done plainly.
#pragma once

#include <cstdint>
#include <cstring>

namespace tl {

/// The bits of `from` as a To of the same size.
template <typename To, typename From>
inline To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs types of one size");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

/// The 32 bits at p.
inline uint32_t load_global_32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
/// The 32 bits at p where pred holds, else 0 (the load is not made).
inline uint32_t load_global_32_conditional(const void* p, bool pred) { return pred ? load_global_32(p) : 0u; }
/// Stores 32 bits at p.
inline void store_global_32(void* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }
/// Stores 32 bits at p where pred holds.
inline void store_global_32_conditional(void* p, uint32_t v, bool pred) {
  if (pred) store_global_32(p, v);
}
/// T.lds32 / T.sts32: shared memory is ordinary memory here.
inline uint32_t load_shared_32(const void* p) { return load_global_32(p); }
inline void store_shared_32(void* p, uint32_t v) { store_global_32(p, v); }

/// The 64- and 128-bit forms (T.ldg64 / T.stg128 / ...): `regs` is the register array that
/// holds the value's 32-bit words; `Bytes` of them move at once.
template <int Bytes>
inline void load_vector(void* regs, const void* p) { std::memcpy(regs, p, Bytes); }
template <int Bytes>
inline void load_vector_conditional(void* regs, const void* p, bool pred) {
  if (pred) {
    std::memcpy(regs, p, Bytes);
  } else {
    std::memset(regs, 0, Bytes);
  }
}
template <int Bytes>
inline void store_vector_conditional(void* p, const void* regs, bool pred) {
  if (pred) std::memcpy(p, regs, Bytes);
}
inline void load_global_64(void* regs, const void* p) { load_vector<8>(regs, p); }
inline void load_global_128(void* regs, const void* p) { load_vector<16>(regs, p); }
inline void load_global_64_conditional(void* regs, const void* p, bool pred) {
  load_vector_conditional<8>(regs, p, pred);
}
inline void load_global_128_conditional(void* regs, const void* p, bool pred) {
  load_vector_conditional<16>(regs, p, pred);
}
inline void store_global_64(void* p, const void* regs) { std::memcpy(p, regs, 8); }
inline void store_global_128(void* p, const void* regs) { std::memcpy(p, regs, 16); }
inline void store_global_64_conditional(void* p, const void* regs, bool pred) {
  store_vector_conditional<8>(p, regs, pred);
}
inline void store_global_128_conditional(void* p, const void* regs, bool pred) {
  store_vector_conditional<16>(p, regs, pred);
}
inline void load_shared_64(void* regs, const void* p) { load_vector<8>(regs, p); }
inline void load_shared_128(void* regs, const void* p) { load_vector<16>(regs, p); }
inline void store_shared_64(void* p, const void* regs) { std::memcpy(p, regs, 8); }
inline void store_shared_128(void* p, const void* regs) { std::memcpy(p, regs, 16); }

}  // namespace tl
