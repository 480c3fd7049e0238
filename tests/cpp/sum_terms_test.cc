// SPDX-License-Identifier: Apache-2.0
/// \file arith::SumTerms / LoopArithmetic / SplitLoopTerms (tl.loop_terms_apart).
#include <gtest/gtest.h>

#include "tl/arith/sum_terms.h"
#include "tl/ir/printer.h"

namespace {

using namespace tl::ir;  // NOLINT
using tl::arith::LoopArithmetic;
using tl::arith::SplitInnerLoopTerms;
using tl::arith::SplitLoopTerms;
using tl::arith::SumTerms;

const DType kI32 = DType::Int(32);
Expr I(int64_t v) { return IntImm::Make(kI32, v); }
Expr Bin(BinOp op, Expr a, Expr b) { return Binary::Make(op, std::move(a), std::move(b)); }

TEST(SumTerms, SignsFollowSubtractions) {
  VarRef a = Var::Make("a", kI32), b = Var::Make("b", kI32), c = Var::Make("c", kI32);
  // a - (b - c) = a - b + c
  auto terms = SumTerms(Bin(BinOp::kSub, a, Bin(BinOp::kSub, b, c)));
  ASSERT_EQ(terms.size(), 3u);
  EXPECT_FALSE(terms[0].first);
  EXPECT_TRUE(terms[1].first);
  EXPECT_FALSE(terms[2].first);
  EXPECT_EQ(terms[2].second.get(), Expr(c).get());
}

TEST(SumTerms, SplitsTheLoopsConstantTerms) {
  VarRef tx = Var::Make("tx", kI32), u = Var::Make("u", kI32), r = Var::Make("r", kI32);
  VarRef row = Var::Make("row", kI32);  // a value loaded before the loop
  std::unordered_set<const Var*> loops = {u.get(), r.get()};
  // tx * 64 + u * 4096 - 2048 + r * 1024 + row * 576 - u
  Expr off = Bin(BinOp::kSub,
                 Bin(BinOp::kAdd,
                     Bin(BinOp::kAdd, Bin(BinOp::kSub, Bin(BinOp::kAdd, Bin(BinOp::kMul, tx, I(64)),
                                                             Bin(BinOp::kMul, u, I(4096))),
                                          I(2048)),
                         Bin(BinOp::kMul, r, I(1024))),
                     Bin(BinOp::kMul, row, I(576))),
                 u);
  EXPECT_TRUE(LoopArithmetic(Bin(BinOp::kMul, u, I(4096)), loops));
  EXPECT_FALSE(LoopArithmetic(Bin(BinOp::kMul, Bin(BinOp::kAdd, u, tx), I(8)), loops));  // the thread index
  EXPECT_FALSE(LoopArithmetic(Bin(BinOp::kShr, u, I(1)), loops));                         // not + - *
  auto [others, loop] = SplitLoopTerms(off, loops);
  ASSERT_TRUE(others && loop);
  EXPECT_EQ(ToString(others), "tx * 64 - 2048 + row * 576");
  EXPECT_EQ(ToString(loop), "u * 4096 + r * 1024 - u");
  // a constant stays with the others (it is the start's); nothing to split without loop
  // terms, without other terms, or without loops
  auto [start, steps] = SplitLoopTerms(Bin(BinOp::kAdd, Bin(BinOp::kMul, u, I(8)), I(3)), loops);
  ASSERT_TRUE(start && steps);
  EXPECT_EQ(ToString(start), "3");
  EXPECT_EQ(ToString(steps), "u * 8");
  EXPECT_FALSE(SplitLoopTerms(Bin(BinOp::kAdd, tx, I(3)), loops).first);
  EXPECT_FALSE(SplitLoopTerms(Bin(BinOp::kMul, u, I(8)), loops).first);
  EXPECT_FALSE(SplitLoopTerms(off, {}).first);
}

TEST(SumTerms, OnlyTheInnermostUnrolledLoopsGoApart) {
  VarRef tx = Var::Make("tx", kI32), k = Var::Make("k", kI32), l = Var::Make("l", kI32);
  VarRef u = Var::Make("u", kI32);
  // k outside l: tx * 4 + (l / 12) * 98304 + k * 196608 + l * 32. l's division stays in
  // the base, so k's term stays there too (one base per l step would be hoisted out of k)
  Expr gqa = Bin(BinOp::kAdd,
                 Bin(BinOp::kAdd, Bin(BinOp::kAdd, Bin(BinOp::kMul, tx, I(4)),
                                      Bin(BinOp::kMul, Bin(BinOp::kDiv, l, I(12)), I(98304))),
                     Bin(BinOp::kMul, k, I(196608))),
                 Bin(BinOp::kMul, l, I(32)));
  EXPECT_FALSE(SplitInnerLoopTerms(gqa, {k.get(), l.get()}).first);
  // without the division both go apart, the nest's start one base
  Expr both = Bin(BinOp::kAdd, Bin(BinOp::kAdd, Bin(BinOp::kMul, tx, I(4)), Bin(BinOp::kMul, k, I(196608))),
                  Bin(BinOp::kMul, l, I(32)));
  auto [base, steps] = SplitInnerLoopTerms(both, {k.get(), l.get()});
  ASSERT_TRUE(base && steps);
  EXPECT_EQ(ToString(base), "tx * 4");
  EXPECT_EQ(ToString(steps), "k * 196608 + l * 32");
  // k rolled (null): only l goes apart, and nothing outside k
  auto [start, unrolled] = SplitInnerLoopTerms(both, {u.get(), nullptr, l.get()});
  ASSERT_TRUE(start && unrolled);
  EXPECT_EQ(ToString(start), "tx * 4 + k * 196608");
  EXPECT_EQ(ToString(unrolled), "l * 32");
  // a gathered row (a loaded value that uses the outer loop): the inner loop alone
  VarRef r = Var::Make("r", kI32);
  Expr gathered = Bin(BinOp::kAdd, Bin(BinOp::kAdd, Bin(BinOp::kMul, Bin(BinOp::kAdd, r, tx), I(576)),
                                       Bin(BinOp::kMul, u, I(64))),
                      Bin(BinOp::kMul, r, I(8)));
  auto [row, cols] = SplitInnerLoopTerms(gathered, {r.get(), u.get()});
  ASSERT_TRUE(row && cols);
  EXPECT_EQ(ToString(cols), "u * 64");
}

}  // namespace
