// SPDX-License-Identifier: Apache-2.0
/// \file Expressions: immutable, typed, shared. Variables and buffers compare by identity.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tl/ir/dtype.h"

namespace tl::ir {

/// One enumerator per node kind, generated from node_kinds.def.
enum class NodeKind : uint8_t {
#define TL_EXPR_NODE(Name) k##Name,
#define TL_STMT_NODE(Name) k##Name,
#include "tl/ir/node_kinds.def"
};

/// Base of all expressions. Nodes are immutable after Make().
struct ExprNode {
  const NodeKind kind;
  const DType dtype;
  virtual ~ExprNode() = default;

 protected:
  ExprNode(NodeKind k, DType t) : kind(k), dtype(t) {}
};
using Expr = std::shared_ptr<const ExprNode>;

/// Downcast by kind; nullptr when `e` is null or of another kind.
template <typename T>
const T* As(const Expr& e) {
  return e && e->kind == T::kKind ? static_cast<const T*>(e.get()) : nullptr;
}

/// An integer (or bool) constant.
struct IntImm final : ExprNode {
  static constexpr NodeKind kKind = NodeKind::kIntImm;
  const int64_t value;
  static Expr Make(DType t, int64_t v);
  IntImm(DType t, int64_t v) : ExprNode(kKind, t), value(v) {}
};

/// A floating-point constant (any float width; stored as double).
struct FloatImm final : ExprNode {
  static constexpr NodeKind kKind = NodeKind::kFloatImm;
  const double value;
  static Expr Make(DType t, double v);
  FloatImm(DType t, double v) : ExprNode(kKind, t), value(v) {}
};

/// A scalar variable: a loop index, a block index, a let binding or a dynamic dimension.
/// Compared by identity; `name` is for display only.
struct Var final : ExprNode {
  static constexpr NodeKind kKind = NodeKind::kVar;
  const std::string name;
  static std::shared_ptr<const Var> Make(std::string name, DType t = DType::Index());
  Var(std::string n, DType t) : ExprNode(kKind, t), name(std::move(n)) {}
};
using VarRef = std::shared_ptr<const Var>;

/// Binary operators. Comparisons and logic produce bool.
enum class BinOp : uint8_t {
  kAdd, kSub, kMul,
  kDiv,       ///< float division; for integers C truncating division
  kMod,       ///< C truncating remainder (integers only)
  kFloorDiv,  ///< integer division rounding toward -inf (Python's //)
  kFloorMod,  ///< remainder with the sign of the divisor (Python's %)
  kMin, kMax,
  kEQ, kNE, kLT, kLE, kGT, kGE,
  kAnd, kOr,
  kBitAnd, kBitOr, kBitXor, kShl, kShr,
};
const char* BinOpName(BinOp op);
bool IsComparison(BinOp op);
bool IsLogical(BinOp op);

/// a <op> b. Operands have the same dtype (the front end inserts casts).
struct Binary final : ExprNode {
  static constexpr NodeKind kKind = NodeKind::kBinary;
  const BinOp op;
  const Expr a, b;
  /// Checks operand types; derives the result type (bool for comparisons and logic).
  static Expr Make(BinOp op, Expr a, Expr b);
  Binary(DType t, BinOp o, Expr x, Expr y)
      : ExprNode(kKind, t), op(o), a(std::move(x)), b(std::move(y)) {}
};

/// Logical negation of a bool.
struct Not final : ExprNode {
  static constexpr NodeKind kKind = NodeKind::kNot;
  const Expr a;
  static Expr Make(Expr a);
  explicit Not(Expr x) : ExprNode(kKind, DType::Bool()), a(std::move(x)) {}
};

/// cond ? t : f. Only the chosen side is evaluated (so it may guard an out-of-range load).
struct Select final : ExprNode {
  static constexpr NodeKind kKind = NodeKind::kSelect;
  const Expr cond, t, f;
  static Expr Make(Expr cond, Expr t, Expr f);
  Select(Expr c, Expr x, Expr y)
      : ExprNode(kKind, x->dtype), cond(std::move(c)), t(std::move(x)), f(std::move(y)) {}
};

/// Value conversion to `dtype` (float->int truncates toward zero, as in C).
struct Cast final : ExprNode {
  static constexpr NodeKind kKind = NodeKind::kCast;
  const Expr value;
  static Expr Make(DType t, Expr v);
  Cast(DType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
};

/// A pure intrinsic call by name: exp, exp2, log, log2, sqrt, rsqrt, abs, tanh, sigmoid,
/// floor, ceil, pow, ... Codegen maps each name to the target's function.
struct Call final : ExprNode {
  static constexpr NodeKind kKind = NodeKind::kCall;
  const std::string op;
  const std::vector<Expr> args;
  static Expr Make(DType t, std::string op, std::vector<Expr> args);
  Call(DType t, std::string o, std::vector<Expr> a)
      : ExprNode(kKind, t), op(std::move(o)), args(std::move(a)) {}
};

/// Where a buffer lives. The CPU target maps every non-global scope to block-local memory.
enum class Scope : uint8_t { kGlobal, kShared, kFragment, kLocal, kVar };
const char* ScopeName(Scope s);

/// A multi-dimensional array: dtype, shape (static or symbolic), row-major unless strides
/// are given, and a scope. Compared by identity.
///
/// `data` is set on a global tensor made from an address (T.make_tensor): a variable holding
/// it, a handle parameter (T.ptr) or an int64 let bound to a loaded address (a pointer
/// table's entry). Such a tensor is no parameter: its accesses go through that address, and
/// nothing is known about its alignment beyond the element size.
struct BufferNode {
  const std::string name;
  const DType dtype;
  const std::vector<Expr> shape;
  const std::vector<Expr> strides;  ///< empty: contiguous row-major
  const Scope scope;
  const Expr data;  ///< null: the buffer's own storage (a parameter or an allocation)
  static std::shared_ptr<const BufferNode> Make(std::string name, DType dtype,
                                                std::vector<Expr> shape, Scope scope,
                                                std::vector<Expr> strides = {}, Expr data = nullptr);
  BufferNode(std::string n, DType t, std::vector<Expr> sh, std::vector<Expr> st, Scope sc, Expr d = nullptr)
      : name(std::move(n)), dtype(t), shape(std::move(sh)), strides(std::move(st)), scope(sc), data(std::move(d)) {}
  /// Total element count (a product expression, simplified when static).
  Expr NumElements() const;
  /// Stride of dimension `i`: the explicit stride, or the row-major product of later dims.
  Expr StrideOf(size_t i) const;
};
using Buffer = std::shared_ptr<const BufferNode>;

/// Whether the buffer's elements are packed two per byte (element i in the low nibble of
/// byte i/2 when i is even, the high nibble when odd): 4-bit types in global memory, as
/// torch and upstream TileLang store them. Tiles (shared, fragment, local) hold one 4-bit
/// value per byte, so their accesses stay byte accesses (and vectorize as int8 would).
inline bool PackedInMemory(const BufferNode& b) { return b.scope == Scope::kGlobal && b.dtype.IsSubByte(); }

/// buffer[indices]. One index per dimension.
struct BufferLoad final : ExprNode {
  static constexpr NodeKind kKind = NodeKind::kBufferLoad;
  const Buffer buffer;
  const std::vector<Expr> indices;
  static Expr Make(Buffer buffer, std::vector<Expr> indices);
  BufferLoad(Buffer b, std::vector<Expr> i)
      : ExprNode(kKind, b->dtype), buffer(std::move(b)), indices(std::move(i)) {}
};

// Convenience constructors used throughout the passes.
Expr MakeInt(int64_t v, DType t = DType::Index());
Expr MakeFloat(double v, DType t = DType::Float(32));
Expr MakeBool(bool v);
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr FloorDiv(Expr a, Expr b);
Expr FloorMod(Expr a, Expr b);
Expr Min(Expr a, Expr b);
Expr Max(Expr a, Expr b);
Expr LT(Expr a, Expr b);
Expr LE(Expr a, Expr b);
Expr GE(Expr a, Expr b);
Expr EQ(Expr a, Expr b);
Expr And(Expr a, Expr b);  ///< null operands are treated as "true"
/// Integer value of a constant, if it is one.
bool AsConstInt(const Expr& e, int64_t* out);

}  // namespace tl::ir
