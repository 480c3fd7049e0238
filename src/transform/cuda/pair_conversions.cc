// SPDX-License-Identifier: Apache-2.0
/// \file cuda-pair-conversions: a register walk that converts element by element,
/// `for l in unroll(n): R[l] = D(e(l))`, converts two registers at a time where the device
/// library has a packed conversion between the two types (pair_convert.h):
/// `for m in unroll(n / 2): convert_pair(&R[2m], e(2m), e(2m + 1))`.
///
/// Why: converting one float to an 8-bit float is a packed instruction whose other half is
/// thrown away (cvt.rn.satfinite.e4m3x2.f32 with a zero partner), and float -> half has a
/// packed form too (cvt.rn.f16x2.f32); pairing halves the conversions of every cast of a
/// register tile (the quantization kernels' `y_fp8[i, j] = y[i, j] / scale[i]`). The results
/// are the element conversions' bits exactly.
///
/// The walk qualifies when its trip count is a constant even number, its body is exactly
/// that one store into a register array (local scope; of an even element count for 8-
/// and 16-bit types, whose pairs are stored as one 16- or 32-bit value), the register of
/// step l + 1 is the one after that of step l for every even l, and the pair starts on an
/// even register (provably, whatever the enclosing loops' variables); `e` reads no element
/// of R and calls nothing with effects (its two evaluations may then happen before both
/// stores). Anything else is left as it is.
#include "tl/arith/simplify.h"
#include "tl/codegen/cuda.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/transform/pass.h"

namespace tl::transform {

using namespace ir;  // NOLINT: implementation file

namespace {

/// `R[idx] = Cast(D, e)` into a register array, with e of another type that pairs with D.
struct Conversion {
  const BufferStore* store = nullptr;
  Expr value;  ///< e, before the cast
};

bool AsConversion(const Stmt& body, Conversion* out) {
  const auto* st = As<BufferStore>(body);
  if (!st || st->buffer->scope != Scope::kLocal || st->indices.size() != 1) return false;
  const auto* cast = As<Cast>(st->value);
  if (!cast || cast->dtype != st->buffer->dtype) return false;
  if (codegen::CudaPairConversion(cast->value->dtype, cast->dtype).empty()) return false;
  // A pair is written as one store of both elements (pair_convert.h: 16 bits for 8-bit
  // types, 32 for 16-bit ones): the array's element count must be even, so that its declared
  // alignment (layout::LocalAlignment) covers the pair.
  int64_t elems = 0;
  if (st->buffer->dtype.bytes() <= 2 && (!AsConstInt(st->buffer->NumElements(), &elems) || elems % 2 != 0)) {
    return false;
  }
  bool pure = true;
  ForEachExpr(cast->value, [&](const Expr& e) {
    if (const auto* load = As<BufferLoad>(e); load && load->buffer.get() == st->buffer.get()) pure = false;
    if (const auto* call = As<Call>(e); call && !IsPureCall(call)) pure = false;
  });
  if (!pure) return false;
  out->store = st;
  out->value = cast->value;
  return true;
}

class Pairer : public IRMutator {
 public:
  int paired = 0;

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    Stmt body = Mutate(op->body);
    int64_t min = -1, n = 0;
    Conversion c;
    if (op->for_kind == ForKind::kUnrolled && AsConstInt(op->min, &min) && min == 0 && AsConstInt(op->extent, &n) &&
        n > 0 && n % 2 == 0 && AsConversion(body, &c) && PairsAdjacent(op->var.get(), c, n)) {
      return Pair(op, c, n);
    }
    return body == op->body ? self
                            : For::Make(op->var, op->min, op->extent, op->for_kind, body, op->annotations, op->span);
  }

 private:
  Expr RegisterAt(const Var* var, const Conversion& c, int64_t l) {
    return arith_.Simplify(
        Substitute(c.store->indices[0], [&](const Var* v) -> Expr { return v == var ? MakeInt(l) : nullptr; }));
  }

  /// Register l + 1 follows register l, which is even, for every even l (the index may
  /// depend on enclosing loops: a walk grouped by cuda-vectorize-loops, `R[m * 2 + j]`).
  bool PairsAdjacent(const Var* var, const Conversion& c, int64_t n) {
    for (int64_t l = 0; l < n; l += 2) {
      Expr first = RegisterAt(var, c, l);
      int64_t step = -1, parity = -1;
      if (!AsConstInt(arith_.Simplify(RegisterAt(var, c, l + 1) - first), &step) || step != 1) return false;
      if (!AsConstInt(arith_.Simplify(FloorMod(first, MakeInt(2, first->dtype))), &parity) || parity != 0) return false;
    }
    return true;
  }

  Stmt Pair(const For* op, const Conversion& c, int64_t n) {
    VarRef m = Var::Make(op->var->name, op->var->dtype);
    auto step = [&](int64_t k) {
      Expr l = MakeInt(2) * m + MakeInt(k);
      return [l, var = op->var.get()](const Var* v) -> Expr { return v == var ? l : nullptr; };
    };
    Expr first = BufferLoad::Make(c.store->buffer, {Substitute(c.store->indices[0], step(0))});
    Stmt call = Evaluate::Make(Call::Make(DType::Void(), "convert_pair",
                                          {Call::Make(DType::Handle(), "address_of", {first}),
                                           Substitute(c.value, step(0)), Substitute(c.value, step(1))}),
                               c.store->span);
    ++paired;
    return For::Make(m, MakeInt(0), MakeInt(n / 2), ForKind::kUnrolled, call, op->annotations, op->span);
  }

  arith::Analyzer arith_;
};

}  // namespace

ir::PrimFunc CudaPairConversions(const ir::PrimFunc& f, PassContext& ctx) {
  Pairer p;
  ir::Stmt body = p.Mutate(f->body);
  if (!p.paired) return f;
  ctx.remarks.push_back(std::to_string(p.paired) +
                        " register walk(s) of element conversions: two registers per conversion instruction");
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-pair-conversions", CudaPairConversions);

}  // namespace tl::transform
