// SPDX-License-Identifier: Apache-2.0
#include "gemm_intrinsics.h"

#include "tl/arith/simplify.h"
#include "tl/ir/intrinsics.h"
#include "tl/layout/shared.h"
#include "tl/op/ldmatrix_operand.h"

namespace tl::codegen::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// Whether `address` (address_of an element of a per-thread array of 8- or 16-bit elements)
/// starts a whole 32-bit word: the array is declared 4-byte aligned (alignas(LocalAlignment),
/// as its declaration prints it) and the element offset is a multiple of the elements per
/// word, for every value of the loop variables in it.
bool StartsAlignedWord(const Expr& address) {
  const auto* call = As<Call>(address);
  if (!call || call->op != "address_of" || call->args.size() != 1) return false;
  const auto* load = As<BufferLoad>(call->args[0]);
  if (!load || load->buffer->scope != Scope::kLocal || load->indices.size() != 1) return false;
  const int64_t bytes = load->dtype.bytes();
  int64_t count = 0;
  if ((bytes != 1 && bytes != 2) || !AsConstInt(load->buffer->NumElements(), &count) ||
      layout::LocalAlignment(count * bytes) < 4) {
    return false;
  }
  const Expr& index = load->indices[0];
  return arith::Analyzer().CanProve(EQ(FloorMod(index, MakeInt(4 / bytes, index->dtype)), MakeInt(0, index->dtype)));
}

}  // namespace

std::string PrintGemmCall(const Call* op, const std::function<std::string(const Expr&)>& print,
                          const std::function<std::string(const Expr&)>& shared_layout) {
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("gemm_rs"))) {
    std::string s = "tl::gemm_rs<";
    for (int k = 3; k < 9; ++k) s += print(op->args[k]) + ", ";
    s += shared_layout(op->args[1]) + ">(";
    for (int k = 0; k < 3; ++k) s += (k ? ", " : "") + print(op->args[k]);
    return s + ")";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("ldmatrix_operand"))) {
    // One ldmatrix: this lane gives the address of its matrix row (the tile's layout applies).
    const op::LdmatrixOperand o = op::LdmatrixOperand::Of(op, {});
    Expr row = Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(o.src, o.LaneRow())});
    return "tl::ldmatrix_operand<" + std::to_string(o.matrices) + ", " + (o.trans ? "true" : "false") + ">(" +
           print(op->args[0]) + ", " + print(row) + ")";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("mma_fragment")) && op->args.size() == 3) {
    // 8- and 16-bit operands whose registers are whole aligned words are read as words
    // (templates/tl/cuda/mma.h says why); float32 (tf32) ones hold one element a register
    if (StartsAlignedWord(op->args[1]) && StartsAlignedWord(op->args[2])) {
      return "tl::mma_fragment<true>(" + print(op->args[0]) + ", " + print(op->args[1]) + ", " + print(op->args[2]) +
             ")";
    }
    return "";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("panel_layout")))
    return "(void)0";  // a request to the shared-memory plan, already applied
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("gemm_rs_tf32")) || IsIntrinsic(op, TL_INTRINSIC_NAME("gemm_rs_tf32_panels"))) {
    std::string s = "tl::gemm_rs_tf32<";
    for (int k = 3; k < 11; ++k) s += print(op->args[k]) + ", ";
    s += shared_layout(op->args[1]);
    int64_t exact = 0;
    if (op->args.size() > 11 && AsConstInt(op->args[11], &exact) && exact) s += ", true";  // AExact (default false)
    s += ">(";
    for (int k = 0; k < 3; ++k) s += (k ? ", " : "") + print(op->args[k]);
    return s + ")";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("wait_wgmma"))) return "tl::wait_wgmma<" + print(op->args[0]) + ">()";
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("wgmma_hold")))
    return "tl::wgmma_hold<" + print(op->args[1]) + ">(" + print(op->args[0]) + ")";
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("wgmma_wait_hold"))) {
    return "tl::wgmma_wait_hold<" + print(op->args[1]) + ", " + print(op->args[2]) + ">(" + print(op->args[0]) + ")";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("wgmma_pack_a"))) {
    return "tl::wgmma_pack_a<" + print(op->args[2]) + ">(" + print(op->args[0]) + ", " + print(op->args[1]) + ")";
  }
  const bool rs = IsIntrinsic(op, TL_INTRINSIC_NAME("gemm_rs_wgmma")) ||
                  IsIntrinsic(op, TL_INTRINSIC_NAME("gemm_rs_wgmma_issue"));
  if (rs || IsIntrinsic(op, TL_INTRINSIC_NAME("gemm_ss_wgmma")) ||
      IsIntrinsic(op, TL_INTRINSIC_NAME("gemm_ss_wgmma_issue"))) {
    // ss: (A, B, C, M, N, K, trans_a, trans_b, proxy_fence, warpgroups_n, m_blocks[, KTileA, KTileB]);
    // rs: (A, B, C, M, N, K, trans_b, proxy_fence, m_blocks). The template arguments follow
    // the pointers; trailing ones at their defaults (true, 1, 1) are left out.
    const size_t first_default = rs ? 7 : 8;
    size_t end = op->args.size();
    int64_t v = 0;
    while (end > first_default && AsConstInt(op->args[end - 1], &v) && v == 1) --end;
    std::string s = "tl::" + op->op + "<";
    for (size_t k = 3; k < end; ++k) s += print(op->args[k]) + (k + 1 < end ? ", " : "");
    s += ">(";
    for (int k = 0; k < 3; ++k) s += (k ? ", " : "") + print(op->args[k]);
    return s + ")";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("gemm_ss")) || IsIntrinsic(op, TL_INTRINSIC_NAME("gemm_ss_panels"))) {
    std::string s = "tl::gemm_ss<";
    for (int k = 3; k < 12; ++k) s += print(op->args[k]) + ", ";
    s += shared_layout(op->args[0]) + ", " + shared_layout(op->args[1]);
    // MFastest, InterleaveM: the accumulator's warp order, when it is a wgmma one
    for (size_t k = 12; k < op->args.size(); ++k) s += ", " + print(op->args[k]);
    s += ">(";
    for (int k = 0; k < 3; ++k) s += (k ? ", " : "") + print(op->args[k]);
    return s + ")";
  }
  return "";
}

}  // namespace tl::codegen::cuda
