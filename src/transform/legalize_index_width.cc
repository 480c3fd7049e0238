// SPDX-License-Identifier: Apache-2.0
/// \file "legalize-index-width": index arithmetic in 64 bits wherever 32 bits may overflow.
///
/// Index expressions are int32 (the fast type on GPUs), but a global tensor may hold 2^31
/// elements or more, and then `(by * 128 + i) * K + k` wraps silently. The decision is made
/// here, as a pass, rather than in the printer: a pass sees the loop and block ranges, can
/// read the user's override from the pass configs and can record a remark. The printer
/// follows the types this pass leaves (an offset is 64-bit when an index or stride is).
///
/// Rules:
/// - A global buffer is *wide* when its largest offset is not provably below 2^31: static
///   shapes are counted exactly; a dynamic dimension counts as unbounded.
/// - Every index into a wide buffer becomes int64. An index proven to fit in int32 (from
///   the ranges of loops, blocks and dynamic dimensions) is computed in 32 bits and widened
///   once; otherwise its terms are widened before they are combined, so that no sum or
///   product overflows on the way. Shared and local buffers are small: never widened.
/// - A comparison of pure index arithmetic (the edge guards of accesses and copies) that
///   may overflow int32 is computed in 64 bits the same way, as is such arithmetic under
///   a cast to int64 (a guard against an int64 dimension), and the grid size.
/// - Pass config "tl.loop_terms_apart" (on; 0 turns it off): a widened sum keeps the terms that
///   use enclosing loops' variables apart from the others (see WidenFitting), so that nvcc folds
///   an unrolled loop's steps into immediate offsets (upstream's seesaw sparse MLA forward on
///   the H200: 1.53 -> 1.19 ms, BENCHMARKS.md twenty-fifth session).
/// - Pass config "tl.config_index_bitwidth": "64" treats every global buffer as wide; "32"
///   widens nothing (the user promises that every index fits).
#include <limits>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tl/arith/simplify.h"
#include "tl/arith/sum_terms.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

/// True when the buffer's largest element offset is provably at most INT32_MAX.
bool ProvablySmall(const Buffer& b) {
  __int128 last = 0;  // exact: no product of int64 extents can overflow 128 bits
  for (size_t i = 0; i < b->shape.size(); ++i) {
    int64_t n, s;
    if (!AsConstInt(b->shape[i], &n) || !AsConstInt(b->StrideOf(i), &s)) return false;
    if (n <= 0) return true;  // empty: never accessed
    last += static_cast<__int128>(n - 1) * s;
  }
  return last <= kInt32Max;
}

bool IsNarrowInt(const Expr& e) { return e->dtype.IsInt() && e->dtype.IsSigned() && e->dtype.bits < 64; }

/// The values a variable of narrow signed type `t` holds, whatever computed it: an int32
/// scalar argument, or a let of the user's arithmetic on loaded data (which wraps in its
/// own type before any index uses it), is in [-2^31, 2^31).
arith::IntBound TypeRange(DType t) {
  int64_t hi = (int64_t{1} << (t.bits - 1)) - 1;
  return {-hi - 1, hi};
}

arith::IntBound Intersect(arith::IntBound a, const arith::IntBound& b) {
  if (!a.min || (b.min && *b.min > *a.min)) a.min = b.min;
  if (!a.max || (b.max && *b.max < *a.max)) a.max = b.max;
  return a;
}

bool IsArith(BinOp op) {
  switch (op) {
    case BinOp::kAdd: case BinOp::kSub: case BinOp::kMul: case BinOp::kDiv: case BinOp::kMod:
    case BinOp::kFloorDiv: case BinOp::kFloorMod: case BinOp::kMin: case BinOp::kMax:
      return true;
    default:
      return false;
  }
}

class IndexWidener : public IRMutator {
 public:
  /// `force`: every global buffer is wide (tl.config_index_bitwidth=64).
  IndexWidener(const PrimFunc& f, bool force, bool split_loop_terms)
      : force_(force), split_loop_terms_(split_loop_terms) {
    for (const Param& p : f->params) {
      if (!p.buffer) {
        // a scalar argument (max_seqlen_q, say) is a value of its type: grids and trip
        // counts made from it are bounded by that
        if (p.var && IsNarrowInt(p.var)) an_.BindBound(p.var.get(), TypeRange(p.var->dtype));
        continue;
      }
      // A dynamic dimension is a value of its type: an int32 one is at most INT32_MAX
      // (the runtimes refuse larger sizes), which bounds the indices that tile it.
      for (const Expr& d : p.buffer->shape) {
        if (const auto* v = As<Var>(d); v && v->dtype.bits <= 32) an_.BindBound(v, {0, kInt32Max});
      }
    }
  }

  std::set<std::string> widened_buffers;
  int widened_other = 0;

 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    for (size_t i = 0; i < op->block_vars.size(); ++i) {
      an_.BindRange(op->block_vars[i].get(), MakeInt(0, op->block_vars[i]->dtype), op->grid[i]);
    }
    Stmt s = IRMutator::Mutate_(op, self);
    // T.ceildiv(m, 128) is (m + 127) // 128, which wraps for m near INT32_MAX: the grid is
    // computed on the host, once, so 64 bits cost nothing there.
    const auto* k = As<KernelLaunch>(s);
    std::vector<Expr> grid = k->grid;
    bool changed = false;
    for (Expr& g : grid) {
      if (!IsNarrowInt(g) || !PureIndex(g) || Fits(g)) continue;
      g = Widen(g);
      changed = true;
      ++widened_other;
    }
    if (!changed) return s;
    return KernelLaunch::Make(grid, k->block_vars, k->threads, k->body, k->span);
  }

  Stmt Mutate_(const For* op, const Stmt& self) override {
    an_.BindRange(op->var.get(), op->min, op->extent);
    // a loop nvcc may unroll (not the thread binding): see WidenFitting
    const bool loop = op->for_kind != ForKind::kThreadBinding;
    if (loop) loops_.push_back(arith::UnrolledLoop(*op) ? op->var.get() : nullptr);
    Stmt out = IRMutator::Mutate_(op, self);
    if (loop) loops_.pop_back();
    an_.Unbind(op->var.get());
    return out;
  }

  Stmt Mutate_(const LetStmt* op, const Stmt& self) override {
    // An index often goes through a let (`row = by * 128 + i`): keep its range, within
    // what its type holds (a sequence length read from cu_seqlens is an int32).
    if (IsNarrowInt(op->value) && IsNarrowInt(op->var)) {
      an_.BindBound(op->var.get(), Intersect(an_.Bound(op->value), TypeRange(op->var->dtype)));
    }
    return IRMutator::Mutate_(op, self);
  }

  Expr Mutate_(const BufferLoad* op, const Expr& self) override {
    Expr e = IRMutator::Mutate_(op, self);
    const auto* load = As<BufferLoad>(e);
    if (!Wide(load->buffer)) return e;
    return BufferLoad::Make(load->buffer, WidenAll(load->buffer, load->indices));
  }

  Stmt Mutate_(const BufferStore* op, const Stmt& self) override {
    Stmt s = IRMutator::Mutate_(op, self);
    const auto* store = As<BufferStore>(s);
    if (!Wide(store->buffer)) return s;
    return BufferStore::Make(store->buffer, WidenAll(store->buffer, store->indices), store->value, store->span);
  }

  Expr Mutate_(const Binary* op, const Expr& self) override {
    Expr e = IRMutator::Mutate_(op, self);
    const auto* cmp = As<Binary>(e);
    if (!IsComparison(cmp->op) || !IsNarrowInt(cmp->a) || !PureIndex(cmp->a) || !PureIndex(cmp->b)) return e;
    if (Fits(cmp->a) && Fits(cmp->b)) return e;
    if (Expr moved = Rebalanced(cmp)) return moved;
    ++widened_other;
    return Binary::Make(cmp->op, Widen(cmp->a), Widen(cmp->b));
  }

  Expr Mutate_(const Cast* op, const Expr& self) override {
    // int64(by * 128 + i), as the front end writes a guard against an int64 dimension:
    // the sum inside must not wrap before it is widened.
    Expr e = IRMutator::Mutate_(op, self);
    const auto* c = As<Cast>(e);
    if (!c || c->dtype != DType::Int(64) || !IsNarrowInt(c->value) || !PureIndex(c->value)) return e;
    if (Fits(c->value)) return e;
    ++widened_other;
    return Widen(c->value);
  }

 private:
  bool Wide(const Buffer& b) {
    if (b->scope != Scope::kGlobal) return false;
    auto it = wide_.find(b.get());
    if (it == wide_.end()) it = wide_.emplace(b.get(), force_ || !ProvablySmall(b)).first;
    return it->second;
  }

  std::vector<Expr> WidenAll(const Buffer& b, const std::vector<Expr>& idx) {
    std::vector<Expr> out;
    for (const Expr& i : idx) out.push_back(i->dtype.bits >= 64 ? i : Widen(an_.Simplify(i)));
    widened_buffers.insert(b->name);
    return out;
  }

  /// Index arithmetic only: no loads or calls, whose values are the user's data.
  static bool PureIndex(const Expr& e) {
    switch (e->kind) {
      case NodeKind::kIntImm: case NodeKind::kVar: return true;
      case NodeKind::kCast: return IsNarrowInt(e) && PureIndex(As<Cast>(e)->value);
      case NodeKind::kBinary: {
        const auto* b = As<Binary>(e);
        return IsArith(b->op) && PureIndex(b->a) && PureIndex(b->b);
      }
      case NodeKind::kSelect: return PureIndex(As<Select>(e)->t) && PureIndex(As<Select>(e)->f);
      default: return false;
    }
  }

  /// `a cmp b` with one term u of either side, a variable (a value of its own type: a let of
  /// loaded data, say `k = block_offset[i]`), moved to stand alone and the other terms to
  /// the other side: `x >= k + c` as `x - c >= k`. Exact when that side provably fits in
  /// 32 bits (the identity holds over the integers, and neither side wraps), where widening
  /// both sides would cost 64-bit arithmetic per element (a mask in an attention loop).
  /// Null when no term qualifies.
  Expr Rebalanced(const Binary* cmp) {
    const DType t = cmp->a->dtype;
    if (cmp->b->dtype != t) return nullptr;
    using Terms = std::vector<std::pair<bool, Expr>>;  // (subtracted, term): arith::SumTerms
    const Terms a = arith::SumTerms(cmp->a), b = arith::SumTerms(cmp->b);
    for (const Terms* v : {&a, &b}) {
      for (const auto& term : *v) {
        if (term.second->dtype != t) return nullptr;
      }
    }
    for (const bool in_a : {true, false}) {
      const Terms& side = in_a ? a : b;
      for (size_t i = 0; i < side.size(); ++i) {
        if (!As<Var>(side[i].second)) continue;
        const auto [subtracted, u] = side[i];
        Terms rest = side;
        rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
        // u's side s = (+/-) u + rest, the other side o. Then `s cmp o` becomes
        //   u added:       u cmp o - rest   (u where s was)
        //   u subtracted:  rest - o cmp u   (u where o was)
        Terms moved = subtracted ? rest : (in_a ? b : a);
        for (const auto& [neg, e] : subtracted ? (in_a ? b : a) : rest) moved.push_back({!neg, e});
        const Expr x = an_.Simplify(arith::SumOfTerms(moved, t));
        if (!Fits(x)) continue;
        const bool u_left = subtracted != in_a;
        return u_left ? Binary::Make(cmp->op, u, x) : Binary::Make(cmp->op, x, u);
      }
    }
    return nullptr;
  }

  /// True when `e`, evaluated as written in 32 bits, provably never overflows: every
  /// intermediate sum and product stays in int32. Leaves hold values of their own type.
  bool Fits(const Expr& e) {
    if (const auto* imm = As<IntImm>(e)) return imm->value >= kInt32Min && imm->value <= kInt32Max;
    if (const auto* s = As<Select>(e)) return Fits(s->t) && Fits(s->f);
    const auto* b = As<Binary>(e);
    if (!b || !IsArith(b->op)) return true;
    if (!Fits(b->a) || !Fits(b->b)) return false;
    arith::IntBound r = an_.BoundOfSimplified(e);
    return r.min && r.max && *r.min >= kInt32Min && *r.max <= kInt32Max;
  }

  /// `e` as an int64 expression of the same value, with 64-bit arithmetic wherever 32-bit
  /// arithmetic could overflow (sub-expressions that fit are widened once, as a whole,
  /// see WidenFitting). With tl.loop_terms_apart, sums are left chains (`base + x +
  /// y`, not `base + (x + y)`), which keeps a split sum's loop terms last.
  Expr Widen(const Expr& e) {
    const DType i64 = DType::Int(64);
    if (!IsNarrowInt(e)) return e->dtype.IsInt() ? Cast::Make(i64, e) : e;
    if (const auto* imm = As<IntImm>(e)) return MakeInt(imm->value, i64);
    if (Fits(e)) return WidenFitting(e);
    if (const auto* s = As<Select>(e)) return Select::Make(s->cond, Widen(s->t), Widen(s->f));
    const auto* b = As<Binary>(e);
    if (split_loop_terms_ && b && (b->op == BinOp::kAdd || b->op == BinOp::kSub)) {
      return Chain(b->op, Widen(b->a), Widen(b->b));
    }
    if (b && IsArith(b->op)) return Binary::Make(b->op, Widen(b->a), Widen(b->b));
    return Cast::Make(i64, e);
  }

  /// A sum that never overflows in 32 bits, widened once; with tl.loop_terms_apart, when
  /// some of its terms are constants once the innermost loops unroll (arith::SplitInnerLoopTerms) and others
  /// are not, as two widened parts, the loops' last: `base + int64(tx * 8) + int64(u * 64)`,
  /// not `base + int64(u * 64 + tx * 8)`. nvcc splits the sign extension of a 32-bit sum only
  /// where it proves the sum does not wrap, so the grouped form computes every address of an
  /// unrolled loop in full (a 64-bit add, two LEAs and an OR per cp.async in upstream's
  /// sparse MLA producers), the split one address plus immediate offsets. Alone (H200,
  /// BENCHMARKS.md, twenty-fourth session) it made upstream's seesaw sparse MLA forward 7%
  /// faster and its pipelined one 9% slower (ptxas then spilled the producer's hoisted shared
  /// addresses); with the code generator's half (shared addresses printed the same way) both
  /// kernels' producers take upstream's form in SASS (seesaw 1.53 -> 1.19 ms; twenty-fifth session).
  Expr WidenFitting(const Expr& e) {
    const DType i64 = DType::Int(64);
    if (!split_loop_terms_) return Cast::Make(i64, e);
    auto [others, loop] = arith::SplitInnerLoopTerms(e, loops_);
    if (!others || !Fits(others) || !Fits(loop)) return Cast::Make(i64, e);
    return Binary::Make(BinOp::kAdd, Cast::Make(i64, others), Cast::Make(i64, loop));
  }

  /// `a op rhs` (op + or -) with the sums of `rhs` rotated into a left chain:
  /// a + (x + y) = (a + x) + y, a - (x + y) = (a - x) - y, and so on. Exact in 64 bits:
  /// the terms are index values that 32 or 64 bits hold.
  static Expr Chain(BinOp op, const Expr& a, const Expr& rhs) {
    const auto* r = As<Binary>(rhs);
    if (!r || (r->op != BinOp::kAdd && r->op != BinOp::kSub)) return Binary::Make(op, a, rhs);
    const BinOp second = op == BinOp::kAdd ? r->op : (r->op == BinOp::kAdd ? BinOp::kSub : BinOp::kAdd);
    return Chain(second, Chain(op, a, r->a), r->b);
  }

  const bool force_;
  const bool split_loop_terms_;  ///< tl.loop_terms_apart (WidenFitting)
  arith::Analyzer an_;
  std::unordered_map<const BufferNode*, bool> wide_;
  /// variables of the loops around this point, outermost first; null: one that stays rolled
  std::vector<const Var*> loops_;
};

}  // namespace

ir::PrimFunc LegalizeIndexWidth(const ir::PrimFunc& f, PassContext& ctx) {
  auto it = ctx.config.find("tl.config_index_bitwidth");
  std::string bits = it == ctx.config.end() ? "" : it->second;
  if (!bits.empty() && bits != "32" && bits != "64") {
    TL_USER_ERROR(f->span) << "pass config tl.config_index_bitwidth must be 32 or 64, got '" << bits << "'";
  }
  if (bits == "32") return f;
  IndexWidener w(f, bits == "64", ConfigOn(ctx, "tl.loop_terms_apart", true));
  ir::Stmt body = w.Mutate(f->body);
  for (const std::string& name : w.widened_buffers) {
    ctx.remarks.push_back("index width: offsets into " + name + " computed in 64 bits (" +
                          (bits == "64" ? std::string("tl.config_index_bitwidth=64")
                                        : std::string("it may hold 2^31 elements or more")) + ")");
  }
  if (w.widened_other) {
    ctx.remarks.push_back("index width: " + std::to_string(w.widened_other) +
                          " index comparison(s), cast(s) or grid size(s) computed in 64 bits (their values may pass 2^31)");
  }
  return body == f->body ? f : ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("legalize-index-width", LegalizeIndexWidth);

}  // namespace tl::transform
