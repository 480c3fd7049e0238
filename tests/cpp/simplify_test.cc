// SPDX-License-Identifier: Apache-2.0
/// \file Tests of the arithmetic simplifier, bound analysis and statement Simplify.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <unordered_map>

#include "tl/arith/simplify.h"
#include "tl/ir/equal.h"
#include "tl/ir/functor.h"
#include "tl/ir/printer.h"

namespace {

using namespace tl::ir;  // NOLINT
using tl::arith::Analyzer;
using tl::arith::IntBound;

const DType kI32 = DType::Int(32);

Expr I(int64_t v, DType t = kI32) { return IntImm::Make(t, v); }
Expr F(double v, DType t = DType::Float(32)) { return FloatImm::Make(t, v); }
Expr Bin(BinOp op, Expr a, Expr b) { return Binary::Make(op, std::move(a), std::move(b)); }
Expr Add(Expr a, Expr b) { return Bin(BinOp::kAdd, a, b); }
Expr Sub(Expr a, Expr b) { return Bin(BinOp::kSub, a, b); }
Expr Mul(Expr a, Expr b) { return Bin(BinOp::kMul, a, b); }
Expr FDiv(Expr a, Expr b) { return Bin(BinOp::kFloorDiv, a, b); }
Expr FMod(Expr a, Expr b) { return Bin(BinOp::kFloorMod, a, b); }
Expr Lt(Expr a, Expr b) { return Bin(BinOp::kLT, a, b); }

std::string S(const Expr& e) {
  Analyzer an;
  return ToString(an.Simplify(e));
}
std::string S(Analyzer& an, const Expr& e) { return ToString(an.Simplify(e)); }

int64_t ConstOf(const Expr& e) {
  auto* imm = As<IntImm>(e);
  EXPECT_NE(imm, nullptr) << ToString(e);
  return imm ? imm->value : INT64_MIN;
}

class SimplifyTest : public ::testing::Test {
 protected:
  VarRef x = Var::Make("x"), y = Var::Make("y"), z = Var::Make("z");
};

// ---- constant folding ---------------------------------------------------------------------

TEST_F(SimplifyTest, FoldsIntegerBinOps) {
  Analyzer an;
  auto fold = [&](BinOp op, int64_t a, int64_t b) { return ConstOf(an.Simplify(Bin(op, I(a), I(b)))); };
  EXPECT_EQ(fold(BinOp::kAdd, 3, 4), 7);
  EXPECT_EQ(fold(BinOp::kSub, 3, 4), -1);
  EXPECT_EQ(fold(BinOp::kMul, -3, 4), -12);
  EXPECT_EQ(fold(BinOp::kDiv, -7, 2), -3);  // C truncation
  EXPECT_EQ(fold(BinOp::kMod, -7, 2), -1);
  EXPECT_EQ(fold(BinOp::kMin, -7, 2), -7);
  EXPECT_EQ(fold(BinOp::kMax, -7, 2), 2);
  EXPECT_EQ(fold(BinOp::kEQ, 2, 2), 1);
  EXPECT_EQ(fold(BinOp::kNE, 2, 2), 0);
  EXPECT_EQ(fold(BinOp::kLT, 1, 2), 1);
  EXPECT_EQ(fold(BinOp::kLE, 3, 2), 0);
  EXPECT_EQ(fold(BinOp::kGT, 3, 2), 1);
  EXPECT_EQ(fold(BinOp::kGE, 2, 3), 0);
  EXPECT_EQ(fold(BinOp::kBitAnd, 12, 10), 8);
  EXPECT_EQ(fold(BinOp::kBitOr, 12, 10), 14);
  EXPECT_EQ(fold(BinOp::kBitXor, 12, 10), 6);
  EXPECT_EQ(fold(BinOp::kShl, 3, 4), 48);
  EXPECT_EQ(fold(BinOp::kShr, -16, 2), -4);
  EXPECT_EQ(an.Simplify(Bin(BinOp::kAnd, MakeBool(true), MakeBool(false)))->dtype, DType::Bool());
  EXPECT_EQ(ConstOf(an.Simplify(Bin(BinOp::kAnd, MakeBool(true), MakeBool(false)))), 0);
  EXPECT_EQ(ConstOf(an.Simplify(Bin(BinOp::kOr, MakeBool(true), MakeBool(false)))), 1);
}

TEST_F(SimplifyTest, RefusesUndefinedFolds) {
  // Division by zero and signed overflow are left for the target to report.
  EXPECT_EQ(S(Bin(BinOp::kFloorDiv, I(1), I(0))), "1 // 0");
  Expr big = Add(I(INT32_MAX), I(1));
  EXPECT_FALSE(As<IntImm>(Analyzer().Simplify(big)));
  EXPECT_EQ(ConstOf(Analyzer().Simplify(Add(I(INT32_MAX, DType::Int(64)), I(1, DType::Int(64))))),
            int64_t{INT32_MAX} + 1);
  EXPECT_FALSE(As<IntImm>(Analyzer().Simplify(Bin(BinOp::kShl, I(1), I(40)))));
}

TEST_F(SimplifyTest, FloorDivModMatchPythonForNegatives) {
  Analyzer an;
  for (int64_t a = -25; a <= 25; ++a) {
    for (int64_t b = -7; b <= 7; ++b) {
      if (b == 0) continue;
      const int64_t q = static_cast<int64_t>(std::floor(static_cast<double>(a) / b));
      const int64_t r = a - q * b;  // Python: sign of the divisor
      EXPECT_EQ(ConstOf(an.Simplify(FDiv(I(a), I(b)))), q) << a << " // " << b;
      EXPECT_EQ(ConstOf(an.Simplify(FMod(I(a), I(b)))), r) << a << " % " << b;
      EXPECT_EQ(ConstOf(an.Simplify(Bin(BinOp::kDiv, I(a), I(b)))), a / b);
      EXPECT_EQ(ConstOf(an.Simplify(Bin(BinOp::kMod, I(a), I(b)))), a % b);
    }
  }
  EXPECT_EQ(S(FDiv(I(-7), I(2))), "-4");
  EXPECT_EQ(S(FMod(I(-7), I(2))), "1");
  EXPECT_EQ(S(FMod(I(7), I(-2))), "-1");
}

TEST_F(SimplifyTest, FoldsSelectNotAndCasts) {
  EXPECT_EQ(S(Select::Make(MakeBool(true), x, y)), "x");
  EXPECT_EQ(S(Select::Make(Lt(I(3), I(2)), x, y)), "y");
  EXPECT_EQ(S(Select::Make(Lt(x, y), z, z)), "z");
  EXPECT_EQ(ConstOf(Analyzer().Simplify(Not::Make(MakeBool(false)))), 1);
  EXPECT_EQ(S(Not::Make(Not::Make(Lt(x, y)))), "x < y");
  EXPECT_EQ(S(Not::Make(Lt(x, y))), "x >= y");
  EXPECT_EQ(ConstOf(Analyzer().Simplify(Cast::Make(DType::Int(64), I(-5)))), -5);
  EXPECT_EQ(ConstOf(Analyzer().Simplify(Cast::Make(DType::Int(8), I(300)))), 44);  // wraps
  EXPECT_EQ(ConstOf(Analyzer().Simplify(Cast::Make(kI32, F(-2.75)))), -2);  // truncates
  auto* f = As<FloatImm>(Analyzer().Simplify(Cast::Make(DType::Float(32), I(3))));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->value, 3.0);
  // Out-of-range float -> int is undefined: not folded.
  EXPECT_FALSE(As<IntImm>(Analyzer().Simplify(Cast::Make(kI32, F(1e20)))));
  // int32 -> int64 -> int32 is the identity.
  EXPECT_EQ(S(Cast::Make(kI32, Cast::Make(DType::Int(64), x))), "x");
}

TEST_F(SimplifyTest, FoldsFloatsOnlyWhenExact) {
  auto* f = As<FloatImm>(Analyzer().Simplify(Add(F(1.5), F(2.25))));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->value, 3.75);
  // float32 rounding matches single precision arithmetic.
  float a = 0.1f, b = 0.2f;
  auto* g = As<FloatImm>(Analyzer().Simplify(Add(F(a), F(b))));
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->value, static_cast<double>(a + b));
  // No reassociation and no x + 0.0 -> x (-0.0 + 0.0 is +0.0).
  VarRef v = Var::Make("v", DType::Float(32));
  EXPECT_EQ(S(Add(Add(v, F(1.0)), F(2.0))), "v + 1.0 + 2.0");
  EXPECT_EQ(S(Add(v, F(0.0))), "v + 0.0");
  EXPECT_EQ(S(Mul(v, F(0.0))), "v * 0.0");
  // Half precision: 1/3 is not representable, so it is not folded.
  const DType f16 = DType::Float(16);
  EXPECT_FALSE(As<FloatImm>(Analyzer().Simplify(Bin(BinOp::kDiv, F(1, f16), F(3, f16)))));
  EXPECT_TRUE(As<FloatImm>(Analyzer().Simplify(Add(F(1, f16), F(0.5, f16)))));
}

// ---- canonical sums -----------------------------------------------------------------------

TEST_F(SimplifyTest, CanonicalSums) {
  EXPECT_EQ(S(Add(Add(Mul(x, I(4)), I(2)), Mul(x, I(4)))), "x * 8 + 2");
  EXPECT_EQ(S(Add(x, I(0))), "x");
  EXPECT_EQ(S(Mul(x, I(1))), "x");
  EXPECT_EQ(S(Mul(I(1), x)), "x");
  EXPECT_EQ(S(Mul(x, I(0))), "0");
  EXPECT_EQ(S(Sub(x, x)), "0");
  EXPECT_EQ(S(Sub(Add(x, y), Add(y, x))), "0");
  EXPECT_EQ(S(Add(Add(y, x), y)), "y * 2 + x");        // first appearance order
  EXPECT_EQ(S(Add(Sub(I(0), x), I(5))), "5 - x");      // positive parts first
  EXPECT_EQ(S(Sub(Add(x, I(3)), Add(y, I(5)))), "x - y - 2");
  EXPECT_EQ(S(Mul(Add(x, I(2)), I(3))), "x * 3 + 6");  // constant scales a sum
  EXPECT_EQ(S(Add(Mul(I(2), Add(x, y)), Mul(Sub(y, x), I(2)))), "y * 4");
  EXPECT_EQ(S(Add(Mul(Mul(x, I(4)), y), Mul(x, Mul(y, I(2))))), "x * y * 6");
  EXPECT_EQ(S(Add(I(3), I(4))), "7");
  // Int64 arithmetic is canonicalised the same way.
  VarRef w = Var::Make("w", DType::Int(64));
  EXPECT_EQ(S(Sub(Add(w, I(7, DType::Int(64))), w)), "T.int64(7)");
}

TEST_F(SimplifyTest, SimplifyIsIdempotent) {
  std::vector<Expr> cases = {
      Add(Add(Mul(x, I(4)), I(2)), Mul(y, I(-4))),
      Sub(I(3), Mul(x, I(2))),
      FDiv(Add(Mul(x, I(8)), y), I(8)),
      FMod(Add(Mul(x, I(4)), I(6)), I(8)),
      Bin(BinOp::kMin, Add(x, I(1)), y),
  };
  for (const Expr& e : cases) {
    Analyzer an;
    Expr once = an.Simplify(e);
    Expr twice = an.Simplify(once);
    EXPECT_TRUE(StructuralEqual(once, twice)) << ToString(once) << " vs " << ToString(twice);
  }
}

// ---- division and modulo ------------------------------------------------------------------

TEST_F(SimplifyTest, FloorDivModByConstants) {
  Analyzer an;
  an.BindRange(y.get(), I(0), I(8));
  EXPECT_EQ(S(an, FDiv(Add(Mul(x, I(8)), y), I(8))), "x");
  EXPECT_EQ(S(an, FMod(Add(Mul(x, I(8)), y), I(8))), "y");
  EXPECT_EQ(S(an, FDiv(y, I(8))), "0");
  EXPECT_EQ(S(an, FMod(y, I(8))), "y");
  EXPECT_EQ(S(an, FMod(Mul(x, I(8)), I(8))), "0");
  EXPECT_EQ(S(an, FDiv(Mul(x, I(8)), I(8))), "x");
  EXPECT_EQ(S(an, FDiv(Add(y, I(8)), I(8))), "1");
  EXPECT_EQ(S(an, FMod(Add(y, I(16)), I(8))), "y");
  // Without a bound on the remainder only the exact part moves out.
  EXPECT_EQ(S(FDiv(Add(Mul(x, I(8)), z), I(8))), "x + z // 8");
  EXPECT_EQ(S(FMod(Add(Mul(x, I(8)), z), I(8))), "z % 8");
  EXPECT_EQ(S(FDiv(FDiv(x, I(4)), I(8))), "x // 32");
  EXPECT_EQ(S(FMod(FMod(x, I(8)), I(4))), "x % 4");
  EXPECT_EQ(S(FDiv(Mul(x, I(4)), I(8))), "x // 2");
  EXPECT_EQ(S(FMod(Mul(x, I(4)), I(8))), "x % 2 * 4");
  EXPECT_EQ(S(FDiv(x, I(1))), "x");
  EXPECT_EQ(S(FMod(x, I(1))), "0");
  // A negative divisor is left alone (beyond constant folding).
  EXPECT_EQ(S(FDiv(x, I(-4))), "x // -4");
  // y in [8, 16): y // 8 == 1, y % 8 == y - 8.
  Analyzer an2;
  an2.BindRange(y.get(), I(8), I(8));
  EXPECT_EQ(S(an2, FDiv(y, I(8))), "1");
  EXPECT_EQ(S(an2, FMod(y, I(8))), "y - 8");
  // Negative ranges follow floor semantics: y in [-8, 0) gives y // 8 == -1.
  Analyzer an3;
  an3.BindRange(y.get(), I(-8), I(8));
  EXPECT_EQ(S(an3, FDiv(y, I(8))), "-1");
  EXPECT_EQ(S(an3, FMod(y, I(8))), "y + 8");
}

TEST_F(SimplifyTest, DivModSplitAtARowOfTheDivisor) {
  // (x*64 + y) // 128 and % 128 with y in [0, 64): a loop stepping rows of 64 over rows of 128.
  Analyzer an;
  an.BindRange(y.get(), I(0), I(64));
  EXPECT_EQ(S(an, FDiv(Add(Mul(x, I(64)), y), I(128))), "x // 2");
  EXPECT_EQ(S(an, FMod(Add(Mul(x, I(64)), y), I(128))), "x % 2 * 64 + y");
  // With a constant inside the row, and with z stepping half rows (z*32 + y is not in [0, 64)).
  Analyzer an2;
  an2.BindRange(y.get(), I(0), I(32));
  EXPECT_EQ(S(an2, FDiv(Add(Add(Mul(x, I(64)), y), I(16)), I(256))), "x // 4");
  EXPECT_EQ(S(an2, FMod(Add(Add(Mul(x, I(64)), y), I(16)), I(256))), "x % 4 * 64 + y + 16");
  EXPECT_EQ(S(an2, FDiv(Add(Add(Mul(x, I(64)), y), I(40)), I(256))), "(x * 64 + y + 40) // 256");
  // Checked by brute force over a range of x (negative too) for both rules.
  for (int64_t xv = -9; xv <= 9; ++xv) {
    for (int64_t yv = 0; yv < 32; ++yv) {
      Analyzer at;
      at.BindRange(x.get(), I(xv), I(1));
      at.BindRange(y.get(), I(yv), I(1));
      int64_t n = xv * 64 + yv + 16;
      auto floordiv = [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
      Expr d = an2.Simplify(FDiv(Add(Add(Mul(x, I(64)), y), I(16)), I(256)));
      Expr m = an2.Simplify(FMod(Add(Add(Mul(x, I(64)), y), I(16)), I(256)));
      IntBound bd = at.Bound(d), bm = at.Bound(m);  // x and y pinned: the bounds are the values
      ASSERT_TRUE(bd.IsConst() && bm.IsConst()) << ToString(d) << " " << ToString(m);
      EXPECT_EQ(*bd.min, floordiv(n, 256)) << xv << " " << yv;
      EXPECT_EQ(*bm.min, n - floordiv(n, 256) * 256) << xv << " " << yv;
    }
  }
}

TEST_F(SimplifyTest, NarrowingAWidenedSumComputesItNarrow) {
  // int32(int64(x) * 16 + int64(y)): what a T.reshape's flat index leaves, in int32 when
  // every value on the way fits.
  const DType i64 = DType::Int(64);
  auto wide = [&](Expr e) { return Cast::Make(i64, e); };
  Expr sum = Add(Mul(wide(x), I(16, i64)), wide(y));
  Analyzer an;
  an.BindRange(x.get(), I(0), I(4));
  an.BindRange(y.get(), I(0), I(16));
  EXPECT_EQ(S(an, Cast::Make(kI32, sum)), "x * 16 + y");
  // Unbounded x: x * 16 may leave int32, so the cast stays.
  Analyzer an2;
  an2.BindRange(y.get(), I(0), I(16));
  EXPECT_NE(S(an2, Cast::Make(kI32, sum)).find("int64"), std::string::npos);
}

TEST_F(SimplifyTest, DivModPairsFoldBackIntoTheirNumerator) {
  // Flattening B[i // 128, i % 128] (row stride 128) gives back i, for any i.
  Expr i = Add(Mul(x, I(2048)), Add(Mul(y, I(8)), I(3)));
  EXPECT_EQ(S(Add(Mul(FDiv(i, I(128)), I(128)), FMod(i, I(128)))), "x * 2048 + y * 8 + 3");
  // Scaled: y // 16 * 128 + y % 16 * 8 == y * 8 (what (y * 8) // 128 * 128 + (y * 8) % 128 splits into).
  EXPECT_EQ(S(Add(Mul(FDiv(y, I(16)), I(128)), Mul(FMod(y, I(16)), I(8)))), "y * 8");
  EXPECT_EQ(S(Add(Mul(FDiv(Mul(y, I(8)), I(128)), I(128)), FMod(Mul(y, I(8)), I(128)))), "y * 8");
  // Mismatched coefficients or numerators stay as they are.
  EXPECT_EQ(S(Add(Mul(FDiv(y, I(16)), I(64)), Mul(FMod(y, I(16)), I(8)))), "y // 16 * 64 + y % 16 * 8");
  EXPECT_EQ(S(Add(Mul(FDiv(y, I(16)), I(16)), FMod(z, I(16)))), "y // 16 * 16 + z % 16");
}

TEST_F(SimplifyTest, TruncDivModUseBounds) {
  Analyzer an;
  an.BindRange(x.get(), I(0), I(4));
  EXPECT_EQ(S(an, Bin(BinOp::kDiv, x, I(4))), "0");
  EXPECT_EQ(S(an, Bin(BinOp::kMod, x, I(4))), "x");
  EXPECT_EQ(S(Bin(BinOp::kDiv, y, I(1))), "y");
  EXPECT_EQ(S(Bin(BinOp::kDiv, y, I(4))), "T.truncdiv(y, 4)");
}

// ---- min / max / comparisons / logic ------------------------------------------------------

TEST_F(SimplifyTest, MinMax) {
  EXPECT_EQ(S(Bin(BinOp::kMin, x, Add(x, I(1)))), "x");
  EXPECT_EQ(S(Bin(BinOp::kMax, x, Add(x, I(1)))), "x + 1");
  EXPECT_EQ(S(Bin(BinOp::kMin, x, x)), "x");
  EXPECT_EQ(S(Bin(BinOp::kMin, Bin(BinOp::kMin, x, I(4)), I(2))), "T.min(x, 2)");
  EXPECT_EQ(S(Bin(BinOp::kMax, I(2), x)), "T.max(x, 2)");
  Analyzer an;
  an.BindRange(x.get(), I(0), I(8));
  EXPECT_EQ(S(an, Bin(BinOp::kMin, x, I(16))), "x");
  EXPECT_EQ(S(an, Bin(BinOp::kMax, x, I(16))), "16");
  EXPECT_EQ(S(an, Bin(BinOp::kMin, x, I(4))), "T.min(x, 4)");
}

TEST_F(SimplifyTest, ComparisonsFromBounds) {
  EXPECT_EQ(S(Lt(x, Add(x, I(1)))), "True");
  Analyzer an;
  an.BindRange(x.get(), I(0), I(16));
  an.BindRange(y.get(), I(0), I(4));
  EXPECT_TRUE(an.CanProve(Lt(x, I(16))));
  EXPECT_TRUE(an.CanProve(Lt(Add(Mul(y, I(4)), FMod(x, I(4))), I(16))));
  EXPECT_TRUE(an.CanProve(Bin(BinOp::kGE, x, I(0))));
  EXPECT_FALSE(an.CanProve(Lt(x, I(8))));
  EXPECT_EQ(ConstOf(an.Simplify(Bin(BinOp::kGE, x, I(16)))), 0);
  EXPECT_EQ(ConstOf(an.Simplify(Bin(BinOp::kEQ, x, I(-1)))), 0);
  EXPECT_EQ(ConstOf(an.Simplify(Bin(BinOp::kNE, x, I(20)))), 1);
  EXPECT_EQ(S(an, Lt(x, I(8))), "x < 8");
  EXPECT_EQ(ConstOf(an.Simplify(Bin(BinOp::kEQ, Add(x, y), Add(y, x)))), 1);
  EXPECT_FALSE(an.CanProve(Lt(z, I(100))));  // unbound variable
}

TEST_F(SimplifyTest, LogicWithProvableSides) {
  Analyzer an;
  an.BindRange(x.get(), I(0), I(16));
  EXPECT_EQ(S(an, Bin(BinOp::kAnd, Lt(x, I(16)), Lt(y, z))), "y < z");
  EXPECT_EQ(S(an, Bin(BinOp::kAnd, Lt(y, z), Lt(x, I(0)))), "False");
  EXPECT_EQ(S(an, Bin(BinOp::kOr, Lt(x, I(0)), Lt(y, z))), "y < z");
  EXPECT_EQ(S(an, Bin(BinOp::kOr, Lt(y, z), Lt(x, I(16)))), "True");
  EXPECT_EQ(S(an, Bin(BinOp::kAnd, Lt(y, z), Lt(y, z))), "y < z");
}

// ---- bounds -------------------------------------------------------------------------------

TEST_F(SimplifyTest, ArithBound) {
  Analyzer an;
  an.BindRange(x.get(), I(0), I(16));
  an.BindRange(y.get(), I(-4), I(8));  // [-4, 4)
  auto check = [&](const Expr& e, std::optional<int64_t> lo, std::optional<int64_t> hi) {
    IntBound b = an.Bound(e);
    EXPECT_EQ(b.min, lo) << ToString(e);
    EXPECT_EQ(b.max, hi) << ToString(e);
  };
  check(x, 0, 15);
  check(Add(x, y), -4, 18);
  check(Sub(x, y), -3, 19);
  check(Mul(x, y), -60, 45);
  check(FDiv(x, I(4)), 0, 3);
  check(FDiv(y, I(4)), -1, 0);
  check(FMod(y, I(16)), 0, 15);
  check(FMod(x, I(32)), 0, 15);
  check(Bin(BinOp::kMin, x, y), -4, 3);
  check(Bin(BinOp::kMax, x, y), 0, 15);
  check(Cast::Make(DType::Int(64), x), 0, 15);
  check(z, std::nullopt, std::nullopt);
  check(Add(z, I(1)), std::nullopt, std::nullopt);
  check(FMod(z, I(8)), 0, 7);
  check(Sub(x, x), 0, 0);  // Bound simplifies first
  // Symbolic loop bounds: k in [n*4, n*4 + 4) with n in [0, 3).
  VarRef n = Var::Make("n"), k = Var::Make("k");
  an.BindRange(n.get(), I(0), I(3));
  an.BindRange(k.get(), Mul(n, I(4)), I(4));
  check(k, 0, 11);
  an.Unbind(x.get());
  check(x, std::nullopt, std::nullopt);
}

// ---- statements ---------------------------------------------------------------------------

class SimplifyStmtTest : public ::testing::Test {
 protected:
  Buffer a = BufferNode::Make("A", DType::Float(32), {I(64)}, Scope::kGlobal);
  Buffer b = BufferNode::Make("B", DType::Float(32), {I(8), I(8)}, Scope::kGlobal);
  VarRef i = Var::Make("i"), j = Var::Make("j");
  Stmt Store(Expr idx) { return BufferStore::Make(a, {std::move(idx)}, F(1.0)); }
};

TEST_F(SimplifyStmtTest, RemovesProvableGuards) {
  // for i in 0..16: if i < 16: A[i] = 1 ; if i >= 16: A[0] = 1
  Stmt body = Seq::Make({IfThenElse::Make(Lt(i, I(16)), Store(i)),
                         IfThenElse::Make(Bin(BinOp::kGE, i, I(16)), Store(I(0)), Store(I(1)))});
  Stmt loop = For::Make(i, I(0), I(16), ForKind::kSerial, body);
  Stmt expected = For::Make(i, I(0), I(16), ForKind::kSerial, Seq::Make({Store(i), Store(I(1))}));
  Stmt got = tl::arith::Simplify(loop);
  EXPECT_TRUE(StructuralEqual(got, expected)) << ToString(got);
  // An unprovable guard stays.
  Stmt loop2 = For::Make(i, I(0), I(16), ForKind::kSerial, IfThenElse::Make(Lt(i, I(8)), Store(i)));
  EXPECT_EQ(tl::arith::Simplify(loop2), loop2);  // unchanged node is returned as is
}

TEST_F(SimplifyStmtTest, DropsATestRepeatedInsideItsOwnBranch) {
  // for i in 0..64: if i < j: if i < j: A[i] = 1  ->  if i < j: A[i] = 1
  Stmt twice = IfThenElse::Make(Lt(i, j), IfThenElse::Make(Lt(i, j), Store(i)));
  Stmt got = tl::arith::Simplify(For::Make(i, I(0), I(64), ForKind::kSerial, twice));
  Stmt want = For::Make(i, I(0), I(64), ForKind::kSerial, IfThenElse::Make(Lt(i, j), Store(i)));
  EXPECT_TRUE(StructuralEqual(got, want)) << ToString(got);
  // a part of an `and` holds too; the else branch knows nothing
  Stmt both = IfThenElse::Make(Bin(BinOp::kAnd, Lt(i, j), Lt(j, I(9))), IfThenElse::Make(Lt(j, I(9)), Store(i)),
                               IfThenElse::Make(Lt(i, j), Store(I(0))));
  got = tl::arith::Simplify(For::Make(i, I(0), I(64), ForKind::kSerial, both));
  want = For::Make(i, I(0), I(64), ForKind::kSerial,
                   IfThenElse::Make(Bin(BinOp::kAnd, Lt(i, j), Lt(j, I(9))), Store(i),
                                    IfThenElse::Make(Lt(i, j), Store(I(0)))));
  EXPECT_TRUE(StructuralEqual(got, want)) << ToString(got);
  // a test that reads memory may change in between: kept
  Expr reads = Lt(BufferLoad::Make(b, {I(0), I(0)}), F(0.5));
  Stmt mem = IfThenElse::Make(reads, Seq::Make({Store(I(3)), IfThenElse::Make(reads, Store(i))}));
  Stmt loop = For::Make(i, I(0), I(64), ForKind::kSerial, mem);
  EXPECT_EQ(tl::arith::Simplify(loop), loop);
  // an inner loop binding the same variable again shadows what was known of it
  Stmt shadow = IfThenElse::Make(Lt(i, j), For::Make(i, I(0), I(64), ForKind::kSerial,
                                                    IfThenElse::Make(Lt(i, j), Store(i))));
  Stmt outer = For::Make(i, I(0), I(64), ForKind::kSerial, shadow);
  EXPECT_EQ(tl::arith::Simplify(outer), outer);
}

TEST_F(SimplifyStmtTest, BranchesNarrowTheRangeOfTheVariableTheyTest) {
  // for i in 0..96: if i < 32: A[i] = 1 else: (t = i - 32; if t // 512 >= 0: A[t] = 1)
  // The else branch knows i >= 32, so t >= 0 and the guard holds.
  VarRef t = Var::Make("t");
  Stmt guarded = IfThenElse::Make(Bin(BinOp::kGE, FDiv(t, I(512)), I(0)), Store(t));
  Stmt branch = IfThenElse::Make(Lt(i, I(32)), Store(i), Seq::Make({LetStmt::Make(t, Sub(i, I(32))), guarded}));
  Stmt got = tl::arith::Simplify(For::Make(i, I(0), I(96), ForKind::kSerial, branch));
  Stmt want = For::Make(i, I(0), I(96), ForKind::kSerial,
                        IfThenElse::Make(Lt(i, I(32)), Store(i), Seq::Make({LetStmt::Make(t, Sub(i, I(32))), Store(t)})));
  EXPECT_TRUE(StructuralEqual(got, want)) << ToString(got);
  // In the then branch i < 32: a test of i < 40 holds there, i < 16 does not.
  Stmt then_tests = IfThenElse::Make(Lt(i, I(32)), Seq::Make({IfThenElse::Make(Lt(i, I(40)), Store(i)),
                                                             IfThenElse::Make(Lt(i, I(16)), Store(I(0)))}));
  got = tl::arith::Simplify(For::Make(i, I(0), I(96), ForKind::kSerial, then_tests));
  want = For::Make(i, I(0), I(96), ForKind::kSerial,
                   IfThenElse::Make(Lt(i, I(32)), Seq::Make({Store(i), IfThenElse::Make(Lt(i, I(16)), Store(I(0)))})));
  EXPECT_TRUE(StructuralEqual(got, want)) << ToString(got);
  // After the if, nothing narrowed remains: i < 32 is unknown again.
  Stmt after = Seq::Make({IfThenElse::Make(Lt(i, I(32)), Store(i)), IfThenElse::Make(Lt(i, I(40)), Store(I(1)))});
  Stmt loop = For::Make(i, I(0), I(96), ForKind::kSerial, after);
  EXPECT_EQ(tl::arith::Simplify(loop), loop);
  // An `and` narrows where it holds, not where it fails.
  Stmt conj = IfThenElse::Make(Bin(BinOp::kAnd, Bin(BinOp::kGE, i, I(8)), Lt(i, I(16))), Store(i),
                               IfThenElse::Make(Lt(i, I(16)), Store(I(2))));
  Stmt conj_loop = For::Make(i, I(0), I(96), ForKind::kSerial, conj);
  EXPECT_EQ(tl::arith::Simplify(conj_loop), conj_loop);
}

TEST_F(SimplifyStmtTest, AGuardOnTheNextStepNarrowsTheVariable) {
  // for i in 0..8: if i + 1 < 8: if i * 32 < 224: A[i] = 1   (a pipeline's next-step load
  // under its step guard, with the tile's edge test): i < 7 holds inside, so i * 32 < 224 does
  Stmt edge = IfThenElse::Make(Lt(Mul(i, I(32)), I(224)), Store(i));
  Stmt next_step = IfThenElse::Make(Lt(Add(i, I(1)), I(8)), edge);
  Stmt got = tl::arith::Simplify(For::Make(i, I(0), I(8), ForKind::kSerial, next_step));
  Stmt want = For::Make(i, I(0), I(8), ForKind::kSerial, IfThenElse::Make(Lt(Add(i, I(1)), I(8)), Store(i)));
  EXPECT_TRUE(StructuralEqual(got, want)) << ToString(got);
  // i - 2 >= 3 narrows to i >= 5 where it holds; i < 5 where it does not
  Stmt sub = IfThenElse::Make(Bin(BinOp::kGE, Sub(i, I(2)), I(3)),
                              IfThenElse::Make(Bin(BinOp::kGE, i, I(5)), Store(i)),
                              IfThenElse::Make(Lt(i, I(5)), Store(I(0))));
  got = tl::arith::Simplify(For::Make(i, I(0), I(8), ForKind::kSerial, sub));
  want = For::Make(i, I(0), I(8), ForKind::kSerial,
                   IfThenElse::Make(Bin(BinOp::kGE, Sub(i, I(2)), I(3)), Store(i), Store(I(0))));
  EXPECT_TRUE(StructuralEqual(got, want)) << ToString(got);
}

TEST_F(SimplifyStmtTest, SimplifiesIndicesUnderLoopRanges) {
  // for i in 0..8: for j in 0..8: A[(i*8 + j) // 8 * 8 + (i*8 + j) % 8] = 1
  Expr flat = Add(Mul(i, I(8)), j);
  Stmt inner = For::Make(j, I(0), I(8), ForKind::kParallel,
                         Store(Add(Mul(FDiv(flat, I(8)), I(8)), FMod(flat, I(8)))));
  Stmt loop = For::Make(i, I(0), I(8), ForKind::kSerial, inner);
  Stmt got = tl::arith::Simplify(loop);
  Stmt expected = For::Make(
      i, I(0), I(8), ForKind::kSerial,
      For::Make(j, I(0), I(8), ForKind::kParallel, Store(Add(Mul(i, I(8)), j))));
  EXPECT_TRUE(StructuralEqual(got, expected)) << ToString(got);
}

TEST_F(SimplifyStmtTest, LoopsOfExtentZeroAndOne) {
  Stmt zero = For::Make(i, I(0), Sub(I(4), I(4)), ForKind::kSerial, Store(i));
  auto* seq = As<Seq>(tl::arith::Simplify(zero));
  ASSERT_NE(seq, nullptr);
  EXPECT_TRUE(seq->stmts.empty());
  // Extent 1: the body with i := min.
  Stmt one = For::Make(i, I(5), I(1), ForKind::kSerial, Store(Add(i, I(1))));
  EXPECT_TRUE(StructuralEqual(tl::arith::Simplify(one), Store(I(6))));
  // Pipelined loops keep their structure, and so do T.Parallel loops (a tile dimension
  // that layout inference matches fragment indices against).
  Stmt piped = For::Make(i, I(0), I(1), ForKind::kPipelined, Store(i));
  EXPECT_EQ(tl::arith::Simplify(piped)->kind, NodeKind::kFor);
  Stmt parallel = For::Make(i, I(0), I(1), ForKind::kParallel, Store(i));
  EXPECT_EQ(tl::arith::Simplify(parallel)->kind, NodeKind::kFor);
  // Unrolled / vectorized also collapse.
  Stmt unrolled = For::Make(i, I(0), I(1), ForKind::kUnrolled, Store(i));
  EXPECT_TRUE(StructuralEqual(tl::arith::Simplify(unrolled), Store(I(0))));
}

TEST_F(SimplifyStmtTest, KernelBlockVarsAndRegions) {
  VarRef bx = Var::Make("bx");
  Buffer s = BufferNode::Make("S", DType::Float(32), {I(8)}, Scope::kShared);
  // with T.Kernel(8) as bx: if bx < 8: T.copy(A[bx*8 + 0 : +8], S)
  Region src{a, {{Add(Mul(bx, I(8)), Sub(I(3), I(3))), Add(I(4), I(4))}}};
  Stmt copy = CopyOp::Make(src, Region::Full(s));
  Stmt body = Seq::Make({Allocate::Make(s), IfThenElse::Make(Lt(bx, I(8)), copy)});
  Stmt kernel = KernelLaunch::Make({I(8)}, {bx}, {128}, body);
  Stmt got = tl::arith::Simplify(kernel);
  Region src2{a, {{Mul(bx, I(8)), I(8)}}};
  Stmt expected = KernelLaunch::Make(
      {I(8)}, {bx}, {128}, Seq::Make({Allocate::Make(s), CopyOp::Make(src2, Region::Full(s))}));
  EXPECT_TRUE(StructuralEqual(got, expected)) << ToString(got);
}

TEST_F(SimplifyStmtTest, LetBoundsAndElseBranches) {
  // for i in 0..16: t = i % 4; if t < 4: A[t] = 1 else: A[0] = 1
  VarRef t = Var::Make("t");
  Stmt body = Seq::Make({LetStmt::Make(t, FMod(i, I(4))),
                         IfThenElse::Make(Lt(t, I(4)), Store(t), Store(I(0)))});
  Stmt got = tl::arith::Simplify(For::Make(i, I(0), I(16), ForKind::kSerial, body));
  Stmt expected = For::Make(i, I(0), I(16), ForKind::kSerial,
                            Seq::Make({LetStmt::Make(t, FMod(i, I(4))), Store(t)}));
  EXPECT_TRUE(StructuralEqual(got, expected)) << ToString(got);
  // A false condition keeps the else branch.
  Stmt if2 = For::Make(i, I(0), I(16), ForKind::kSerial,
                       IfThenElse::Make(Lt(i, I(0)), Store(i), Store(I(2))));
  EXPECT_TRUE(StructuralEqual(tl::arith::Simplify(if2),
                              For::Make(i, I(0), I(16), ForKind::kSerial, Store(I(2)))));
}

// ---- property test: Simplify preserves values -----------------------------------------------

/// Evaluates an integer expression; nullopt where it is undefined (division by zero).
std::optional<int64_t> Eval(const Expr& e, const std::unordered_map<const Var*, int64_t>& env) {
  if (auto* imm = As<IntImm>(e)) return imm->value;
  if (auto* v = As<Var>(e)) return env.at(v);
  if (auto* s = As<Select>(e)) {
    auto c = Eval(s->cond, env);
    if (!c) return std::nullopt;
    return *c ? Eval(s->t, env) : Eval(s->f, env);
  }
  if (auto* n = As<Not>(e)) {
    auto a = Eval(n->a, env);
    if (!a) return std::nullopt;
    return *a == 0;
  }
  auto* bin = As<Binary>(e);
  if (!bin) ADD_FAILURE() << "cannot evaluate " << ToString(e);
  if (!bin) return std::nullopt;
  auto a = Eval(bin->a, env), b = Eval(bin->b, env);
  if (!a || !b) return std::nullopt;
  const int64_t x = *a, y = *b;
  switch (bin->op) {
    case BinOp::kAdd: return x + y;
    case BinOp::kSub: return x - y;
    case BinOp::kMul: return x * y;
    case BinOp::kFloorDiv:
      if (y == 0) return std::nullopt;
      return static_cast<int64_t>(std::floor(static_cast<double>(x) / static_cast<double>(y)));
    case BinOp::kFloorMod: {
      if (y == 0) return std::nullopt;
      int64_t q = static_cast<int64_t>(std::floor(static_cast<double>(x) / static_cast<double>(y)));
      return x - q * y;
    }
    case BinOp::kDiv: if (y == 0) return std::nullopt; return x / y;
    case BinOp::kMod: if (y == 0) return std::nullopt; return x % y;
    case BinOp::kMin: return std::min(x, y);
    case BinOp::kMax: return std::max(x, y);
    case BinOp::kEQ: return x == y;
    case BinOp::kNE: return x != y;
    case BinOp::kLT: return x < y;
    case BinOp::kLE: return x <= y;
    case BinOp::kGT: return x > y;
    case BinOp::kGE: return x >= y;
    case BinOp::kAnd: return x && y;
    case BinOp::kOr: return x || y;
    default: ADD_FAILURE() << "unexpected op"; return std::nullopt;
  }
}

class RandomExprGen {
 public:
  RandomExprGen(std::mt19937* rng, std::vector<VarRef> vars) : rng_(rng), vars_(std::move(vars)) {}

  Expr Int(int depth) {
    int pick = Pick(depth <= 0 ? 2 : 12);
    switch (pick) {
      case 0: return IntImm::Make(kI32, Pick(17) - 8);
      case 1: return vars_[Pick(static_cast<int>(vars_.size()))];
      case 2: return Add(Int(depth - 1), Int(depth - 1));
      case 3: return Sub(Int(depth - 1), Int(depth - 1));
      case 4: return Mul(Int(depth - 1), Pick(2) ? IntImm::Make(kI32, Pick(9) - 4) : Int(depth - 1));
      case 5: return FDiv(Int(depth - 1), Divisor(depth));
      case 6: return FMod(Int(depth - 1), Divisor(depth));
      case 7: return Bin(BinOp::kMin, Int(depth - 1), Int(depth - 1));
      case 8: return Bin(BinOp::kMax, Int(depth - 1), Int(depth - 1));
      case 9: return Select::Make(Bool(depth - 1), Int(depth - 1), Int(depth - 1));
      case 10: return Bin(Pick(2) ? BinOp::kDiv : BinOp::kMod, Int(depth - 1), Divisor(depth));
      default: return Add(Mul(Int(depth - 1), IntImm::Make(kI32, 8)), Int(depth - 1));
    }
  }

  Expr Bool(int depth) {
    static const BinOp kCmp[] = {BinOp::kEQ, BinOp::kNE, BinOp::kLT, BinOp::kLE, BinOp::kGT, BinOp::kGE};
    int pick = Pick(depth <= 0 ? 1 : 4);
    if (pick == 1) return Binary::Make(BinOp::kAnd, Bool(depth - 1), Bool(depth - 1));
    if (pick == 2) return Binary::Make(BinOp::kOr, Bool(depth - 1), Bool(depth - 1));
    if (pick == 3) return Not::Make(Bool(depth - 1));
    return Binary::Make(kCmp[Pick(6)], Int(depth - 1), Int(depth - 1));
  }

 private:
  Expr Divisor(int depth) {
    // Mostly constants (positive and negative), sometimes an arbitrary expression.
    if (Pick(4) == 0) return Int(depth - 1);
    static const int64_t kDivs[] = {1, 2, 3, 4, 8, 16, -1, -2, -3, -8};
    return IntImm::Make(kI32, kDivs[Pick(10)]);
  }
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(*rng_); }

  std::mt19937* rng_;
  std::vector<VarRef> vars_;
};

TEST(ArithProperty, SimplifyPreservesValues) {
  std::mt19937 rng(12345);
  VarRef x = Var::Make("x"), y = Var::Make("y"), z = Var::Make("z");
  RandomExprGen gen(&rng, {x, y, z});
  int checked = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    // Bind some variables to ranges (maybe negative) and sample points inside them.
    Analyzer an;
    int64_t lo[3], ext[3];
    const Var* vs[3] = {x.get(), y.get(), z.get()};
    for (int k = 0; k < 3; ++k) {
      lo[k] = std::uniform_int_distribution<int>(-20, 20)(rng);
      ext[k] = std::uniform_int_distribution<int>(1, 24)(rng);
      if (iter % 3 != 0 || k != 2) an.BindRange(vs[k], I(lo[k]), I(ext[k]));
    }
    const bool boolean = iter % 4 == 0;
    Expr e = boolean ? gen.Bool(4) : gen.Int(4);
    Expr s = an.Simplify(e);
    for (int sample = 0; sample < 8; ++sample) {
      std::unordered_map<const Var*, int64_t> env;
      for (int k = 0; k < 3; ++k) {
        env[vs[k]] = lo[k] + std::uniform_int_distribution<int>(0, static_cast<int>(ext[k]) - 1)(rng);
      }
      auto before = Eval(e, env);
      if (!before) continue;
      auto after = Eval(s, env);
      ASSERT_TRUE(after.has_value()) << ToString(e) << "  ->  " << ToString(s);
      ASSERT_EQ(*before, *after) << ToString(e) << "  ->  " << ToString(s) << " at x=" << env[vs[0]]
                                 << " y=" << env[vs[1]] << " z=" << env[vs[2]];
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
}

// ---- performance --------------------------------------------------------------------------

TEST(ArithPerf, LargeAndSharedExpressionsStayFast) {
  auto start = std::chrono::steady_clock::now();
  VarRef x = Var::Make("x");
  VarRef w = Var::Make("w", DType::Int(64));
  // DAGs with 2^60 paths: e = e + e, sixty times.
  Expr e = x, e64 = w;
  for (int k = 0; k < 60; ++k) {
    e = Add(e, e);
    e64 = Add(e64, e64);
  }
  Analyzer an;
  EXPECT_TRUE(StructuralEqual(an.Simplify(e64), Mul(w, I(int64_t{1} << 60, DType::Int(64)))));
  // In int32 the coefficient overflows: the sum must not be folded into a wrong constant.
  Expr s = an.Simplify(e);
  ASSERT_TRUE(As<Binary>(s));
  EXPECT_EQ(As<Binary>(s)->op, BinOp::kAdd);
  // A long sum of distinct terms and a deep floordiv/min chain.
  std::vector<VarRef> vars;
  Expr sum = I(0);
  for (int k = 0; k < 300; ++k) {
    vars.push_back(Var::Make("v" + std::to_string(k)));
    sum = Add(sum, Mul(vars.back(), I(k % 7 + 1)));
  }
  EXPECT_TRUE(StructuralEqual(an.Simplify(Sub(sum, sum)), I(0)));
  Expr deep = x;
  for (int k = 0; k < 200; ++k) deep = Bin(BinOp::kMin, FDiv(Add(deep, I(k)), I(2)), Add(deep, I(1)));
  an.Simplify(deep);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 2000.0);
}

}  // namespace

namespace tl::arith {
namespace {

TEST(ArithBound, BitwiseOfNonNegativeValuesIsNonNegative) {
  ir::VarRef x = ir::Var::Make("x");
  Analyzer an;
  an.BindBound(x.get(), IntBound{0, 100});
  ir::Expr e = ir::Binary::Make(ir::BinOp::kBitXor, x, ir::MakeInt(48));
  IntBound b = an.Bound(e);
  ASSERT_TRUE(b.min && b.max);
  EXPECT_EQ(*b.min, 0);
  EXPECT_EQ(*b.max, 127);
}

}  // namespace
}  // namespace tl::arith

namespace {

// d = m*g + r with every other term and the constant multiples of g and r in [0, g): the
// sign tests `d < 0` and `d >= 0` do not depend on r (a register walk's row test minus the
// lane's part of the row).
TEST(ArithCompare, DropsATermThatCannotCrossAMultiple) {
  VarRef l = Var::Make("l"), lane = Var::Make("lane");
  Analyzer an;
  an.BindBound(lane.get(), IntBound{0, 7});
  an.BindBound(l.get(), IntBound{0, 63});
  Expr row = Add(Add(Mul(FDiv(l, I(32)), I(16)), lane), Mul(FDiv(FMod(l, I(4)), I(2)), I(8)));
  Expr lt = an.Simplify(Lt(row, I(16)));
  EXPECT_FALSE(UsesVar(lt, [&](const Var* v) { return v == lane.get(); })) << ToString(lt);
  Expr ge = an.Simplify(Bin(BinOp::kGE, Sub(row, I(16)), I(0)));
  EXPECT_FALSE(UsesVar(ge, [&](const Var* v) { return v == lane.get(); })) << ToString(ge);
  // every (l, lane): the simplified tests agree with the originals
  for (int64_t lv = 0; lv < 64; ++lv) {
    for (int64_t tv = 0; tv < 8; ++tv) {
      auto at = [&](const Expr& e) {
        Analyzer plain;
        return ConstOf(plain.Simplify(Substitute(e, [&](const Var* v) -> Expr {
          return v == l.get() ? I(lv) : v == lane.get() ? I(tv) : nullptr;
        })));
      };
      EXPECT_EQ(at(lt), at(Lt(row, I(16)))) << lv << " " << tv;
      EXPECT_EQ(at(ge), at(Bin(BinOp::kGE, Sub(row, I(16)), I(0)))) << lv << " " << tv;
    }
  }
  // `<=` depends on the remainder (x*8 + r <= 0 holds for r = 0 only): kept
  Expr le = an.Simplify(Bin(BinOp::kLE, Add(Mul(l, I(8)), lane), I(0)));
  EXPECT_TRUE(UsesVar(le, [&](const Var* v) { return v == lane.get(); })) << ToString(le);
}

}  // namespace

namespace {

// Random sign tests `c0*x + c1*y + c2*z + k op 0` with small bounded variables: the simplified
// comparison (with a term dropped where the rule applies) agrees with the original at every
// point of the box.
TEST(ArithCompare, DroppingRemainderTermsPreservesEveryValue) {
  std::mt19937 gen(1234);
  VarRef x = Var::Make("x"), y = Var::Make("y"), z = Var::Make("z");
  const BinOp ops[] = {BinOp::kLT, BinOp::kLE, BinOp::kGT, BinOp::kGE};
  int dropped = 0;  // trials where the rule removed a variable the comparison still had
  for (int trial = 0; trial < 400; ++trial) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
    const int64_t coeff[3] = {pick(-3, 3) * 8, pick(-2, 2) * 4, pick(0, 1) ? 1 : pick(-9, 9)};
    const int64_t bound[3] = {pick(0, 5), pick(0, 3), pick(0, 9)};
    const int64_t k = pick(-40, 40);
    const BinOp op = ops[pick(0, 3)];
    Analyzer an;
    an.BindBound(x.get(), IntBound{0, bound[0]});
    an.BindBound(y.get(), IntBound{0, bound[1]});
    an.BindBound(z.get(), IntBound{0, bound[2]});
    Expr d = Add(Add(Add(Mul(x, I(coeff[0])), Mul(y, I(coeff[1]))), Mul(z, I(coeff[2]))), I(k));
    Expr original = Bin(op, d, I(0));
    Expr simplified = an.Simplify(original);
    auto uses = [&](const Expr& e, const VarRef& v) { return UsesVar(e, [&](const Var* u) { return u == v.get(); }); };
    if (coeff[2] != 0 && bound[2] > 0 && !uses(simplified, z) && (uses(simplified, x) || uses(simplified, y))) ++dropped;
    for (int64_t xv = 0; xv <= bound[0]; ++xv) {
      for (int64_t yv = 0; yv <= bound[1]; ++yv) {
        for (int64_t zv = 0; zv <= bound[2]; ++zv) {
          auto at = [&](const Expr& e) {
            Analyzer plain;
            return ConstOf(plain.Simplify(Substitute(e, [&](const Var* v) -> Expr {
              return v == x.get() ? I(xv) : v == y.get() ? I(yv) : v == z.get() ? I(zv) : nullptr;
            })));
          };
          ASSERT_EQ(at(simplified), at(original)) << ToString(original) << " -> " << ToString(simplified) << " at "
                                                  << xv << ", " << yv << ", " << zv;
        }
      }
    }
  }
  EXPECT_GT(dropped, 3);  // the rule did fire (8 of the 400 trials with this seed)
}

}  // namespace
