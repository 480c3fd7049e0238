// SPDX-License-Identifier: Apache-2.0
/// \file Bit scans and the warp votes that need more than one CUDA intrinsic
/// (T.__ffs, T.match_all_sync); the other votes print as the CUDA intrinsics themselves.
#pragma once

namespace tl {

/// 1 + the index of the lowest set bit, 0 for 0 (T.__ffs; __ffs / __ffsll by width).
template <typename T>
TL_DEVICE int ffs(T x) {
  if constexpr (sizeof(T) == 8) {
    return __ffsll(static_cast<long long>(x));
  } else {
    return __ffs(static_cast<int>(x));
  }
}

/// The lane mask when every lane in it holds the same value, else 0 (__match_all_sync
/// without its predicate output: the result is non-zero exactly when it would be set).
template <typename T>
TL_DEVICE unsigned int match_all_sync(unsigned int mask, T value) {
  int all = 0;
  return __match_all_sync(mask, value, &all);
}

}  // namespace tl
