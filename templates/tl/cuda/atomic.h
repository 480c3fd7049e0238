// SPDX-License-Identifier: Apache-2.0
/// \file Atomic read-modify-write helpers for generated CUDA kernels.
///
/// tl::atomic_add / atomic_max / atomic_min(T* addr, U val) work on global or
/// shared memory, convert val to T first (like the CPU library), and return
/// the value *addr held before the update. Relaxed ordering at GPU scope,
/// like atomicAdd.
///
/// Native instructions where the hardware has them: add for float, double,
/// 32/64-bit integers, half (atom.add.noftz.f16) and, on sm_90+, bfloat16;
/// max / min for 32/64-bit integers. Everything else is a compare-and-swap
/// loop on the value's bits (16-bit CAS for half / bfloat16 on sm_70+; 8-bit
/// types through their containing 32-bit word). Floating-point max / min use
/// the CAS loop too, so they follow tl::max / tl::min exactly (as the CPU
/// library does): a NaN already stored stays, and the loop exits without
/// writing when the stored value already wins.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

namespace tl {

namespace detail {

// --- Bit patterns ----------------------------------------------------------

/// Unsigned integer of N bytes.
template <int N>
struct uint_of_size;
template <>
struct uint_of_size<1> {
  using type = unsigned char;
};
template <>
struct uint_of_size<2> {
  using type = unsigned short;
};
template <>
struct uint_of_size<4> {
  using type = unsigned int;
};
template <>
struct uint_of_size<8> {
  using type = unsigned long long;
};

/// Bit pattern of a value (16-bit floats, float, double, integers).
template <typename T>
TL_DEVICE typename uint_of_size<sizeof(T)>::type to_bits(T v) {
  using U = typename uint_of_size<sizeof(T)>::type;
  if constexpr (is_same<T, half>::value || is_same<T, bfloat16>::value) {
    return v.bits;
  } else if constexpr (is_same<T, float>::value) {
    return __float_as_uint(v);
  } else if constexpr (is_same<T, double>::value) {
    return static_cast<U>(__double_as_longlong(v));
  } else {
    return static_cast<U>(v);
  }
}

/// Value with the given bit pattern (inverse of to_bits).
template <typename T>
TL_DEVICE T from_bits(typename uint_of_size<sizeof(T)>::type u) {
  if constexpr (is_same<T, half>::value) {
    return half_from_bits(u);
  } else if constexpr (is_same<T, bfloat16>::value) {
    return bfloat16_from_bits(u);
  } else if constexpr (is_same<T, float>::value) {
    return __uint_as_float(u);
  } else if constexpr (is_same<T, double>::value) {
    return __longlong_as_double(static_cast<long long>(u));
  } else {
    return static_cast<T>(u);
  }
}

// --- Compare-and-swap on bit patterns --------------------------------------

/// CAS of a 1- or 2-byte value through its containing aligned 32-bit word.
template <typename U>
TL_DEVICE U cas_subword(U* addr, U compare, U desired) {
  const unsigned long long a = reinterpret_cast<unsigned long long>(addr);
  unsigned int* word = reinterpret_cast<unsigned int*>(a & ~3ull);
  const unsigned int shift = static_cast<unsigned int>(a & 3ull) * 8u;
  const unsigned int field = ((1u << (8 * sizeof(U))) - 1u) << shift;
  unsigned int old = *reinterpret_cast<volatile unsigned int*>(word);
  while (true) {
    const U cur = static_cast<U>((old & field) >> shift);
    if (cur != compare) return cur;  // Our part differs: the CAS fails.
    const unsigned int next = (old & ~field) | (static_cast<unsigned int>(desired) << shift);
    const unsigned int seen = atomicCAS(word, old, next);
    if (seen == old) return compare;
    old = seen;  // Only the neighbouring bytes may have changed: retry.
  }
}

/// atomicCAS on 1, 2, 4 or 8 bytes; returns the old bits.
TL_DEVICE unsigned char cas_bits(unsigned char* addr, unsigned char compare, unsigned char desired) {
  return cas_subword(addr, compare, desired);
}
/// 16-bit CAS (atom.cas.b16 on sm_70+).
TL_DEVICE unsigned short cas_bits(unsigned short* addr, unsigned short compare, unsigned short desired) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  unsigned short old;
  asm volatile("atom.cas.b16 %0, [%1], %2, %3;" : "=h"(old) : "l"(addr), "h"(compare), "h"(desired) : "memory");
  return old;
#else
  return cas_subword(addr, compare, desired);
#endif
}
/// 32-bit CAS.
TL_DEVICE unsigned int cas_bits(unsigned int* addr, unsigned int compare, unsigned int desired) {
  return atomicCAS(addr, compare, desired);
}
/// 64-bit CAS.
TL_DEVICE unsigned long long cas_bits(unsigned long long* addr, unsigned long long compare,
                                      unsigned long long desired) {
  return atomicCAS(addr, compare, desired);
}

/// Atomically replaces *addr with op(*addr); returns the old value.
template <typename T, typename Op>
TL_DEVICE T atomic_update(T* addr, Op op) {
  using U = typename uint_of_size<sizeof(T)>::type;
  U* const bits = reinterpret_cast<U*>(addr);
  U old = *reinterpret_cast<volatile U*>(bits);
  while (true) {
    const U desired = to_bits(static_cast<T>(op(from_bits<T>(old))));
    const U seen = cas_bits(bits, old, desired);
    if (seen == old) return from_bits<T>(old);
    old = seen;  // Compares bits, so a stored NaN cannot make this spin.
  }
}

/// Atomically stores val when better(val, *addr); returns the old value.
/// Skips the write when the stored value already wins.
template <typename T, typename Better>
TL_DEVICE T atomic_select(T* addr, T val, Better better) {
  using U = typename uint_of_size<sizeof(T)>::type;
  U* const bits = reinterpret_cast<U*>(addr);
  const U desired = to_bits(val);
  U old = *reinterpret_cast<volatile U*>(bits);
  while (better(val, from_bits<T>(old))) {
    const U seen = cas_bits(bits, old, desired);
    if (seen == old) break;
    old = seen;
  }
  return from_bits<T>(old);
}

// --- Native paths ----------------------------------------------------------

TL_DEVICE float atomic_add_impl(float* addr, float v) { return atomicAdd(addr, v); }
TL_DEVICE double atomic_add_impl(double* addr, double v) { return atomicAdd(addr, v); }
TL_DEVICE int atomic_add_impl(int* addr, int v) { return atomicAdd(addr, v); }
TL_DEVICE unsigned int atomic_add_impl(unsigned int* addr, unsigned int v) { return atomicAdd(addr, v); }
TL_DEVICE unsigned long long atomic_add_impl(unsigned long long* addr, unsigned long long v) {
  return atomicAdd(addr, v);
}
// Signed 64-bit add is the unsigned add of the same bits (two's complement).
TL_DEVICE long long atomic_add_impl(long long* addr, long long v) {
  return static_cast<long long>(
      atomicAdd(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(v)));
}
TL_DEVICE long atomic_add_impl(long* addr, long v) {
  static_assert(sizeof(long) == 8, "long is assumed to be 64-bit (LP64)");
  return static_cast<long>(atomicAdd(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(v)));
}
TL_DEVICE unsigned long atomic_add_impl(unsigned long* addr, unsigned long v) {
  return static_cast<unsigned long>(
      atomicAdd(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(v)));
}
TL_DEVICE half atomic_add_impl(half* addr, half v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  unsigned short old;
  asm volatile("atom.add.noftz.f16 %0, [%1], %2;" : "=h"(old) : "l"(addr), "h"(v.bits) : "memory");
  return half_from_bits(old);
#else
  return atomic_update(addr, [v](half old) { return half(static_cast<float>(old) + static_cast<float>(v)); });
#endif
}
TL_DEVICE bfloat16 atomic_add_impl(bfloat16* addr, bfloat16 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned short old;
  asm volatile("atom.add.noftz.bf16 %0, [%1], %2;" : "=h"(old) : "l"(addr), "h"(v.bits) : "memory");
  return bfloat16_from_bits(old);
#else
  // No bf16 atomic add before sm_90: CAS loop, adding in float and rounding once.
  return atomic_update(addr, [v](bfloat16 old) { return bfloat16(static_cast<float>(old) + static_cast<float>(v)); });
#endif
}
/// Other integer types (8/16-bit, bool): CAS loop.
template <typename T, enable_if_t<is_integral<T>::value && (sizeof(T) < 4), int> = 0>
TL_DEVICE T atomic_add_impl(T* addr, T v) {
  return atomic_update(addr, [v](T old) { return static_cast<T>(old + v); });
}

/// True for the integer types with native atomicMax / atomicMin.
template <typename T>
struct has_native_minmax {
  static constexpr bool value = is_same<T, int>::value || is_same<T, unsigned int>::value ||
                                is_same<T, long long>::value || is_same<T, unsigned long long>::value ||
                                is_same<T, long>::value || is_same<T, unsigned long>::value;
};

/// The type atomicMax / atomicMin take for T (long -> long long on LP64).
template <typename T>
struct native_minmax_type {
  using type = T;
};
template <>
struct native_minmax_type<long> {
  using type = long long;
};
template <>
struct native_minmax_type<unsigned long> {
  using type = unsigned long long;
};

}  // namespace detail

/// A fence at device scope (T.atomic_*(memory_order=...) around a relaxed atomic): this
/// thread's accesses before it are seen by every thread of the device before those after.
TL_DEVICE void thread_fence() { __threadfence(); }

/// *addr += val atomically; returns the old value. val is first converted to T.
template <typename T, typename U>
TL_DEVICE T atomic_add(T* addr, U val) {
  return detail::atomic_add_impl(addr, static_cast<T>(val));
}

/// Adds v0..v{N-1} to the N consecutive floats at `addr` in global memory (8-byte aligned
/// for two, 16 for four), each element its own atomic add as with atomic_add, but one
/// reduction request on sm_90+ (red.global.add.v2/v4.f32). Returns nothing: the compiler
/// uses it only where the old values are not read (cuda-vectorize-atomics).
TL_DEVICE void atomic_add_vec(float* addr, float v0, float v1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.relaxed.gpu.global.add.v2.f32 [%0], {%1, %2};" ::"l"(__cvta_generic_to_global(addr)), "f"(v0),
               "f"(v1)
               : "memory");
#else
  atomicAdd(addr, v0);
  atomicAdd(addr + 1, v1);
#endif
}

TL_DEVICE void atomic_add_vec(float* addr, float v0, float v1, float v2, float v3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(__cvta_generic_to_global(addr)),
               "f"(v0), "f"(v1), "f"(v2), "f"(v3)
               : "memory");
#else
  atomicAdd(addr, v0);
  atomicAdd(addr + 1, v1);
  atomicAdd(addr + 2, v2);
  atomicAdd(addr + 3, v3);
#endif
}

/// *addr = max(*addr, val) atomically (tl::max semantics); returns the old value.
/// val is first converted to T. A NaN already stored stays.
template <typename T, typename U>
TL_DEVICE T atomic_max(T* addr, U val) {
  const T v = static_cast<T>(val);
  if constexpr (detail::has_native_minmax<T>::value) {
    using N = typename detail::native_minmax_type<T>::type;
    return static_cast<T>(atomicMax(reinterpret_cast<N*>(addr), static_cast<N>(v)));
  } else {
    return detail::atomic_select(addr, v, [](T a, T b) { return b < a; });
  }
}

/// *addr = min(*addr, val) atomically (tl::min semantics); returns the old value.
/// val is first converted to T. A NaN already stored stays.
template <typename T, typename U>
TL_DEVICE T atomic_min(T* addr, U val) {
  const T v = static_cast<T>(val);
  if constexpr (detail::has_native_minmax<T>::value) {
    using N = typename detail::native_minmax_type<T>::type;
    return static_cast<T>(atomicMin(reinterpret_cast<N*>(addr), static_cast<N>(v)));
  } else {
    return detail::atomic_select(addr, v, [](T a, T b) { return a < b; });
  }
}

/// *addr |= val (and &=, ^=) atomically, for integers; returns the old value.
#define TL_ATOMIC_BITWISE(name, native)                                                        \
  template <typename T, typename U>                                                           \
  TL_DEVICE T name(T* addr, U val) {                                                          \
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, #name " takes a 32- or 64-bit integer");    \
    using N = typename detail::uint_of_size<sizeof(T)>::type; /* unsigned int / long long */  \
    return static_cast<T>(native(reinterpret_cast<N*>(addr), static_cast<N>(static_cast<T>(val)))); \
  }
TL_ATOMIC_BITWISE(atomic_or, atomicOr)
TL_ATOMIC_BITWISE(atomic_and, atomicAnd)
TL_ATOMIC_BITWISE(atomic_xor, atomicXor)
#undef TL_ATOMIC_BITWISE

/// T.atomic_load / T.atomic_store: one indivisible read or write of an aligned 1-8 byte
/// value, fenced on both sides (sequentially consistent at GPU scope, the strongest order a
/// program may ask for).
template <typename T>
TL_DEVICE T atomic_load(const T* addr) {
  using N = typename detail::uint_of_size<sizeof(T)>::type;
  __threadfence();
  const N bits = *reinterpret_cast<const volatile N*>(addr);
  __threadfence();
  return detail::from_bits<T>(bits);
}
template <typename T, typename U>
TL_DEVICE void atomic_store(T* addr, U val) {
  using N = typename detail::uint_of_size<sizeof(T)>::type;
  const N bits = detail::to_bits(static_cast<T>(val));
  __threadfence();
  *reinterpret_cast<volatile N*>(addr) = bits;
  __threadfence();
}

}  // namespace tl
