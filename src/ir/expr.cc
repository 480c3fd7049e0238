// SPDX-License-Identifier: Apache-2.0
/// \file Expression constructors: each Make() checks the node's typing invariants.
#include "tl/ir/expr.h"
#include "tl/ir/intrinsics.h"

#include <algorithm>

#include "tl/support/error.h"

namespace tl::ir {

Expr IntImm::Make(DType t, int64_t v) {
  TL_ICHECK(t.IsInt() || t.IsBool()) << "IntImm of type " << t.str();
  if (t.IsBool()) v = v != 0;
  return std::make_shared<IntImm>(t, v);
}

Expr FloatImm::Make(DType t, double v) {
  TL_ICHECK(t.IsFloat()) << "FloatImm of type " << t.str();
  return std::make_shared<FloatImm>(t, v);
}

VarRef Var::Make(std::string name, DType t) { return std::make_shared<Var>(std::move(name), t); }

const char* BinOpName(BinOp op) {
  switch (op) {
    case BinOp::kAdd: return "+";
    case BinOp::kSub: return "-";
    case BinOp::kMul: return "*";
    case BinOp::kDiv: return "/";
    case BinOp::kMod: return "%";
    case BinOp::kFloorDiv: return "//";
    case BinOp::kFloorMod: return "%%";
    case BinOp::kMin: return "min";
    case BinOp::kMax: return "max";
    case BinOp::kEQ: return "==";
    case BinOp::kNE: return "!=";
    case BinOp::kLT: return "<";
    case BinOp::kLE: return "<=";
    case BinOp::kGT: return ">";
    case BinOp::kGE: return ">=";
    case BinOp::kAnd: return "and";
    case BinOp::kOr: return "or";
    case BinOp::kBitAnd: return "&";
    case BinOp::kBitOr: return "|";
    case BinOp::kBitXor: return "^";
    case BinOp::kShl: return "<<";
    case BinOp::kShr: return ">>";
  }
  return "?";
}

bool IsComparison(BinOp op) { return op >= BinOp::kEQ && op <= BinOp::kGE; }
bool IsLogical(BinOp op) { return op == BinOp::kAnd || op == BinOp::kOr; }

Expr Binary::Make(BinOp op, Expr a, Expr b) {
  TL_ICHECK(a && b) << "null operand of " << BinOpName(op);
  TL_ICHECK(a->dtype == b->dtype) << "operands of " << BinOpName(op) << " differ in type: "
                                  << a->dtype.str() << " vs " << b->dtype.str();
  DType t = a->dtype;
  if (IsComparison(op) || IsLogical(op)) t = DType::Bool();
  if (IsLogical(op)) {
    TL_ICHECK(a->dtype.IsBool()) << "logical op on " << a->dtype.str();
  }
  return std::make_shared<Binary>(t, op, std::move(a), std::move(b));
}

Expr Not::Make(Expr a) {
  TL_ICHECK(a && a->dtype.IsBool()) << "Not of non-bool";
  return std::make_shared<Not>(std::move(a));
}

Expr Select::Make(Expr cond, Expr t, Expr f) {
  TL_ICHECK(cond->dtype.IsBool()) << "Select condition must be bool";
  TL_ICHECK(t->dtype == f->dtype) << "Select branches differ: " << t->dtype.str() << " vs "
                                  << f->dtype.str();
  return std::make_shared<Select>(std::move(cond), std::move(t), std::move(f));
}

Expr Cast::Make(DType t, Expr v) {
  if (v->dtype == t) return v;
  return std::make_shared<Cast>(t, std::move(v));
}

Expr Call::Make(DType t, std::string op, std::vector<Expr> args) {
  // Passes read a call's effects from intrinsics.def: an undeclared name would be a call with
  // none (no write, no barrier), wrong without a word. T.call_extern has its own prefix.
  TL_ICHECK(LookupIntrinsic(op) || op.rfind(kExternCallPrefix, 0) == 0)
      << "a call of '" << op << "', which intrinsics.def does not declare";
  return std::make_shared<Call>(t, std::move(op), std::move(args));
}

const char* ScopeName(Scope s) {
  switch (s) {
    case Scope::kGlobal: return "global";
    case Scope::kShared: return "shared";
    case Scope::kFragment: return "fragment";
    case Scope::kLocal: return "local";
    case Scope::kVar: return "var";
  }
  return "?";
}

Buffer BufferNode::Make(std::string name, DType dtype, std::vector<Expr> shape, Scope scope,
                        std::vector<Expr> strides, Expr data) {
  TL_ICHECK(strides.empty() || strides.size() == shape.size())
      << "buffer " << name << ": " << strides.size() << " strides for " << shape.size() << " dims";
  for (const Expr& d : shape) TL_ICHECK(d && d->dtype.IsInt()) << "buffer " << name << ": bad dim";
  TL_ICHECK(!data || (scope == Scope::kGlobal && data->kind == NodeKind::kVar &&
                      (data->dtype == DType::Handle() || data->dtype == DType::Int(64))))
      << "buffer " << name << ": an address buffer is global, its address a handle or int64 variable";
  return std::make_shared<BufferNode>(std::move(name), dtype, std::move(shape), std::move(strides),
                                      scope, std::move(data));
}

Expr BufferNode::NumElements() const {
  Expr n = MakeInt(1);
  for (const Expr& d : shape) n = n * d;
  return n;
}

Expr BufferNode::StrideOf(size_t i) const {
  if (!strides.empty()) return strides[i];
  Expr s = MakeInt(1);
  for (size_t j = i + 1; j < shape.size(); ++j) s = s * shape[j];
  return s;
}

Expr BufferLoad::Make(Buffer buffer, std::vector<Expr> indices) {
  TL_ICHECK(indices.size() == buffer->shape.size())
      << "load of " << buffer->name << " with " << indices.size() << " indices for "
      << buffer->shape.size() << " dims";
  return std::make_shared<BufferLoad>(std::move(buffer), std::move(indices));
}

// ---- convenience constructors: fold constants so generated index math stays small ----

Expr MakeInt(int64_t v, DType t) { return IntImm::Make(t, v); }
Expr MakeFloat(double v, DType t) { return FloatImm::Make(t, v); }
Expr MakeBool(bool v) { return IntImm::Make(DType::Bool(), v); }

bool AsConstInt(const Expr& e, int64_t* out) {
  if (const auto* imm = As<IntImm>(e)) {
    *out = imm->value;
    return true;
  }
  return false;
}

namespace {
/// Brings integer operands to the wider type so index math mixes int32 and int64 freely.
void Unify(Expr* a, Expr* b) {
  if ((*a)->dtype == (*b)->dtype) return;
  if ((*a)->dtype.IsInt() && (*b)->dtype.IsInt()) {
    DType t = (*a)->dtype.bits >= (*b)->dtype.bits ? (*a)->dtype : (*b)->dtype;
    *a = Cast::Make(t, *a);
    *b = Cast::Make(t, *b);
  }
}

Expr Fold(BinOp op, Expr a, Expr b) {
  Unify(&a, &b);
  int64_t x, y;
  bool ca = AsConstInt(a, &x), cb = AsConstInt(b, &y);
  if (ca && cb && a->dtype.IsInt()) {
    switch (op) {
      case BinOp::kAdd: return MakeInt(x + y, a->dtype);
      case BinOp::kSub: return MakeInt(x - y, a->dtype);
      case BinOp::kMul: return MakeInt(x * y, a->dtype);
      case BinOp::kMin: return MakeInt(std::min(x, y), a->dtype);
      case BinOp::kMax: return MakeInt(std::max(x, y), a->dtype);
      case BinOp::kFloorDiv:
        if (y != 0) return MakeInt(x / y - ((x % y != 0) && ((x < 0) != (y < 0))), a->dtype);
        break;
      case BinOp::kFloorMod:
        if (y != 0) return MakeInt(((x % y) + y) % y, a->dtype);
        break;
      case BinOp::kLT: return MakeBool(x < y);
      case BinOp::kLE: return MakeBool(x <= y);
      case BinOp::kGE: return MakeBool(x >= y);
      case BinOp::kEQ: return MakeBool(x == y);
      default: break;
    }
  }
  if (a->dtype.IsInt()) {
    if (op == BinOp::kAdd && ca && x == 0) return b;
    if ((op == BinOp::kAdd || op == BinOp::kSub) && cb && y == 0) return a;
    if (op == BinOp::kMul && ca && x == 1) return b;
    if ((op == BinOp::kMul || op == BinOp::kFloorDiv) && cb && y == 1) return a;
    if (op == BinOp::kMul && ((ca && x == 0) || (cb && y == 0))) return MakeInt(0, a->dtype);
  }
  return Binary::Make(op, std::move(a), std::move(b));
}
}  // namespace

Expr operator+(Expr a, Expr b) { return Fold(BinOp::kAdd, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return Fold(BinOp::kSub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return Fold(BinOp::kMul, std::move(a), std::move(b)); }
Expr FloorDiv(Expr a, Expr b) { return Fold(BinOp::kFloorDiv, std::move(a), std::move(b)); }
Expr FloorMod(Expr a, Expr b) { return Fold(BinOp::kFloorMod, std::move(a), std::move(b)); }
Expr Min(Expr a, Expr b) { return Fold(BinOp::kMin, std::move(a), std::move(b)); }
Expr Max(Expr a, Expr b) { return Fold(BinOp::kMax, std::move(a), std::move(b)); }
Expr LT(Expr a, Expr b) { return Fold(BinOp::kLT, std::move(a), std::move(b)); }
Expr LE(Expr a, Expr b) { return Fold(BinOp::kLE, std::move(a), std::move(b)); }
Expr GE(Expr a, Expr b) { return Fold(BinOp::kGE, std::move(a), std::move(b)); }
Expr EQ(Expr a, Expr b) { return Fold(BinOp::kEQ, std::move(a), std::move(b)); }

Expr And(Expr a, Expr b) {
  if (!a) return b;
  if (!b) return a;
  int64_t v;
  if (AsConstInt(a, &v)) return v ? b : a;
  if (AsConstInt(b, &v)) return v ? a : b;
  return Binary::Make(BinOp::kAnd, std::move(a), std::move(b));
}

}  // namespace tl::ir
