// SPDX-License-Identifier: Apache-2.0
/// \file The copy and conversion intrinsics in CUDA (see copy_intrinsics.h).
#include "copy_intrinsics.h"

#include "tl/codegen/cuda.h"
#include "tl/ir/expr.h"
#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"

namespace tl::codegen::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// The element type an address expression points at: `address_of(B[...])` -> B's dtype.
DType AddressedType(const Expr& address) {
  const auto* call = As<Call>(address);
  const auto* load = IsIntrinsic(call, TL_INTRINSIC_NAME("address_of")) && call->args.size() == 1
                         ? As<BufferLoad>(call->args[0])
                         : nullptr;
  return load ? load->buffer->dtype : DType::Void();
}

}  // namespace

std::string PrintCopyCall(const Call* op, const std::function<std::string(const Expr&)>& print) {
  // (the compiler's own groups and the program's, T.ptx_commit_group / T.ptx_wait_group)
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("cp_async_commit")) || IsIntrinsic(op, TL_INTRINSIC_NAME("ptx_commit_group")))
    return "tl::cp_async_commit()";
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("cp_async_wait")) || IsIntrinsic(op, TL_INTRINSIC_NAME("ptx_wait_group")))
    return "tl::cp_async_wait<" + print(op->args[0]) + ">()";
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("cp_async"))) {
    return "tl::cp_async_zfill_" + print(op->args[2]) + "(" + print(op->args[0]) + ", " + print(op->args[1]) +
           ", " + print(op->args[3]) + ")";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("vec_copy"))) {
    return "tl::copy<" + print(op->args[2]) + ">(" + print(op->args[0]) + ", " + print(op->args[1]) + ")";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("cast_copy"))) {
    // Two at a time where the device library converts pairs (tl::cast_copy<N, pair>).
    int64_t n = 0;
    std::string pair;
    if (AsConstInt(op->args[2], &n) && n % 2 == 0) {
      pair = CudaPairConversion(AddressedType(op->args[1]), AddressedType(op->args[0]));
    }
    return "tl::cast_copy<" + print(op->args[2]) + (pair.empty() ? "" : ", " + pair) + ">(" + print(op->args[0]) +
           ", " + print(op->args[1]) + ")";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("convert_pair"))) {  // (address of the first of two elements, lo, hi)
    std::string pair = CudaPairConversion(op->args[1]->dtype, AddressedType(op->args[0]));
    TL_ICHECK(!pair.empty()) << "convert_pair between types without a pair conversion";
    return pair + "(" + print(op->args[0]) + ", " + print(op->args[1]) + ", " + print(op->args[2]) + ")";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("stmatrix_x4")))
    return "tl::stmatrix_x4(" + print(op->args[0]) + ", " + print(op->args[1]) + ")";
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("vec_zero")))
    return "tl::vec_zero<" + print(op->args[1]) + ">(" + print(op->args[0]) + ")";
  return "";
}

}  // namespace tl::codegen::cuda
