// SPDX-License-Identifier: Apache-2.0
/// \file Atomic read-modify-write helpers for generated CPU kernels.
///
/// The kernels run their parallel loops with OpenMP and may update shared
/// buffers from several threads. These functions use the GCC/Clang __atomic
/// builtins directly on the buffer memory, so no std::atomic wrapper (and no
/// change of the buffer's type) is needed. Integer add is a single fetch-add;
/// everything else is a compare-and-swap loop on the value's bit pattern (the
/// generic builtins compare bytes, so NaNs cannot make the loop spin forever).
/// Relaxed ordering matches CUDA's atomicAdd: OpenMP barriers provide the
/// ordering kernels rely on. All functions return the previous value.
#pragma once

#include <cstdint>
#include <type_traits>

#include "types.h"

namespace tl {

namespace detail {

/// Atomically replaces *addr with op(*addr); returns the old value.
/// Works for any trivially copyable T of 2, 4 or 8 bytes.
template <typename T, typename Op>
inline T atomic_update(T* addr, Op op) {
  T old;
  __atomic_load(addr, &old, __ATOMIC_RELAXED);
  T desired = op(old);
  // On failure the builtin refreshes `old` with the current contents.
  while (!__atomic_compare_exchange(addr, &old, &desired, /*weak=*/true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    desired = op(old);
  }
  return old;
}

/// Like atomic_update, but skips the write when op leaves the value unchanged
/// (keeps atomic_max / atomic_min from dirtying the cache line needlessly).
template <typename T, typename Better>
inline T atomic_select(T* addr, T val, Better better) {
  T old;
  __atomic_load(addr, &old, __ATOMIC_RELAXED);
  while (better(val, old)) {
    if (__atomic_compare_exchange(addr, &old, &val, /*weak=*/true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) break;
  }
  return old;
}

}  // namespace detail

/// A sequentially consistent fence (T.atomic_*(memory_order=...) around a relaxed atomic).
inline void thread_fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/// *addr += val atomically; returns the old value. val is first converted to T.
template <typename T, typename U>
inline T atomic_add(T* addr, U val) {
  const T v = static_cast<T>(val);
  if constexpr (std::is_integral<T>::value) {
    return __atomic_fetch_add(addr, v, __ATOMIC_RELAXED);
  } else if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat16>::value) {
    const float fv = static_cast<float>(v);
    return detail::atomic_update(addr, [fv](T old) { return T(static_cast<float>(old) + fv); });
  } else {
    return detail::atomic_update(addr, [v](T old) { return static_cast<T>(old + v); });
  }
}

/// *addr = max(*addr, val) atomically; returns the old value. val is first converted to T.
/// A NaN already stored stays (no value compares greater than it).
template <typename T, typename U>
inline T atomic_max(T* addr, U val) {
  return detail::atomic_select(addr, static_cast<T>(val), [](T a, T b) { return b < a; });
}

/// *addr = min(*addr, val) atomically; returns the old value. val is first converted to T.
/// A NaN already stored stays (no value compares less than it).
template <typename T, typename U>
inline T atomic_min(T* addr, U val) {
  return detail::atomic_select(addr, static_cast<T>(val), [](T a, T b) { return a < b; });
}

/// *addr |= val (and &=, ^=) atomically, for integers; returns the old value.
template <typename T, typename U>
inline T atomic_or(T* addr, U val) {
  static_assert(std::is_integral<T>::value, "T.atomic_or takes an integer destination");
  return __atomic_fetch_or(addr, static_cast<T>(val), __ATOMIC_RELAXED);
}
template <typename T, typename U>
inline T atomic_and(T* addr, U val) {
  static_assert(std::is_integral<T>::value, "T.atomic_and takes an integer destination");
  return __atomic_fetch_and(addr, static_cast<T>(val), __ATOMIC_RELAXED);
}
template <typename T, typename U>
inline T atomic_xor(T* addr, U val) {
  static_assert(std::is_integral<T>::value, "T.atomic_xor takes an integer destination");
  return __atomic_fetch_xor(addr, static_cast<T>(val), __ATOMIC_RELAXED);
}

/// 1 + the index of the lowest set bit, 0 for 0 (T.__ffs).
template <typename T>
inline int ffs(T x) {
  return sizeof(T) == 8 ? __builtin_ffsll(static_cast<long long>(x)) : __builtin_ffs(static_cast<int>(x));
}

/// The bit position of the offset-th set bit of mask at or after base (offset >= 0), or
/// before it (offset < 0); 0xFFFFFFFF when there is none (CUDA's __fns).
inline unsigned int fns(unsigned int mask, unsigned int base, int offset) {
  if (offset == 0) offset = 1;  // offset 0 means: base itself if set, else the next one
  int step = offset > 0 ? 1 : -1;
  int need = offset > 0 ? offset : -offset;
  for (int pos = static_cast<int>(base); pos >= 0 && pos < 32; pos += step) {
    if ((mask >> pos) & 1u) {
      if (--need == 0) return static_cast<unsigned int>(pos);
    }
  }
  return 0xFFFFFFFFu;
}

/// T.atomic_load / T.atomic_store: one indivisible read or write, sequentially consistent
/// (the strongest of the orders a program may ask for, so every order is honoured).
template <typename T>
inline T atomic_load(const T* addr) {
  T v;
  __atomic_load(const_cast<T*>(addr), &v, __ATOMIC_SEQ_CST);
  return v;
}
template <typename T, typename U>
inline void atomic_store(T* addr, U val) {
  T v = static_cast<T>(val);
  __atomic_store(addr, &v, __ATOMIC_SEQ_CST);
}

}  // namespace tl
