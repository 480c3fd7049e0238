// SPDX-License-Identifier: Apache-2.0
// The printer's text form: what errors, IR dumps and golden tests show.
#include <gtest/gtest.h>

#include "tl/ir/printer.h"
#include "tl/op/make.h"

namespace tl::ir {
namespace {

TEST(Printer, ExpressionPrecedence) {
  VarRef x = Var::Make("x"), y = Var::Make("y");
  Expr e = Binary::Make(BinOp::kMul, Binary::Make(BinOp::kAdd, x, y), MakeInt(4));
  EXPECT_EQ(ToString(e), "(x + y) * 4");
  EXPECT_EQ(ToString(Binary::Make(BinOp::kSub, x, Binary::Make(BinOp::kSub, y, MakeInt(1)))), "x - (y - 1)");
  EXPECT_EQ(ToString(Binary::Make(BinOp::kFloorMod, x, MakeInt(8))), "x % 8");
  EXPECT_EQ(ToString(Binary::Make(BinOp::kMax, x, y)), "T.max(x, y)");
  EXPECT_EQ(ToString(MakeFloat(1.5)), "1.5");
  EXPECT_EQ(ToString(MakeFloat(2, DType::Float(16))), "T.float16(2.0)");
  EXPECT_EQ(ToString(MakeBool(true)), "True");
}

TEST(Printer, SameNamedVariablesAreToldApart) {
  VarRef a = Var::Make("i"), b = Var::Make("i");
  EXPECT_EQ(ToString(Binary::Make(BinOp::kAdd, a, b)), "i + i_1");
}

TEST(Printer, KernelWithTileOps) {
  Buffer A = BufferNode::Make("A", DType::Float(16), {MakeInt(256), MakeInt(64)}, Scope::kGlobal);
  Buffer S = BufferNode::Make("A_shared", DType::Float(16), {MakeInt(128), MakeInt(64)}, Scope::kShared);
  VarRef bx = Var::Make("bx");
  op::RegionSpec src{A, {Binary::Make(BinOp::kMul, bx, MakeInt(128)), MakeInt(0)}, {nullptr, nullptr}};
  op::RegionSpec dst{S, {}, {}};
  Stmt copy = op::MakeCopy(src, dst, Span{});
  Stmt body = Seq::Make({Allocate::Make(S), copy});
  Stmt k = KernelLaunch::Make({MakeInt(2)}, {bx}, {128}, body);
  EXPECT_EQ(ToString(k),
            "with T.Kernel(2, threads=128) as (bx):\n"
            "  A_shared = T.alloc_shared((128, 64), \"float16\")\n"
            "  T.copy(A[bx * 128:bx * 128 + 128, 0:64], A_shared[0:128, 0:64])\n");
}

TEST(Printer, Function) {
  Buffer A = BufferNode::Make("A", DType::Float(32), {MakeInt(8)}, Scope::kGlobal);
  VarRef i = Var::Make("i");
  Stmt loop = For::Make(i, MakeInt(0), MakeInt(8), ForKind::kParallel,
                        BufferStore::Make(A, {i}, MakeFloat(0)));
  PrimFunc f = PrimFuncNode::Make("zero", {{A, nullptr}}, loop);
  EXPECT_EQ(ToString(f),
            "@T.prim_func\ndef zero(A: T.Tensor((8,), \"float32\")):\n"
            "  for i in T.Parallel(8):\n"
            "    A[i] = 0.0\n");
}

}  // namespace
}  // namespace tl::ir
