// SPDX-License-Identifier: Apache-2.0
/// \file The warp-level intrinsics in CUDA (see warp_intrinsics.h).
#include "warp_intrinsics.h"

#include "tl/ir/intrinsics.h"

namespace tl::codegen::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// Warp and block votes: the CUDA intrinsics (ballot and activemask widened to 64 bits, as
/// TileLang types them).
std::string PrintVote(const Call* op, const std::function<std::string(const Expr&)>& print) {
  auto mask = [&] { return "(unsigned int)(" + print(op->args[0]) + ")"; };
  auto operand = [&](size_t k) { return "(int)(" + print(op->args[k]) + ")"; };
  const std::string& n = op->op;
  if (n == "vote_any_sync") return "__any_sync(" + mask() + ", " + operand(1) + ")";
  if (n == "vote_all_sync") return "__all_sync(" + mask() + ", " + operand(1) + ")";
  if (n == "vote_ballot_sync") return "((unsigned long long)__ballot_sync(" + mask() + ", " + operand(1) + "))";
  if (n == "vote_activemask") return "((unsigned long long)__activemask())";
  if (n == "vote_match_any_sync") return "__match_any_sync(" + mask() + ", " + print(op->args[1]) + ")";
  if (n == "vote_match_all_sync") {  // CUDA's own, its predicate output dropped (the mask says the same)
    return "[&] { int tl_all; return __match_all_sync(" + mask() + ", " + print(op->args[1]) + ", &tl_all); }()";
  }
  return "__" + n + "(" + operand(0) + ")";  // __syncthreads_count / _and / _or
}

}  // namespace

std::string PrintWarpCall(const Call* op, const std::function<std::string(const Expr&)>& print) {
  if (HasEffect(op, kVote)) return PrintVote(op, print);
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("ffs"))) {  // CUDA's own: __ffsll for 64-bit operands (a ballot), else __ffs
    bool wide = op->args[0]->dtype.bytes() == 8;
    return std::string(wide ? "__ffsll((long long)(" : "__ffs((int)(") + print(op->args[0]) + "))";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("fns"))) {
    return "__fns((unsigned int)(" + print(op->args[0]) + "), (unsigned int)(" + print(op->args[1]) + "), (int)(" +
           print(op->args[2]) + "))";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("syncwarp")))
    return op->args.empty() ? "__syncwarp()" : "__syncwarp(" + print(op->args[0]) + ")";
  if (op->op.rfind("allreduce_", 0) == 0) {  // (value, lanes, whole warp): upstream's spelling
    static const std::pair<const char*, const char*> kOps[] = {
        {"allreduce_sum", "SumOp"},         {"allreduce_max", "MaxOp"},         {"allreduce_min", "MinOp"},
        {"allreduce_max_nan", "MaxOpNan"}, {"allreduce_min_nan", "MinOpNan"}};
    const char* name = nullptr;
    for (const auto& [intrinsic, op_name] : kOps) {
      if (op->op == intrinsic) name = op_name;
    }
    int64_t whole_warp = 0, lanes = 0;
    if (op->args.size() > 2) AsConstInt(op->args[2], &whole_warp);
    if (AsConstInt(op->args[1], &lanes) && lanes == 32) whole_warp = 0;  // (the whole warp anyway)
    if (name) {
      return std::string("tl::AllReduce<tl::") + name + ", " + print(op->args[1]) + (whole_warp ? ", true" : "") +
             ">::run(" + print(op->args[0]) + ")";
    }
  }
  if (op->op.rfind("warp_reduce_", 0) == 0) {  // (value, lanes[, whole warp])
    int64_t whole_warp = 0, lanes = 32;
    if (op->args.size() > 2) AsConstInt(op->args[2], &whole_warp);
    if (AsConstInt(op->args[1], &lanes) && lanes == 32) whole_warp = 0;  // (the default: no promise needed)
    return "tl::" + op->op + "<" + print(op->args[1]) + (whole_warp ? ", true" : "") + ">(" + print(op->args[0]) + ")";
  }
  if (IsIntrinsic(op, TL_INTRINSIC_NAME("shfl_xor")) || IsIntrinsic(op, TL_INTRINSIC_NAME("shfl_down")) ||
      IsIntrinsic(op, TL_INTRINSIC_NAME("shfl_up")) || IsIntrinsic(op, TL_INTRINSIC_NAME("shfl_sync"))) {
    // 32- and 64-bit ints and floats: CUDA's __shfl_*_sync itself; the 16- and 8-bit types
    // through tl::'s, which widens them (reduce.h)
    DType t = op->args[0]->dtype;
    if ((t.bytes() == 4 || t.bytes() == 8) && (t.IsInt() || t.code == DType::kFloat)) {
      std::string name = IsIntrinsic(op, TL_INTRINSIC_NAME("shfl_sync")) ? "__shfl_sync" : "__" + op->op + "_sync";
      return name + "(0xffffffffu, " + print(op->args[0]) + ", " + print(op->args[1]) + ", " +
             print(op->args[2]) + ")";
    }
    return "tl::" + op->op + "(" + print(op->args[0]) + ", " + print(op->args[1]) + ", " + print(op->args[2]) + ")";
  }
  return "";
}

}  // namespace tl::codegen::cuda
