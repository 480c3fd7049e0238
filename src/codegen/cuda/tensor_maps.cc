// SPDX-License-Identifier: Apache-2.0
/// \file The TMA descriptors a CUDA kernel takes as parameters (tensor_maps.h).
#include "tensor_maps.h"

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/printer.h"
#include "tl/support/error.h"

namespace tl::codegen::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// CUtensorMapDataType of an element type (integers by width: TMA moves bits).
int TmaDataType(DType t) {
  if (t == DType::Float(16)) return 6;
  if (t == DType::BFloat16()) return 9;
  if (t == DType::Float(32)) return 7;
  if (t == DType::Float(64)) return 8;
  switch (t.bits) {
    case 8: return 0;
    case 16: return 1;
    case 32: return t.IsSigned() ? 3 : 2;
    default: return t.IsSigned() ? 5 : 4;
  }
}

/// A tensor dimension for a TmaSpec: its value, or -(1 + the launch argument holding it).
int64_t DimArgument(const PrimFunc& f, const CudaSource& out, const Expr& dim) {
  int64_t v = 0;
  if (AsConstInt(dim, &v)) return v;
  const auto* var = As<Var>(dim);
  TL_ICHECK(var) << "TMA tensor dimension " << ToString(dim) << " is neither static nor a size argument";
  for (size_t pi = 0; pi < f->params.size(); ++pi) {
    if (f->params[pi].var.get() == var) return -1 - static_cast<int64_t>(pi);
  }
  for (size_t j = 0; j < out.dynamic_vars.size(); ++j) {
    if (out.dynamic_vars[j].get() == var) return -1 - static_cast<int64_t>(f->params.size() + j);
  }
  TL_ICHECK(false) << "TMA tensor dimension " << var->name << " is not a launch argument";
  return 0;
}

}  // namespace

void DeclareTensorMaps(const PrimFunc& f, CudaSource* out, std::ostringstream* sig,
                       std::unordered_map<std::string, std::string>* names) {
  ForEachExpr(f->body, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    const bool im2col = IsIntrinsic(call, TL_INTRINSIC_NAME("tma_im2col_descriptor"));
    if (!call || (!IsIntrinsic(call, TL_INTRINSIC_NAME("tma_descriptor")) && !im2col)) return;
    std::string key = ToString(e);
    if (names->count(key)) return;
    const Buffer& tensor = As<BufferLoad>(As<Call>(call->args[0])->args[0])->buffer;
    TmaSpec spec;
    for (size_t pi = 0; pi < f->params.size(); ++pi) {
      if (f->params[pi].buffer == tensor) spec.tensor_arg = static_cast<int>(pi);
    }
    spec.data_type = TmaDataType(tensor->dtype);
    spec.elem_bytes = tensor->dtype.bytes();
    int64_t swizzle = 0;
    AsConstInt(call->args[1], &swizzle);
    spec.swizzle = static_cast<int>(swizzle);
    // tma_descriptor: the box, innermost first. tma_im2col_descriptor: channels per
    // pixel, pixels per column, the traversal stride, then the pixel box's lower and
    // upper corners (W then H); see cuda::LowerTmaIm2col.
    std::vector<int64_t>& rest = im2col ? spec.im2col : spec.box;
    for (size_t j = 2; j < call->args.size(); ++j) {
      int64_t b = 0;
      AsConstInt(call->args[j], &b);
      rest.push_back(b);
    }
    for (size_t d = tensor->shape.size(); d-- > 0;) spec.dims.push_back(DimArgument(f, *out, tensor->shape[d]));
    std::string name = "tl_tma_" + std::to_string(out->tma_specs.size());
    (*names)[key] = name;
    out->tma_specs.push_back(spec);
    *sig << ", const __grid_constant__ tl::TmaDescriptor " << name;
  });
}

}  // namespace tl::codegen::cuda
