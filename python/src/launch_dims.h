// SPDX-License-Identifier: Apache-2.0
/// \file Grid and block sizes from Python lists, for the CUDA bindings (bind_cuda.cc's launch
/// and bind_cuda_call.cc's call plan).
#pragma once

#include <nanobind/nanobind.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tl_bind {

/// (x[, y[, z]]) -> {x, y, z}, missing dimensions being 1. A grid may be empty along a
/// dimension (`allow_zero`: nothing is launched); a block may not.
inline std::array<uint32_t, 3> Dim3(const std::vector<int64_t>& v, const char* what, bool allow_zero = false) {
  if (v.empty() || v.size() > 3) {
    throw nanobind::value_error((std::string(what) + " must have 1 to 3 dimensions").c_str());
  }
  std::array<uint32_t, 3> out = {1, 1, 1};
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < (allow_zero ? 0 : 1) || v[i] > std::numeric_limits<uint32_t>::max()) {
      throw nanobind::value_error((std::string(what) + " dimensions must be " + (allow_zero ? "non-negative" : "positive") +
                                   ", got " + std::to_string(v[i])).c_str());
    }
    out[i] = static_cast<uint32_t>(v[i]);
  }
  return out;
}

}  // namespace tl_bind
