// SPDX-License-Identifier: Apache-2.0
/// \file Tests of structural equality: alpha-equivalence of definitions, identity of free
/// variables and buffers, spans ignored.
#include <gtest/gtest.h>

#include "tl/ir/equal.h"

namespace {

using namespace tl::ir;  // NOLINT

const DType kF32 = DType::Float(32);

Expr I(int64_t v) { return IntImm::Make(DType::Index(), v); }
Expr Add(Expr a, Expr b) { return Binary::Make(BinOp::kAdd, std::move(a), std::move(b)); }
Expr Mul(Expr a, Expr b) { return Binary::Make(BinOp::kMul, std::move(a), std::move(b)); }

class EqualTest : public ::testing::Test {
 protected:
  Buffer a = BufferNode::Make("A", kF32, {I(64)}, Scope::kGlobal);
  Buffer b = BufferNode::Make("B", kF32, {I(64)}, Scope::kGlobal);
  VarRef x = Var::Make("x"), y = Var::Make("y");

  Stmt Loop(const VarRef& v, const Buffer& buf, ForKind kind = ForKind::kSerial) {
    return For::Make(v, I(0), I(64), kind, BufferStore::Make(buf, {v}, FloatImm::Make(kF32, 1.0)));
  }
};

TEST_F(EqualTest, Expressions) {
  EXPECT_TRUE(StructuralEqual(Add(x, I(1)), Add(x, I(1))));
  EXPECT_FALSE(StructuralEqual(Add(x, I(1)), Add(x, I(2))));
  EXPECT_FALSE(StructuralEqual(Add(x, I(1)), Mul(x, I(1))));
  EXPECT_FALSE(StructuralEqual(Add(x, I(1)), Add(I(1), x)));
  // Free variables compare by identity, not by name.
  EXPECT_FALSE(StructuralEqual(Add(x, I(1)), Add(y, I(1))));
  EXPECT_FALSE(StructuralEqual(x, Var::Make("x")));
  // Types matter.
  EXPECT_FALSE(StructuralEqual(I(1), IntImm::Make(DType::Int(64), 1)));
  EXPECT_FALSE(StructuralEqual(Cast::Make(DType::Int(64), x), Cast::Make(DType::Int(16), x)));
  EXPECT_TRUE(StructuralEqual(BufferLoad::Make(a, {x}), BufferLoad::Make(a, {x})));
  EXPECT_FALSE(StructuralEqual(BufferLoad::Make(a, {x}), BufferLoad::Make(b, {x})));
  EXPECT_TRUE(StructuralEqual(Call::Make(kF32, "exp", {FloatImm::Make(kF32, 2.0)}),
                              Call::Make(kF32, "exp", {FloatImm::Make(kF32, 2.0)})));
  EXPECT_FALSE(StructuralEqual(Call::Make(kF32, "exp", {FloatImm::Make(kF32, 2.0)}),
                               Call::Make(kF32, "log", {FloatImm::Make(kF32, 2.0)})));
  EXPECT_TRUE(StructuralEqual(Expr(), Expr()));
  EXPECT_FALSE(StructuralEqual(x, Expr()));
}

TEST_F(EqualTest, LoopsAreAlphaEquivalent) {
  VarRef i = Var::Make("i"), j = Var::Make("j");
  EXPECT_TRUE(StructuralEqual(Loop(i, a), Loop(j, a)));
  EXPECT_FALSE(StructuralEqual(Loop(i, a), Loop(j, b)));                    // free buffers differ
  EXPECT_FALSE(StructuralEqual(Loop(i, a), Loop(j, a, ForKind::kParallel)));  // kind differs
  // A loop variable of one side may not stand for a free variable of the other.
  Stmt uses_free = For::Make(j, I(0), I(64), ForKind::kSerial,
                             BufferStore::Make(a, {x}, FloatImm::Make(kF32, 1.0)));
  EXPECT_FALSE(StructuralEqual(Loop(i, a), uses_free));
  Stmt uses_free_i = For::Make(j, I(0), I(64), ForKind::kSerial,
                               BufferStore::Make(a, {i}, FloatImm::Make(kF32, 1.0)));
  EXPECT_FALSE(StructuralEqual(Loop(i, a), uses_free_i));
  // Nested loops map one-to-one: swapping the uses is a different program.
  VarRef i2 = Var::Make("i2"), j2 = Var::Make("j2");
  Buffer c = BufferNode::Make("C", kF32, {I(8), I(8)}, Scope::kGlobal);
  auto nest = [&](VarRef o, VarRef n, Expr r, Expr s) {
    return For::Make(o, I(0), I(8), ForKind::kSerial,
                     For::Make(n, I(0), I(8), ForKind::kSerial,
                               BufferStore::Make(c, {r, s}, FloatImm::Make(kF32, 0.0))));
  };
  EXPECT_TRUE(StructuralEqual(nest(i, j, i, j), nest(i2, j2, i2, j2)));
  EXPECT_FALSE(StructuralEqual(nest(i, j, i, j), nest(i2, j2, j2, i2)));
}

TEST_F(EqualTest, SpansAreIgnored) {
  tl::Span s1{"a.py", 3, 1, 3, 10}, s2{"b.py", 7, 2, 7, 4};
  Stmt e1 = Evaluate::Make(x, s1), e2 = Evaluate::Make(x, s2);
  EXPECT_TRUE(StructuralEqual(e1, e2));
  VarRef i = Var::Make("i"), j = Var::Make("j");
  Stmt l1 = For::Make(i, I(0), I(4), ForKind::kSerial, e1, {}, s1);
  Stmt l2 = For::Make(j, I(0), I(4), ForKind::kSerial, e2, {}, s2);
  EXPECT_TRUE(StructuralEqual(l1, l2));
}

TEST_F(EqualTest, AllocatedBuffersAreMapped) {
  Buffer s1 = BufferNode::Make("S", kF32, {I(16)}, Scope::kShared);
  Buffer s2 = BufferNode::Make("T", kF32, {I(16)}, Scope::kShared);
  Buffer s3 = BufferNode::Make("S", kF32, {I(32)}, Scope::kShared);
  Buffer s4 = BufferNode::Make("S", kF32, {I(16)}, Scope::kFragment);
  Buffer s5 = BufferNode::Make("S", DType::Float(16), {I(16)}, Scope::kShared);
  auto prog = [&](const Buffer& s) {
    return Seq::Make({Allocate::Make(s), CopyOp::Make(Region::Full(a), Region::Full(s)),
                      FillOp::Make(Region::Full(s), FloatImm::Make(kF32, 0.0))});
  };
  EXPECT_TRUE(StructuralEqual(prog(s1), prog(s2)));
  EXPECT_FALSE(StructuralEqual(prog(s1), prog(s3)));  // shape
  EXPECT_FALSE(StructuralEqual(prog(s1), prog(s4)));  // scope
  EXPECT_FALSE(StructuralEqual(prog(s1), prog(s5)));  // dtype
  // Without the allocation the buffers are free and must be identical.
  Stmt use1 = FillOp::Make(Region::Full(s1), FloatImm::Make(kF32, 0.0));
  Stmt use2 = FillOp::Make(Region::Full(s2), FloatImm::Make(kF32, 0.0));
  EXPECT_FALSE(StructuralEqual(use1, use2));
  EXPECT_TRUE(StructuralEqual(use1, FillOp::Make(Region::Full(s1), FloatImm::Make(kF32, 0.0))));
}

TEST_F(EqualTest, LetsAndKernels) {
  VarRef t1 = Var::Make("t"), t2 = Var::Make("u");
  VarRef bx1 = Var::Make("bx"), bx2 = Var::Make("bx");
  auto kernel = [&](VarRef bx, VarRef t) {
    return KernelLaunch::Make(
        {I(4)}, {bx}, {128},
        Seq::Make({LetStmt::Make(t, Mul(bx, I(16))),
                   BufferStore::Make(a, {t}, FloatImm::Make(kF32, 1.0))}));
  };
  EXPECT_TRUE(StructuralEqual(kernel(bx1, t1), kernel(bx2, t2)));
  Stmt other_threads = KernelLaunch::Make({I(4)}, {bx2}, {256}, As<KernelLaunch>(kernel(bx2, t2))->body);
  EXPECT_FALSE(StructuralEqual(kernel(bx1, t1), other_threads));
  // If/else: a missing else differs from a present one.
  Stmt st = BufferStore::Make(a, {I(0)}, FloatImm::Make(kF32, 1.0));
  Expr cond = Binary::Make(BinOp::kLT, x, I(3));
  EXPECT_TRUE(StructuralEqual(IfThenElse::Make(cond, st), IfThenElse::Make(cond, st)));
  EXPECT_FALSE(StructuralEqual(IfThenElse::Make(cond, st), IfThenElse::Make(cond, st, st)));
}

TEST_F(EqualTest, FunctionsMapParamsPositionally) {
  VarRef n1 = Var::Make("n"), n2 = Var::Make("n");
  Buffer a1 = BufferNode::Make("A", kF32, {n1}, Scope::kGlobal);
  Buffer a2 = BufferNode::Make("A", kF32, {n2}, Scope::kGlobal);
  auto func = [&](const Buffer& buf, const VarRef& n) {
    VarRef i = Var::Make("i");
    Stmt body = For::Make(i, I(0), n, ForKind::kSerial,
                          BufferStore::Make(buf, {i}, FloatImm::Make(kF32, 2.0)));
    return PrimFuncNode::Make("f", {Param{nullptr, n}, Param{buf, nullptr}}, body);
  };
  EXPECT_TRUE(StructuralEqual(func(a1, n1), func(a2, n2)));
  // Same body over a different (unmapped) dynamic dim is not equal.
  Buffer a3 = BufferNode::Make("A", kF32, {n1}, Scope::kGlobal);
  EXPECT_FALSE(StructuralEqual(func(a1, n1), func(a3, n2)));
}

TEST_F(EqualTest, SharedSubtreesStayLinear) {
  // Two separately built DAGs with 2^60 paths each compare in linear time.
  Expr e1 = x, e2 = x;
  for (int k = 0; k < 60; ++k) {
    e1 = Add(e1, e1);
    e2 = Add(e2, e2);
  }
  EXPECT_TRUE(StructuralEqual(e1, e2));
}

}  // namespace
