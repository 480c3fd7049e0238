// SPDX-License-Identifier: Apache-2.0
/// \file check-target-features: stochastic rounding (cast_rs) is refused with sat=false on
/// every target and on CUDA below sm_100a, at the statement's line; allowed elsewhere, with a
/// remark on CUDA that it rounds in software.
#include <gtest/gtest.h>

#include <string>

#include "tl/ir/stmt.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace {

using namespace tl::ir;  // NOLINT
using tl::transform::PassContext;
using tl::transform::RunPass;

PrimFunc RoundingKernel(DType to, bool sat) {
  Buffer a = BufferNode::Make("A", DType::Float(32), {MakeInt(16)}, Scope::kGlobal);
  Buffer b = BufferNode::Make("B", to, {MakeInt(16)}, Scope::kGlobal);
  Expr rs = Call::Make(to, "cast_rs", {BufferLoad::Make(a, {MakeInt(3)}), MakeInt(7, DType::UInt(32)), MakeBool(sat)});
  tl::Span at{"kernel.py", 12, 5, 12, 40};
  Stmt store = BufferStore::Make(b, {MakeInt(3)}, rs, at);
  return PrimFuncNode::Make("k", {Param{a, nullptr}, Param{b, nullptr}}, store);
}

/// The error's message, or "" when the pass accepts the kernel.
std::string Check(const PrimFunc& f, PassContext& ctx, int* line = nullptr) {
  try {
    RunPass("check-target-features", f, ctx);
  } catch (const tl::CompileError& e) {
    if (line) *line = e.span().line;
    return e.what();
  }
  return "";
}

TEST(CheckTargetFeatures, CpuAndSm100aRoundStochastically) {
  PassContext cpu;
  EXPECT_EQ(Check(RoundingKernel(DType::Float8E4M3(), true), cpu), "");
  EXPECT_TRUE(cpu.remarks.empty());
  PassContext blackwell;
  blackwell.config["tl.target_arch"] = "sm_100a";
  EXPECT_EQ(Check(RoundingKernel(DType::Float(16), true), blackwell), "");
  ASSERT_EQ(blackwell.remarks.size(), 1u);
  EXPECT_NE(blackwell.remarks[0].find("line 12"), std::string::npos) << blackwell.remarks[0];
}

TEST(CheckTargetFeatures, OtherCudaArchitecturesAreRefusedAtTheLine) {
  for (const char* arch : {"sm_90a", "sm_100", "sm_80", "sm_89"}) {
    PassContext ctx;
    ctx.config["tl.target_arch"] = arch;
    int line = 0;
    std::string msg = Check(RoundingKernel(DType::BFloat16(), true), ctx, &line);
    EXPECT_NE(msg.find("Stochastic rounding f32-to-BF16 requires sm_100a"), std::string::npos) << arch << ": " << msg;
    EXPECT_NE(msg.find(std::string("compiled for ") + arch), std::string::npos) << msg;
    EXPECT_EQ(line, 12);
  }
  PassContext ctx;
  ctx.config["tl.target_arch"] = "sm_90a";
  EXPECT_NE(Check(RoundingKernel(DType::Float4E2M1(), true), ctx).find("f32-to-FP4"), std::string::npos);
}

TEST(CheckTargetFeatures, SatFalseIsRefusedOnEveryTarget) {
  PassContext cpu;
  EXPECT_NE(Check(RoundingKernel(DType::Float(16), false), cpu).find("sat=false is not supported"), std::string::npos);
  PassContext blackwell;
  blackwell.config["tl.target_arch"] = "sm_100a";
  EXPECT_NE(Check(RoundingKernel(DType::Float(16), false), blackwell).find("sat=false"), std::string::npos);
}

}  // namespace
