// SPDX-License-Identifier: Apache-2.0
/// \file Which pairs of element types the device library converts two at a time
/// (templates/tl/cuda/pair_convert.h), and the helper's name as generated code calls it.
#include "tl/codegen/cuda.h"

namespace tl::codegen {

using ir::DType;

std::string CudaPairConversion(DType from, DType to) {
  const bool f32_from = from == DType::Float(32), f32_to = to == DType::Float(32);
  const bool f16_from = from == DType::Float(16), f16_to = to == DType::Float(16);
  const bool f8_from = from.code == DType::kFloat8E4M3 || from.code == DType::kFloat8E5M2;
  const bool f8_to = to.code == DType::kFloat8E4M3 || to.code == DType::kFloat8E5M2;
  if (f32_from && f16_to) return "tl::__float22half2_rn";
  if (f32_from && to == DType::BFloat16()) return "tl::__float22bfloat162_rn";
  if (f16_from && f32_to) return "tl::__half22float2";
  if (from == DType::BFloat16() && f32_to) return "tl::__bfloat1622float2";
  // The 8-bit helpers are templates: the 8-bit type named where the arguments do not fix it.
  if (f32_from && f8_to) return "tl::__nv_cvt_float2_to_fp8x2<" + CType(to) + ">";
  if (f16_from && f8_to) return "tl::__tl_cvt_half2_to_fp8x2<" + CType(to) + ">";
  if (f8_from && f32_to) return "tl::__tl_cvt_fp8x2_to_float2<" + CType(from) + ">";
  if (f8_from && f16_to) return "tl::__tl_cvt_fp8x2_to_half2<" + CType(from) + ">";
  const bool e8m0_from = from.code == DType::kFloat8E8M0, e8m0_to = to.code == DType::kFloat8E8M0;
  if (f32_from && e8m0_to) return "tl::__tl_cvt_float2_to_e8m0x2";
  if (from == DType::Float(64) && e8m0_to) return "tl::__tl_cvt_double2_to_e8m0x2";
  if (from == DType::BFloat16() && e8m0_to) return "tl::__tl_cvt_bfloat162_to_e8m0x2";
  if (e8m0_from && to == DType::BFloat16()) return "tl::__tl_cvt_e8m0x2_to_bfloat162";
  return "";
}

}  // namespace tl::codegen
