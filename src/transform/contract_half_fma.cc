// SPDX-License-Identifier: Apache-2.0
/// \file "contract-half-fma": `a * b + c` on 16-bit floats becomes one fused multiply-add,
/// rounded once (tl::hfma).
///
/// nvcc contracts a float multiply and add into an fma by default, and so does upstream
/// TileLang's generated code for half and bfloat16 (its operators reach mul.f16 / add.f16,
/// which ptxas fuses). Ours print 16-bit + and * as .rn instructions, which ptxas never
/// fuses: the fp16 x int4 GEMV's `acc += a * b` ran two instructions per product, 15% more
/// than upstream's loop. Contracting here, as an IR decision, keeps both targets alike: the
/// CPU's tl::hfma computes the same once-rounded value exactly (round to odd in float).
///
/// Matched: Add(Mul(a, b), c) and Add(c, Mul(a, b)) where the add, the product and all
/// three operands are one 16-bit float type (half, bfloat16). Pass config "tl.contract_half_fma" =
/// false keeps every operation rounded on its own.
#include <string>

#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

bool SixteenBitFloat(const DType& t) { return t.IsFloat() && t.bits == 16; }

/// The product when `e` is a multiplication of two values of type t.
const Binary* ProductOf(const Expr& e, const DType& t) {
  const auto* mul = As<Binary>(e);
  if (!mul || mul->op != BinOp::kMul || mul->dtype != t) return nullptr;
  return mul->a->dtype == t && mul->b->dtype == t ? mul : nullptr;
}

class Contractor : public IRMutator {
 public:
  int contracted = 0;

 protected:
  Expr Mutate_(const Binary* op, const Expr& self) override {
    Expr visited = IRMutator::Mutate_(op, self);
    const auto* add = As<Binary>(visited);
    if (!add || add->op != BinOp::kAdd || !SixteenBitFloat(add->dtype)) return visited;
    const DType& t = add->dtype;
    const Binary* mul = ProductOf(add->a, t);
    Expr addend = add->b;
    if (!mul) {
      mul = ProductOf(add->b, t);
      addend = add->a;
    }
    if (!mul || addend->dtype != t) return visited;
    ++contracted;
    return Call::Make(t, "hfma", {mul->a, mul->b, addend});
  }
};

}  // namespace

ir::PrimFunc ContractHalfFma(const ir::PrimFunc& f, PassContext& ctx) {
  if (!ConfigOn(ctx, "tl.contract_half_fma", /*default_on=*/true)) return f;
  Contractor c;
  Stmt body = c.Mutate(f->body);
  // No remark: like nvcc's contraction of float, the default arithmetic, not a fallback.
  if (c.contracted == 0) return f;
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("contract-half-fma", ContractHalfFma);

}  // namespace tl::transform
