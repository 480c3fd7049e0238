// SPDX-License-Identifier: Apache-2.0
/// \file cuda-vectorize-atomics: float atomic adds into global memory, issued by an unrolled
/// register walk, become one vector reduction per 2 or 4 consecutive floats on sm_90+.
///
/// A fragment's atomic update of a global tensor (attention backward's
/// `T.atomic_add(dQ[...], dq[i, j])`, split-K epilogues) lowers to one scalar atomic per
/// register. mma accumulators hold column pairs, so registers 2m and 2m+1 of a thread land
/// on neighbouring floats; sm_90's `red.global.add.v2.f32` adds both with one request (each
/// element still its own atomic add, so no result changes), half the instructions and L2
/// operations. The pass checks, for every register of the walk (the loop is unrolled with a
/// constant trip count), that the group's addresses are consecutive and that the first is a
/// multiple of the vector width from the tensor's start (tensors are 16-byte aligned: the
/// runtime refuses others). An update under guards (ifs without else around it, or the
/// bounds guard's `cond ? atomic_add(...) : 0`) is vectorized when every guard has the same
/// value for all registers of a group (attention backward's row bound `i < seqlen`: a
/// register pair shares its row); the vector update then runs under the first register's
/// guards. Anything else is left as it is.
///
/// The same holds for a run of `width` statements in a row that update consecutive floats
/// under the same guards: what T.atomic_addx4(dst[row, j:j + 4], tile[i, k:k + 4]) lowers to
/// (sparse attention backward's scatter of dKV rows through a gathered index).
///
/// When the group's values are consecutive floats of one shared tile (that scatter reads a
/// staging tile), they are read with one vector load: four scalar reads at a 16-byte stride
/// across the warp's lanes take four bank-conflicted wavefronts each.

#include "tl/arith/simplify.h"
#include "tl/ir/equal.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/transform/pass.h"
#include "pass_helpers.h"

namespace tl::transform {

using namespace ir;  // NOLINT: implementation file

namespace {

/// The unrolled walk's update: atomic_add(address_of(G[idx]), value) on a global float tensor,
/// under `guards` (conditions that must all hold for it to run).
struct Update {
  const BufferLoad* target = nullptr;
  Expr target_expr;  ///< the same load, as an expression
  Expr value;
  std::vector<Expr> guards;
};

bool AsAtomicAdd(const Expr& e, Update* out) {
  const auto* call = As<Call>(e);
  if (!IsIntrinsic(call, TL_INTRINSIC_NAME("atomic_add")) || call->args.size() != 2) return false;
  const auto* addr = As<Call>(call->args[0]);
  const auto* load = HasEffect(addr, kAddress) ? As<BufferLoad>(addr->args[0]) : nullptr;
  if (!load || load->buffer->scope != Scope::kGlobal || load->buffer->dtype != DType::Float(32)) return false;
  if (!load->buffer->strides.empty() || load->buffer->data || call->args[1]->dtype != DType::Float(32)) return false;
  out->target = load;
  out->target_expr = addr->args[0];
  out->value = call->args[1];
  return true;
}

bool AsUpdate(const Stmt& body, Update* out) {
  Stmt s = body;
  while (const auto* branch = As<IfThenElse>(s)) {
    if (branch->else_case) return false;
    out->guards.push_back(branch->cond);
    s = branch->then_case;
  }
  const auto* ev = As<Evaluate>(s);
  if (!ev) return false;
  if (const auto* sel = As<Select>(ev->value)) {  // the bounds guard of the update's address
    out->guards.push_back(sel->cond);
    return AsAtomicAdd(sel->t, out);
  }
  return AsAtomicAdd(ev->value, out);
}

/// Whether `e` is a multiple of `d` for every value of its variables (structurally).
bool Multiple(const Expr& e, int64_t d) {
  int64_t c;
  if (AsConstInt(e, &c)) return c % d == 0;
  const auto* b = As<Binary>(e);
  if (!b) return false;
  switch (b->op) {
    case BinOp::kAdd:
    case BinOp::kSub:
      return Multiple(b->a, d) && Multiple(b->b, d);
    case BinOp::kMul:
      return Multiple(b->a, d) || Multiple(b->b, d);
    case BinOp::kFloorMod:  // x - q*m: a multiple when both x and m are
      return Multiple(b->a, d) && Multiple(b->b, d);
    default:
      return false;
  }
}

class Vectorizer : public IRMutator {
 public:
  int vectorized = 0;

 protected:
  Stmt Mutate_(const Seq* op, const Stmt& self) override {
    Stmt mutated = IRMutator::Mutate_(op, self);
    const auto* seq = As<Seq>(mutated);
    if (!seq) return mutated;
    std::vector<Stmt> out;
    bool changed = false;
    for (size_t i = 0; i < seq->stmts.size();) {
      size_t taken = 0;
      for (size_t width : {4, 2}) {
        if (i + width <= seq->stmts.size() && (taken = VectorizeRun(seq->stmts, i, width, &out))) break;
      }
      if (taken) {
        changed = true;
        i += taken;
      } else {
        out.push_back(seq->stmts[i++]);
      }
    }
    return changed ? Seq::Make(out, seq->span) : mutated;
  }

  Stmt Mutate_(const For* op, const Stmt& self) override {
    Stmt body = Mutate(op->body);
    int64_t min = -1, n;
    Update u;
    if (op->for_kind == ForKind::kUnrolled && AsConstInt(op->min, &min) && min == 0 && AsConstInt(op->extent, &n) &&
        AsUpdate(body, &u)) {
      for (int64_t width : {4, 2}) {
        if (n % width == 0 && Consecutive(op->var.get(), u, n, width)) return Vectorize(op, u, n, width);
      }
    }
    return body == op->body ? self
                            : For::Make(op->var, op->min, op->extent, op->for_kind, body, op->annotations, op->span);
  }

 private:
  /// The element offset of the update at register `l` (a constant), simplified.
  Expr OffsetAt(const Var* var, const Update& u, int64_t l) {
    auto at = [&](const Var* v) -> Expr { return v == var ? MakeInt(l) : nullptr; };
    Expr offset = MakeInt(0);
    for (size_t k = 0; k < u.target->indices.size(); ++k) {
      offset = offset + Substitute(u.target->indices[k], at) * u.target->buffer->StrideOf(k);
    }
    return arith_.Simplify(offset);
  }

  /// `e` at register `l` (a constant), simplified.
  Expr At(const Var* var, const Expr& e, int64_t l) {
    return arith_.Simplify(Substitute(e, [&](const Var* v) -> Expr { return v == var ? MakeInt(l) : nullptr; }));
  }

  bool Consecutive(const Var* var, const Update& u, int64_t n, int64_t width) {
    for (int64_t g = 0; g < n; g += width) {
      Expr first = OffsetAt(var, u, g);
      if (!Multiple(first, width)) return false;
      for (int64_t e = 1; e < width; ++e) {
        int64_t step;
        if (!AsConstInt(arith_.Simplify(OffsetAt(var, u, g + e) - first), &step) || step != e) return false;
        for (const Expr& guard : u.guards) {  // the whole group runs, or none of it
          if (!StructuralEqual(At(var, guard, g + e), At(var, guard, g))) return false;
        }
      }
    }
    return true;
  }

  /// for m in unroll(n / width): atomic_add_vec(&G[idx(width*m)], v(width*m), ..., v(width*m + width-1))
  Stmt Vectorize(const For* op, const Update& u, int64_t n, int64_t width) {
    VarRef m = Var::Make(op->var->name, op->var->dtype);
    auto lane = [&](int64_t e) {
      Expr l = MakeInt(width) * m + MakeInt(e);
      return [l, var = op->var.get()](const Var* v) -> Expr { return v == var ? l : nullptr; };
    };
    std::vector<Expr> values;
    for (int64_t e = 0; e < width; ++e) values.push_back(Substitute(u.value, lane(e)));
    Stmt call = VectorUpdate(Substitute(u.target_expr, lane(0)), values, op->body->span);
    for (auto g = u.guards.rbegin(); g != u.guards.rend(); ++g) {
      call = IfThenElse::Make(Substitute(*g, lane(0)), call, nullptr, op->body->span);
    }
    ++vectorized;
    return For::Make(m, MakeInt(0), MakeInt(n / width), ForKind::kUnrolled, call, op->annotations, op->span);
  }

  /// stmts[i .. i + width) as one guarded vector update appended to `out` (returns width),
  /// when they update consecutive floats of one tensor, the first a multiple of `width` from
  /// its start, under structurally equal guards; 0 otherwise.
  size_t VectorizeRun(const std::vector<Stmt>& stmts, size_t i, size_t width, std::vector<Stmt>* out) {
    std::vector<Update> run(width);
    for (size_t e = 0; e < width; ++e) {
      if (!AsUpdate(stmts[i + e], &run[e])) return 0;
    }
    Expr first = Offset(run[0].target->buffer, run[0].target->indices);
    if (!Multiple(first, static_cast<int64_t>(width))) return 0;
    for (size_t e = 1; e < width; ++e) {
      int64_t step;
      if (run[e].target->buffer.get() != run[0].target->buffer.get() ||
          !AsConstInt(arith_.Simplify(Offset(run[e].target->buffer, run[e].target->indices) - first), &step) || step != static_cast<int64_t>(e)) {
        return 0;
      }
      if (run[e].guards.size() != run[0].guards.size()) return 0;
      for (size_t k = 0; k < run[0].guards.size(); ++k) {
        if (!StructuralEqual(arith_.Simplify(run[e].guards[k]), arith_.Simplify(run[0].guards[k]))) return 0;
      }
    }
    std::vector<Expr> values;
    for (const Update& u : run) values.push_back(u.value);
    Stmt call = VectorUpdate(run[0].target_expr, values, stmts[i]->span);
    for (auto g = run[0].guards.rbegin(); g != run[0].guards.rend(); ++g) {
      call = IfThenElse::Make(*g, call, nullptr, stmts[i]->span);
    }
    out->push_back(call);
    ++vectorized;
    return width;
  }

  /// atomic_add_vec(&target, values...), the values first read as one vector when they are
  /// consecutive elements of one shared tile (the first a multiple of their number from the
  /// tile's start, rows of whole 16-byte chunks, so a swizzle keeps them together).
  Stmt VectorUpdate(const Expr& target, std::vector<Expr> values, const Span& span) {
    std::vector<Stmt> pre;
    const auto* first = As<BufferLoad>(values[0]);
    const int64_t n = static_cast<int64_t>(values.size());
    int64_t cols = 0;
    bool grouped = first && first->buffer->scope == Scope::kShared && first->buffer->dtype == DType::Float(32) &&
                   AsConstInt(first->buffer->shape.back(), &cols) && cols * 4 % 16 == 0;
    Expr base = grouped ? Offset(first->buffer, first->indices) : nullptr;
    grouped = grouped && Multiple(base, n);
    for (int64_t e = 1; grouped && e < n; ++e) {
      const auto* load = As<BufferLoad>(values[e]);
      int64_t step = 0;
      grouped = load && load->buffer.get() == first->buffer.get() &&
                AsConstInt(arith_.Simplify(Offset(load->buffer, load->indices) - base), &step) && step == e;
    }
    if (grouped) {
      Buffer regs = BufferNode::Make(first->buffer->name + "_group", DType::Float(32), {MakeInt(n)}, Scope::kLocal);
      pre.push_back(Allocate::Make(regs, nullptr, span));
      pre.push_back(cuda::CallStmt("vec_copy",
                                   {Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(regs, {MakeInt(0)})}),
                                    Call::Make(DType::Handle(), "address_of", {values[0]}), MakeInt(4 * n)},
                                   span));
      for (int64_t e = 0; e < n; ++e) values[e] = BufferLoad::Make(regs, {MakeInt(e)});
    }
    std::vector<Expr> args{Call::Make(DType::Handle(), "address_of", {target})};
    args.insert(args.end(), values.begin(), values.end());
    pre.push_back(Evaluate::Make(Call::Make(DType::Void(), "atomic_add_vec", args), span));
    return pre.size() == 1 ? pre[0] : Seq::Make(pre, span);
  }

  /// The element offset of b[indices] from the buffer's start, simplified.
  Expr Offset(const Buffer& b, const std::vector<Expr>& indices) {
    Expr offset = MakeInt(0);
    for (size_t k = 0; k < indices.size(); ++k) offset = offset + indices[k] * b->StrideOf(k);
    return arith_.Simplify(offset);
  }


  arith::Analyzer arith_;
};

/// sm_90 and later: red.global.add.v2/v4.f32.
bool HasVectorReductions(const PassContext& ctx) { return ctx.Cuda().HasVectorReductions(); }

}  // namespace

ir::PrimFunc CudaVectorizeAtomics(const ir::PrimFunc& f, PassContext& ctx) {
  if (!HasVectorReductions(ctx)) return f;
  Vectorizer v;
  ir::Stmt body = v.Mutate(f->body);
  if (!v.vectorized) return f;
  ctx.remarks.push_back(std::to_string(v.vectorized) +
                        " register walk(s) or run(s) of float atomic adds into global memory: one vector reduction "
                        "(red.global.add.v2/v4.f32) per group of consecutive floats");
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-vectorize-atomics", CudaVectorizeAtomics);

}  // namespace tl::transform
