// SPDX-License-Identifier: Apache-2.0
/// \file TMA tensor maps built at launch (see TensorMapSpec in tl/runtime/cuda_module.h).
#include <stdexcept>
#include <string>

#include "tl/runtime/cuda_module.h"

namespace tl::runtime {

namespace {

constexpr uint64_t kMaxStride = uint64_t{1} << 40;
constexpr uint64_t kMaxDim = uint64_t{1} << 32;
constexpr int64_t kMaxBox = 256;

int64_t ArgValue(const std::vector<CudaArg>& args, size_t index) {
  if (index >= args.size()) throw std::invalid_argument("tensor map refers to a missing launch argument");
  const CudaArg& a = args[index];
  switch (a.kind) {
    case CudaArg::Kind::kI32: return a.value.i32;
    case CudaArg::Kind::kI64: return a.value.i64;
    default: throw std::invalid_argument("tensor map size argument is not an integer");
  }
}

}  // namespace

TensorMapGeometry ResolveTensorMap(const TensorMapSpec& spec, const std::vector<CudaArg>& args) {
  size_t rank = spec.dims.size();
  const bool im2col = !spec.im2col.empty();
  if (im2col) {
    if (rank != 4 || spec.im2col.size() != 7) {
      throw std::invalid_argument("an im2col tensor map is 4-D (NHWC) with 7 parameters");
    }
    const int64_t channels = spec.im2col[0], pixels = spec.im2col[1];
    if (channels < 1 || channels > kMaxBox || channels * spec.elem_bytes % 16 || pixels < 1 || pixels > 1024) {
      throw std::invalid_argument("an im2col box takes 1..256 channels of a multiple of 16 bytes and 1..1024 pixels");
    }
  } else if (rank < 1 || rank > 5 || spec.box.size() != rank) {
    throw std::invalid_argument("a TMA tensor map has rank 1 to 5, one box extent per dimension");
  }
  if (spec.tensor_arg < 0 || static_cast<size_t>(spec.tensor_arg) >= args.size() ||
      args[spec.tensor_arg].kind != CudaArg::Kind::kPtr) {
    throw std::invalid_argument("tensor map refers to a launch argument that is not a tensor");
  }
  TensorMapGeometry g;
  g.address = args[spec.tensor_arg].value.ptr;
  if (g.address % 16) {
    throw std::invalid_argument("TMA needs a 16-byte aligned tensor address, got 0x" + std::to_string(g.address));
  }
  uint64_t stride = static_cast<uint64_t>(spec.elem_bytes);
  for (size_t j = 0; j < rank; ++j) {
    int64_t d = spec.dims[j] >= 0 ? spec.dims[j] : ArgValue(args, static_cast<size_t>(-(spec.dims[j] + 1)));
    if (d < 1 || static_cast<uint64_t>(d) > kMaxDim) {
      throw std::invalid_argument("TMA tensor dimension " + std::to_string(j) + " is " + std::to_string(d) +
                                  ", outside [1, 2^32]");
    }
    if (!im2col && (spec.box[j] < 1 || spec.box[j] > kMaxBox)) {
      throw std::invalid_argument("TMA box extent " + std::to_string(spec.box[j]) + " is outside [1, 256]");
    }
    if (j > 0) {
      if (stride % 16 || stride >= kMaxStride) {
        throw std::invalid_argument("TMA tensor stride of dimension " + std::to_string(j) + " is " +
                                    std::to_string(stride) + " bytes: not a multiple of 16 below 2^40");
      }
      g.strides.push_back(stride);
    }
    g.dims.push_back(static_cast<uint64_t>(d));
    stride *= static_cast<uint64_t>(d);
  }
  if (!im2col && spec.box[0] * spec.elem_bytes % 16) {
    throw std::invalid_argument("TMA box rows must be a multiple of 16 bytes, got " +
                                std::to_string(spec.box[0] * spec.elem_bytes));
  }
  return g;
}

}  // namespace tl::runtime
