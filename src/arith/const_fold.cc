// SPDX-License-Identifier: Apache-2.0
/// \file Constant folding of binary operators and casts.
///
/// Folding must give exactly what the generated code would compute, so it refuses
/// whenever the target semantics are undefined (signed overflow, division by zero,
/// out-of-range float-to-int) or the floating-point result would depend on rounding
/// the host and the device might do differently (half precision arithmetic).
#include <cmath>
#include <cstring>
#include <limits>

#include "arith_internal.h"

namespace tl::arith::detail {

using ir::BinOp;
using ir::DType;
using ir::Expr;
using ir::FloatImm;
using ir::IntImm;

namespace {

Expr Bool(bool v) { return IntImm::Make(DType::Bool(), v ? 1 : 0); }

int64_t MaxOf(DType t) { return t.bits >= 64 ? INT64_MAX : (int64_t{1} << (t.bits - 1)) - 1; }

Expr FoldSigned(BinOp op, DType t, int64_t x, int64_t y) {
  int64_t r = 0;
  bool ok = true;
  switch (op) {
    case BinOp::kAdd: ok = !__builtin_add_overflow(x, y, &r); break;
    case BinOp::kSub: ok = !__builtin_sub_overflow(x, y, &r); break;
    case BinOp::kMul: ok = !__builtin_mul_overflow(x, y, &r); break;
    case BinOp::kDiv:
      ok = y != 0 && !(x == INT64_MIN && y == -1);
      if (ok) r = x / y;
      break;
    case BinOp::kMod:
      ok = y != 0;
      if (ok) r = y == -1 ? 0 : x % y;
      break;
    case BinOp::kFloorDiv:
      ok = y != 0 && !(x == INT64_MIN && y == -1);
      if (ok) r = FloorDivInt(x, y);
      break;
    case BinOp::kFloorMod:
      ok = y != 0;
      if (ok) r = FloorModInt(x, y);
      break;
    case BinOp::kMin: r = std::min(x, y); break;
    case BinOp::kMax: r = std::max(x, y); break;
    case BinOp::kEQ: return Bool(x == y);
    case BinOp::kNE: return Bool(x != y);
    case BinOp::kLT: return Bool(x < y);
    case BinOp::kLE: return Bool(x <= y);
    case BinOp::kGT: return Bool(x > y);
    case BinOp::kGE: return Bool(x >= y);
    case BinOp::kAnd: return Bool(x != 0 && y != 0);
    case BinOp::kOr: return Bool(x != 0 || y != 0);
    case BinOp::kBitAnd: r = x & y; break;
    case BinOp::kBitOr: r = x | y; break;
    case BinOp::kBitXor: r = x ^ y; break;
    case BinOp::kShl:
      // Shifting a negative value or past the width is undefined in C.
      ok = y >= 0 && y < t.bits && x >= 0 && x <= (MaxOf(t) >> y);
      if (ok) r = x << y;
      break;
    case BinOp::kShr:
      ok = y >= 0 && y < t.bits;
      if (ok) r = x >> y;
      break;
  }
  if (!ok || !FitsIn(t, r)) return nullptr;
  return Const(t, r);
}

Expr FoldUnsigned(BinOp op, DType t, int64_t sx, int64_t sy) {
  const uint64_t mask = t.bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << t.bits) - 1;
  const uint64_t x = static_cast<uint64_t>(sx) & mask, y = static_cast<uint64_t>(sy) & mask;
  // A bool only supports logic, equality and bitwise operators here.
  if (t.IsBool()) {
    switch (op) {
      case BinOp::kEQ: case BinOp::kNE: case BinOp::kAnd: case BinOp::kOr:
      case BinOp::kBitAnd: case BinOp::kBitOr: case BinOp::kBitXor:
      case BinOp::kMin: case BinOp::kMax:
        break;
      default:
        return nullptr;
    }
  }
  uint64_t r = 0;
  switch (op) {
    case BinOp::kAdd: r = x + y; break;
    case BinOp::kSub: r = x - y; break;
    case BinOp::kMul: r = x * y; break;
    case BinOp::kDiv: case BinOp::kFloorDiv:
      if (y == 0) return nullptr;
      r = x / y;
      break;
    case BinOp::kMod: case BinOp::kFloorMod:
      if (y == 0) return nullptr;
      r = x % y;
      break;
    case BinOp::kMin: r = std::min(x, y); break;
    case BinOp::kMax: r = std::max(x, y); break;
    case BinOp::kEQ: return Bool(x == y);
    case BinOp::kNE: return Bool(x != y);
    case BinOp::kLT: return Bool(x < y);
    case BinOp::kLE: return Bool(x <= y);
    case BinOp::kGT: return Bool(x > y);
    case BinOp::kGE: return Bool(x >= y);
    case BinOp::kAnd: return Bool(x != 0 && y != 0);
    case BinOp::kOr: return Bool(x != 0 || y != 0);
    case BinOp::kBitAnd: r = x & y; break;
    case BinOp::kBitOr: r = x | y; break;
    case BinOp::kBitXor: r = x ^ y; break;
    case BinOp::kShl:
      if (y >= static_cast<uint64_t>(t.bits)) return nullptr;
      r = x << y;
      break;
    case BinOp::kShr:
      if (y >= static_cast<uint64_t>(t.bits)) return nullptr;
      r = x >> y;
      break;
  }
  return Const(t, static_cast<int64_t>(r & mask));
}

Expr FoldFloat(BinOp op, DType t, double x, double y) {
  if (!ExactIn(t, x) || !ExactIn(t, y)) return nullptr;
  switch (op) {
    case BinOp::kEQ: return Bool(x == y);
    case BinOp::kNE: return Bool(x != y);
    case BinOp::kLT: return Bool(x < y);
    case BinOp::kLE: return Bool(x <= y);
    case BinOp::kGT: return Bool(x > y);
    case BinOp::kGE: return Bool(x >= y);
    case BinOp::kMin:
    case BinOp::kMax:
      // fmin/fmax and a ? : differ on NaN; leave those to the target.
      if (std::isnan(x) || std::isnan(y)) return nullptr;
      return FloatImm::Make(t, op == BinOp::kMin ? std::min(x, y) : std::max(x, y));
    case BinOp::kAdd: case BinOp::kSub: case BinOp::kMul: case BinOp::kDiv:
      break;
    default:
      return nullptr;
  }
  double r;
  if (t == DType::Float(32)) {
    // Single-precision arithmetic, as the target does it (no excess precision on x86-64).
    float fx = static_cast<float>(x), fy = static_cast<float>(y), fr;
    switch (op) {
      case BinOp::kAdd: fr = fx + fy; break;
      case BinOp::kSub: fr = fx - fy; break;
      case BinOp::kMul: fr = fx * fy; break;
      default: fr = fx / fy; break;
    }
    r = fr;
  } else {
    switch (op) {
      case BinOp::kAdd: r = x + y; break;
      case BinOp::kSub: r = x - y; break;
      case BinOp::kMul: r = x * y; break;
      default: r = x / y; break;
    }
    // Half precision: only when the exact result is representable, so that no
    // rounding happens anywhere.
    if (t != DType::Float(64) && !ExactIn(t, r)) return nullptr;
  }
  if (!std::isfinite(r)) return nullptr;
  return FloatImm::Make(t, r);
}

}  // namespace

bool ExactIn(DType t, double v) {
  if (!t.IsFloat()) return false;
  // 8-bit floats: constants stay casts evaluated by the device library (which rounds and
  // saturates); only zero and NaN, and E5M2's infinities, are known to be exact.
  // The MX types likewise: float4_e2m1fn has both zeros (no NaN), float8_e8m0fnu only NaN.
  if (t.code == DType::kFloat4E2M1) return v == 0;
  if (t.code == DType::kFloat8E8M0) return std::isnan(v);
  if (t.IsFloat8()) return v == 0 || std::isnan(v) || (t.code == DType::kFloat8E5M2 && std::isinf(v));
  if (std::isnan(v) || std::isinf(v) || v == 0) return true;
  if (t == DType::Float(64)) return true;
  if (t == DType::Float(32)) return static_cast<double>(static_cast<float>(v)) == v;
  if (t.code == DType::kBFloat) {
    float f = static_cast<float>(v);
    if (static_cast<double>(f) != v) return false;
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    return (bits & 0xFFFFu) == 0;
  }
  if (t == DType::Float(16)) {
    if (std::fabs(v) > 65504.0) return false;
    int e;
    std::frexp(v, &e);  // v = m * 2^e, 0.5 <= |m| < 1: leading bit has weight 2^(e-1)
    int ulp_exp = std::max(e - 1, -14) - 10;
    double scaled = std::ldexp(v, -ulp_exp);
    return std::trunc(scaled) == scaled;
  }
  return false;
}

Expr FoldBinary(BinOp op, const Expr& a, const Expr& b) {
  if (!a || !b || a->dtype != b->dtype) return nullptr;
  const DType t = a->dtype;
  auto* ia = ir::As<IntImm>(a);
  auto* ib = ir::As<IntImm>(b);
  if (ia && ib) {
    return t.IsSigned() ? FoldSigned(op, t, ia->value, ib->value)
                        : FoldUnsigned(op, t, ia->value, ib->value);
  }
  auto* fa = ir::As<FloatImm>(a);
  auto* fb = ir::As<FloatImm>(b);
  if (fa && fb) return FoldFloat(op, t, fa->value, fb->value);
  return nullptr;
}

Expr FoldCast(DType t, const Expr& v) {
  if (auto* imm = ir::As<IntImm>(v)) {
    const DType s = v->dtype;
    const bool big_unsigned = !s.IsSigned() && imm->value < 0;  // uint64 above INT64_MAX
    if (t.IsBool()) return Bool(imm->value != 0);
    if (t.IsInt()) {
      // Integer conversions wrap modulo 2^bits (two's complement).
      uint64_t u = static_cast<uint64_t>(imm->value);
      if (t.bits < 64) {
        u &= (uint64_t{1} << t.bits) - 1;
        if (t.IsSigned() && (u >> (t.bits - 1)) & 1) u |= ~((uint64_t{1} << t.bits) - 1);
      }
      return Const(t, static_cast<int64_t>(u));
    }
    if (t.IsFloat()) {
      if (big_unsigned) return nullptr;
      const int64_t x = imm->value;
      if (t == DType::Float(32)) return FloatImm::Make(t, static_cast<float>(x));
      if (t == DType::Float(64)) return FloatImm::Make(t, static_cast<double>(x));
      const double d = static_cast<double>(x);
      if (std::fabs(d) <= 9007199254740992.0 && ExactIn(t, d)) return FloatImm::Make(t, d);
    }
    return nullptr;
  }
  if (auto* imm = ir::As<FloatImm>(v)) {
    const double x = imm->value;
    if (t.IsBool()) return Bool(x != 0);
    if (t.IsInt()) {
      if (!std::isfinite(x)) return nullptr;
      const double tr = std::trunc(x);
      const double lo = t.IsSigned() ? -std::ldexp(1.0, t.bits - 1) : 0.0;
      const double hi = std::ldexp(1.0, t.IsSigned() ? t.bits - 1 : t.bits);
      if (!(tr >= lo && tr < hi)) return nullptr;  // undefined behaviour in C
      if (!t.IsSigned() && tr >= 9223372036854775808.0) {
        return Const(t, static_cast<int64_t>(static_cast<uint64_t>(tr)));
      }
      return Const(t, static_cast<int64_t>(tr));
    }
    if (t == DType::Float(64)) return FloatImm::Make(t, x);
    if (t == DType::Float(32)) return FloatImm::Make(t, static_cast<float>(x));
    if (t.IsFloat() && ExactIn(t, x)) return FloatImm::Make(t, x);
  }
  return nullptr;
}

}  // namespace tl::arith::detail
