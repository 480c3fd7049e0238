// SPDX-License-Identifier: Apache-2.0
/// \file TMA tensor maps as the runtime resolves them at launch (no GPU needed): sizes from
/// the spec or from the launch arguments, byte strides of a contiguous tensor, and the
/// requirements TMA places on address, strides and boxes, each refused with a reason.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tl/runtime/cuda_module.h"

namespace tl::runtime {
namespace {

TensorMapSpec Spec(std::vector<int64_t> dims, std::vector<int64_t> box, int elem_bytes = 2) {
  TensorMapSpec s;
  s.tensor_arg = 0;
  s.data_type = 6;  // float16
  s.elem_bytes = elem_bytes;
  s.dims = std::move(dims);
  s.box = std::move(box);
  s.swizzle = 3;
  return s;
}

std::string Refusal(const TensorMapSpec& spec, const std::vector<CudaArg>& args) {
  try {
    ResolveTensorMap(spec, args);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(TensorMap, StaticTensorGivesRowMajorByteStrides) {
  // A (8192 x 4096) float16 matrix, innermost first: dims (4096, 8192).
  TensorMapGeometry g = ResolveTensorMap(Spec({4096, 8192}, {64, 128}), {CudaArg::Ptr(0x7f0000001000)});
  EXPECT_EQ(g.address, 0x7f0000001000u);
  EXPECT_EQ(g.dims, (std::vector<uint64_t>{4096, 8192}));
  EXPECT_EQ(g.strides, (std::vector<uint64_t>{8192}));
}

TEST(TensorMap, FourDimensionsWithADynamicSize) {
  // Q[b, s, h, d] with s dynamic (launch argument 2, after the tensor and another int).
  TensorMapSpec spec = Spec({128, 16, -3, 2}, {64, 1, 128, 1});
  TensorMapGeometry g = ResolveTensorMap(spec, {CudaArg::Ptr(256), CudaArg::I32(7), CudaArg::I64(3000)});
  EXPECT_EQ(g.dims, (std::vector<uint64_t>{128, 16, 3000, 2}));
  EXPECT_EQ(g.strides, (std::vector<uint64_t>{256, 256 * 16, 256 * 16 * 3000}));
}

TEST(TensorMap, RefusesWhatTmaCannotDo) {
  EXPECT_NE(Refusal(Spec({64, 64}, {64, 64}), {CudaArg::Ptr(0x1008)}).find("16-byte aligned"), std::string::npos);
  // Rows of 100 halves are 200 bytes: the next dimension's stride is not a multiple of 16.
  EXPECT_NE(Refusal(Spec({100, 64}, {64, 64}), {CudaArg::Ptr(0x1000)}).find("not a multiple of 16"),
            std::string::npos);
  EXPECT_NE(Refusal(Spec({64, 64}, {64, 512}), {CudaArg::Ptr(0x1000)}).find("[1, 256]"), std::string::npos);
  EXPECT_NE(Refusal(Spec({64, 64}, {4, 64}), {CudaArg::Ptr(0x1000)}).find("multiple of 16 bytes"),
            std::string::npos);
  EXPECT_NE(Refusal(Spec({64, -2}, {64, 64}), {CudaArg::Ptr(0x1000), CudaArg::I32(0)}).find("outside [1, 2^32]"),
            std::string::npos);
  EXPECT_NE(Refusal(Spec({64, 64}, {64, 64}), {CudaArg::I32(5)}).find("not a tensor"), std::string::npos);
  EXPECT_NE(Refusal(Spec({64, 64, 1, 1, 1, 1}, {64, 64, 1, 1, 1, 1}), {CudaArg::Ptr(0x1000)}).find("rank 1 to 5"),
            std::string::npos);
}

}  // namespace
}  // namespace tl::runtime
