// SPDX-License-Identifier: Apache-2.0
/// \file cuda-vectorize-loops: a T.vectorized loop that copies elements from one buffer to
/// another (or does several such copies side by side, between distinct buffers) becomes one
/// 16-, 8- or 4-byte access per group of consecutive elements.
///
/// Codegen unrolls a T.vectorized loop, but NVRTC does not merge the unrolled element
/// accesses itself: `A_local[v] = A[base + v]` over 8 halves stayed eight 2-byte loads. This
/// pass turns such a copy into `vec_copy(&dst[first], &src[first], bytes)` (tl::copy: one
/// load and one store of a register vector) for each group of k consecutive elements, when
/// it can prove, for both buffers:
///   - consecutive: element j of a group is `j` elements after its first (the loop's lets
///     inlined, so `index = i * n + v; B[index // w, index % w]` counts);
///   - aligned: the group's first element is a multiple of k from the buffer's start, and
///     the buffer's start is aligned to the vector (global tensors: 16 bytes, which the
///     runtime checks; shared buffers: 128; register arrays: as codegen declares them,
///     tl::cuda::LocalAlignment);
///   - contiguous in memory: a swizzled shared tile only permutes whole 16-byte chunks, so
///     a group of at most 16 bytes inside one row stays contiguous when rows are a multiple
///     of 16 bytes.
/// The copy's buffers must differ (tensor parameters are __restrict__, and distinct shared
/// buffers that are live together never share bytes), so reading a group before writing it
/// changes nothing. A loop it cannot vectorize stays element by element, with a remark.
#include <algorithm>
#include <string>

#include "../../arith/arith_internal.h"
#include "copy_lowering.h"
#include "pass_helpers.h"
#include "shared_plan.h"
#include "tl/arith/simplify.h"
#include "tl/ir/equal.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/transform/pass.h"

namespace tl::transform {

using namespace ir;  // NOLINT: implementation file

namespace {

std::string Where(const Span& s) { return s.Defined() ? " at line " + std::to_string(s.line) : ""; }

/// The loop body without its leading lets (their values substituted into what follows).
Stmt InlineLets(const Stmt& body) {
  const auto* seq = As<Seq>(body);
  if (!seq) return body;
  std::unordered_map<const Var*, Expr> lets;
  auto sub = [&](const Var* v) -> Expr {
    auto it = lets.find(v);
    return it == lets.end() ? nullptr : it->second;
  };
  std::vector<Stmt> rest;
  for (const Stmt& s : seq->stmts) {
    if (const auto* let = As<LetStmt>(s); let && rest.empty()) {
      lets[let->var.get()] = Substitute(let->value, sub);
    } else {
      rest.push_back(Substitute(s, sub));
    }
  }
  return rest.size() == 1 ? rest[0] : Seq::Make(rest, seq->span);
}

class LoopVectorizer : public IRMutator {
 public:
  LoopVectorizer(const Stmt& body, PassContext& ctx)
      : ctx_(ctx), gemm_(cuda::GemmOperands(body)), wgmma_(cuda::WgmmaOperands(body)),
        promise_(cuda::DynamicAlignment(ctx)) {
    group_walks_ = cuda::ConfigOn(ctx, "tl.group_register_walks", true);
  }
  int vectorized = 0;

 protected:
  /// Lets before a loop (`index_base = i * 1024 + tx * 4`) take part in its proofs: a let
  /// is a statement whose variable is bound once and visible only after it, so recording
  /// every one seen is safe (a variable never names two values).
  Stmt Mutate_(const LetStmt* op, const Stmt& self) override {
    lets_[op->var.get()] = Substitute(op->value, [&](const Var* v) -> Expr { return Let(v); });
    return IRMutator::Mutate_(op, self);
  }

  Stmt Mutate_(const For* op, const Stmt& self) override {
    Stmt body = Mutate(op->body);
    if (op->for_kind == ForKind::kVectorized) {
      std::string why;
      if (Stmt v = Vectorize(op, body, &why)) return v;
      ctx_.remarks.push_back("T.vectorized loop" + Where(op->span) + ": element by element (" + why + ")");
    }
    if (op->for_kind == ForKind::kUnrolled && op->annotations.count(cuda::kRegisterWalk) && group_walks_) {
      if (Stmt v = VectorizeWalk(op, body)) return v;
    }
    return body == op->body ? self
                            : For::Make(op->var, op->min, op->extent, op->for_kind, body, op->annotations, op->span);
  }

 private:
  Stmt Vectorize(const For* op, const Stmt& body, std::string* why) {
    int64_t n = 0;
    if (!AsConstInt(op->extent, &n)) return *why = "its extent is not a compile-time constant", nullptr;
    Stmt inner = InlineLets(body);
    // Guards that hold or fail for the whole loop may stay around the vector copies (a
    // row's guard and the tensor's edge guard of an epilogue's grouped copy).
    std::vector<const IfThenElse*> guards;
    while (const auto* guard = As<IfThenElse>(inner)) {
      if (guard->else_case || UsesVar(guard->cond, op->var.get())) break;
      guards.push_back(guard);
      inner = guard->then_case;
    }
    // One copy `dst[...] = src[...]`, or several side by side (`A_local[k] = A[...];
    // B_local[k] = B[...]`, upstream's split-K GEMV): each becomes its own vector copies.
    std::vector<const BufferStore*> copies;
    if (const auto* seq = As<Seq>(inner)) {
      for (const Stmt& st : seq->stmts) copies.push_back(As<BufferStore>(st));
    } else {
      copies.push_back(As<BufferStore>(inner));
    }
    std::unordered_set<const BufferNode*> written, read;
    for (const BufferStore* store : copies) {
      const auto* load = store ? As<BufferLoad>(store->value) : nullptr;
      if (!load) return *why = "its body is not a copy of one buffer element into another", nullptr;
      const Buffer &dst = store->buffer, &src = load->buffer;
      if (dst.get() == src.get()) return *why = "it copies within one buffer", nullptr;
      if (dst->dtype != src->dtype || dst->dtype.bits % 8 != 0) {
        return *why = "its element types differ or are narrower than a byte", nullptr;
      }
      if (dst->dtype.bytes() != copies[0]->buffer->dtype.bytes()) {
        return *why = "its copies move elements of different sizes", nullptr;
      }
      // Copies done group by group instead of element by element: none may read or write
      // what another writes.
      if (written.count(dst.get()) || read.count(dst.get()) || written.count(src.get())) {
        return *why = "its copies write a buffer another of them reads or writes", nullptr;
      }
      written.insert(dst.get());
      read.insert(src.get());
    }
    const int64_t bytes = copies[0]->buffer->dtype.bytes();
    VarRef m = Var::Make(op->var->name, op->var->dtype);
    std::string names;
    for (const BufferStore* store : copies) {
      names += (names.empty() ? "" : ", ") + As<BufferLoad>(store->value)->buffer->name + " -> " + store->buffer->name;
    }
    for (int64_t width : {16, 8, 4}) {
      const int64_t k = width / bytes;
      if (k < 2 || n % k != 0) continue;
      // Element j of group m: v = min + m*k + j.
      auto lane = [&](int64_t j) {
        Expr v = op->min + m * MakeInt(k, op->var->dtype) + MakeInt(j, op->var->dtype);
        return [v, var = op->var.get()](const Var* x) -> Expr { return x == var ? v : nullptr; };
      };
      bool fits = true;
      for (const BufferStore* store : copies) {
        const auto* load = As<BufferLoad>(store->value);
        fits = fits && Fits(store->buffer, store->indices, k, width, lane) &&
               Fits(load->buffer, load->indices, k, width, lane);
      }
      if (!fits) continue;
      auto first = [&](const Buffer& b, const std::vector<Expr>& idx) {
        std::vector<Expr> out;
        for (const Expr& e : idx) out.push_back(an_.Simplify(Substitute(e, lane(0))));
        return Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b, out)});
      };
      std::vector<Stmt> vec;
      for (const BufferStore* store : copies) {
        const auto* load = As<BufferLoad>(store->value);
        vec.push_back(cuda::CallStmt(
            "vec_copy", {first(store->buffer, store->indices), first(load->buffer, load->indices), MakeInt(width)},
            store->span));
      }
      Stmt copy = vec.size() == 1 ? vec[0] : Seq::Make(vec, op->span);
      for (auto g = guards.rbegin(); g != guards.rend(); ++g)
        copy = IfThenElse::Make((*g)->cond, copy, nullptr, (*g)->span);
      ++vectorized;
      ctx_.remarks.push_back("T.vectorized loop" + Where(op->span) + " (" + names + "): " + std::to_string(width) +
                             "-byte accesses");
      if (n == k)
        return Substitute(copy, [&](const Var* x) -> Expr { return x == m.get() ? MakeInt(0, m->dtype) : nullptr; });
      return For::Make(m, MakeInt(0, m->dtype), MakeInt(n / k, m->dtype), ForKind::kUnrolled, copy, {}, op->span);
    }
    *why = "no 4-, 8- or 16-byte group of its elements is provably consecutive and aligned in " +
           std::string(copies.size() == 1 ? "both " : "every buffer of ") + names;
    return nullptr;
  }

  /// A register walk `for l in unroll(n): D[f(l)] = e(l)` (a T.Parallel over a register
  /// fragment, a copy between one and a tile) whose accesses to memory (shared tiles,
  /// tensors) touch consecutive, aligned elements for consecutive l: in groups of k,
  ///   for m in unroll(n / k):
  ///     vec_copy(&t[0], &S[g(m k)], bytes)       (each memory load S[g(l)] of e)
  ///     for j in unroll(k): D'[j] = e(m k + j)    (S[g(l)] read as t[j])
  ///     vec_copy(&D[f(m k)], &D'[0], bytes)       (when D is memory; else D' is D)
  /// The register work stays element by element (registers have no access cost); each
  /// memory access becomes one 4-, 8- or 16-byte access per group instead of k. Shared tiles
  /// count as swizzled in 16-byte chunks whatever their layout (a group stays inside one
  /// chunk of a row of whole chunks). Loads that do not depend on l (a per-row scale) stay.
  /// D must not be read by e (a group reads everything before writing), e calls nothing
  /// with effects, and no load of e that moves within a group is under a select (a guarded
  /// load may not be read out of its guard). Guards around the store (a row's
  /// `i < actual_rows`, the tensor's edge) and memory loads (a per-row scale, under its edge
  /// guard too) that are the same for every register of a group (UniformInGroups) are read
  /// once per group, at its first register.
  Stmt VectorizeWalk(const For* op, const Stmt& body) {
    int64_t n = 0, lo = -1;
    if (!AsConstInt(op->extent, &n) || !AsConstInt(op->min, &lo) || lo != 0 || n < 2) return nullptr;
    const Var* var = op->var.get();
    Expr guard;
    Stmt inner = body;
    while (const auto* branch = As<IfThenElse>(inner)) {
      if (branch->else_case) return nullptr;
      guard = guard ? And(guard, branch->cond) : branch->cond;
      inner = branch->then_case;
    }
    const auto* store = As<BufferStore>(inner);
    if (!store) return nullptr;
    auto in_memory = [](const Buffer& b) { return b->scope == Scope::kShared || b->scope == Scope::kGlobal; };
    std::vector<const BufferLoad*> loads;  // the memory loads that move with l
    std::unordered_set<const BufferLoad*> uniform;  // those that move only from group to group
    bool ok = true;
    if (guard) {
      // read once per group, before the group's store: it may not read what the store writes
      ForEachExpr(guard, [&](const Expr& e) {
        if (const auto* load = As<BufferLoad>(e); load && load->buffer.get() == store->buffer.get()) ok = false;
        if (const auto* call = As<Call>(e); call && !IsPureCall(call)) ok = false;
      });
    }
    std::vector<Expr> selects;
    ForEachExpr(store->value, [&](const Expr& e) {
      if (As<Select>(e)) selects.push_back(e);
      if (const auto* load = As<BufferLoad>(e)) {
        if (load->buffer.get() == store->buffer.get()) ok = false;
        bool moves = false, same_in_group = true;
        for (const Expr& i : load->indices) {
          moves |= UsesVar(i, var);
          same_in_group = same_in_group && UniformInGroups(i, var, n, 2);
        }
        if (in_memory(load->buffer) && moves) {
          if (same_in_group) {
            uniform.insert(load);
          } else {
            loads.push_back(load);
          }
        }
      }
      if (const auto* call = As<Call>(e); call && !IsPureCall(call)) ok = false;
    });
    // A guarded load (`in_bounds ? A[i] : 0`) read as part of a group's vector would be read
    // out of its guard; one the same across the group stays where it is, under its guard.
    for (const Expr& sel : selects) {
      ForEachExpr(sel, [&](const Expr& e) {
        ok = ok && std::find(loads.begin(), loads.end(), As<BufferLoad>(e)) == loads.end();
      });
    }
    const bool store_in_memory = in_memory(store->buffer);
    if (!ok || (loads.empty() && !store_in_memory)) return nullptr;
    VarRef m = Var::Make(op->var->name, op->var->dtype);
    for (int64_t k : {8, 4, 2}) {
      if (n % k != 0) continue;
      auto lane = [&](int64_t j) {
        Expr v = m * MakeInt(k, op->var->dtype) + MakeInt(j, op->var->dtype);
        return [v, var](const Var* x) -> Expr { return x == var ? v : nullptr; };
      };
      auto fits = [&](const Buffer& b, const std::vector<Expr>& idx) {
        const int64_t width = k * b->dtype.bytes();
        if (b->dtype.bits % 8 != 0 || (width != 4 && width != 8 && width != 16)) return false;
        int64_t cols = 0;
        if (b->scope == Scope::kShared &&
            (!AsConstInt(b->shape.back(), &cols) || cols * b->dtype.bytes() % 16 != 0)) {
          return false;
        }
        return Fits(b, idx, k, width, lane);
      };
      bool all = !store_in_memory || fits(store->buffer, store->indices);
      for (const BufferLoad* load : loads) all = all && fits(load->buffer, load->indices);
      if (all && guard && !UniformInGroups(guard, var, n, k)) all = false;
      for (const BufferLoad* load : uniform) {
        for (const Expr& i : load->indices) all = all && UniformInGroups(i, var, n, k);
      }
      if (all) {
        Stmt grouped = GroupWalk(op, store, n, k, m, store_in_memory, uniform);
        if (!guard) return grouped;
        // the guard of each group's first register, around the group's accesses
        const auto* loop = As<For>(grouped);
        Expr first =
            Substitute(guard, [&](const Var* x) -> Expr { return x == var ? m * MakeInt(k, m->dtype) : nullptr; });
        return For::Make(loop->var, loop->min, loop->extent, loop->for_kind,
                         IfThenElse::Make(an_.Simplify(first), loop->body, nullptr, op->body->span), loop->annotations,
                         loop->span);
      }
    }
    return nullptr;
  }

  /// Whether `e` has one value over each group of k consecutive registers of 0 .. n-1: each
  /// of its largest terms that read the register index `var` and nothing else that varies
  /// (`((l & 3) >> 1) * 8`, a row offset inside `m_start + tx / 4 + ((l & 3) >> 1) * 8`)
  /// is a constant per register and the same across every group.
  bool UniformInGroups(const Expr& e, const Var* var, int64_t n, int64_t k) {
    struct Terms : IRVisitor {
      const Var* var = nullptr;
      std::vector<Expr> found;
      void Visit(const Expr& x) override {
        if (!UsesVar(x, var)) return;
        bool loads = false;
        ForEachExpr(x, [&](const Expr& y) { loads |= As<BufferLoad>(y) != nullptr; });
        if (!loads && !UsesVar(x, [&](const Var* v) { return v != var; })) {
          found.push_back(x);
          return;
        }
        IRVisitor::Visit(x);
      }
    } terms;
    terms.var = var;
    terms.Visit(e);
    for (const Expr& term : terms.found) {
      for (int64_t g = 0; g < n; g += k) {
        int64_t first = 0;
        for (int64_t j = 0; j < k; ++j) {
          int64_t v = 0;
          Expr at = an_.Simplify(Substitute(term, [&](const Var* x) -> Expr {
            return x == var ? MakeInt(g + j, var->dtype) : nullptr;
          }));
          if (!AsConstInt(at, &v)) return false;
          if (j == 0) first = v;
          if (v != first) return false;
        }
      }
    }
    return true;
  }

  Stmt GroupWalk(const For* op, const BufferStore* store, int64_t n, int64_t k, const VarRef& m,
                 bool store_in_memory, const std::unordered_set<const BufferLoad*>& uniform) {
    const Var* var = op->var.get();
    VarRef j = Var::Make("j", op->var->dtype);
    // The loads the same across a group read at its first register.
    struct AtGroupStart : IRMutator {
      const std::unordered_set<const BufferLoad*>* uniform;
      std::function<Expr(const Var*)> first;
      Expr Mutate_(const BufferLoad* load, const Expr& self) override {
        return uniform->count(load) ? Substitute(self, first) : IRMutator::Mutate_(load, self);
      }
    } at_start;
    at_start.uniform = &uniform;
    at_start.first = [&](const Var* x) -> Expr { return x == var ? m * MakeInt(k, m->dtype) : nullptr; };
    Expr l = m * MakeInt(k, op->var->dtype) + j;
    auto at_l = [&](const Var* x) -> Expr { return x == var ? l : nullptr; };
    auto first = [&](const Var* x) -> Expr { return x == j.get() ? MakeInt(0, j->dtype) : nullptr; };
    auto address = [&](const Buffer& b, const std::vector<Expr>& idx) {
      std::vector<Expr> at;
      for (const Expr& e : idx) at.push_back(an_.Simplify(Substitute(e, first)));
      return Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b, at)});
    };
    std::vector<Stmt> pre;
    // Each distinct memory load that moves with l: one vector load into registers t[0..k).
    struct Hoist : IRMutator {
      GroupedLoads* self;
      Expr Mutate_(const BufferLoad* load, const Expr& e) override { return self->Replace(load, e); }
    };
    GroupedLoads grouped{this, j, k, store->span, &pre};
    Hoist hoist;
    hoist.self = &grouped;
    Expr value = hoist.Mutate(Substitute(at_start.Mutate(store->value), at_l));
    std::vector<Expr> idx;
    for (const Expr& e : store->indices) idx.push_back(Substitute(e, at_l));
    std::vector<Stmt> body = pre;
    if (store_in_memory) {
      Buffer out = BufferNode::Make(store->buffer->name + "_group", store->buffer->dtype, {MakeInt(k)}, Scope::kLocal);
      body.insert(body.begin(), Allocate::Make(out, nullptr, store->span));
      body.push_back(For::Make(j, MakeInt(0, j->dtype), MakeInt(k, j->dtype), ForKind::kUnrolled,
                               BufferStore::Make(out, {j}, value, store->span), {}, op->span));
      body.push_back(cuda::CallStmt("vec_copy", {address(store->buffer, idx), address(out, {MakeInt(0)}),
                                                 MakeInt(k * store->buffer->dtype.bytes())}, store->span));
    } else {
      body.push_back(For::Make(j, MakeInt(0, j->dtype), MakeInt(k, j->dtype), ForKind::kUnrolled,
                               BufferStore::Make(store->buffer, idx, value, store->span), {}, op->span));
    }
    ++vectorized;
    ++walks_;
    return For::Make(m, MakeInt(0, m->dtype), MakeInt(n / k, m->dtype), ForKind::kUnrolled, Seq::Make(body, op->span),
                     op->annotations, op->span);
  }

  /// The memory loads of one register walk's group, each read once as a vector (GroupWalk).
  struct GroupedLoads {
    LoopVectorizer* owner;
    VarRef j;
    int64_t k;
    Span span;
    std::vector<Stmt>* pre;
    std::vector<std::pair<Expr, Buffer>> seen;  ///< (load at lane j, its registers)

    Expr Replace(const BufferLoad* load, const Expr& e) {
      if (load->buffer->scope != Scope::kShared && load->buffer->scope != Scope::kGlobal) return e;
      bool moves = false;
      for (const Expr& i : load->indices) moves |= UsesVar(i, j.get());
      if (!moves) return e;
      for (const auto& [expr, regs] : seen) {
        if (StructuralEqual(expr, e)) return BufferLoad::Make(regs, {j});
      }
      Buffer regs = BufferNode::Make(load->buffer->name + "_group", load->buffer->dtype, {MakeInt(k)}, Scope::kLocal);
      std::vector<Expr> at;
      for (const Expr& i : load->indices) {
        at.push_back(owner->an_.Simplify(
            Substitute(i, [&](const Var* x) -> Expr { return x == j.get() ? MakeInt(0, j->dtype) : nullptr; })));
      }
      pre->push_back(Allocate::Make(regs, nullptr, span));
      pre->push_back(cuda::CallStmt(
          "vec_copy",
          {Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(regs, {MakeInt(0)})}),
           Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(load->buffer, at)}),
           MakeInt(k * load->buffer->dtype.bytes())},
          span));
      seen.emplace_back(e, regs);
      return BufferLoad::Make(regs, {j});
    }
  };

 public:
  int walks() const { return walks_; }

 private:
  int walks_ = 0;
  /// tl.group_register_walks=0: register walks stay element by element (for comparisons).
  bool group_walks_ = true;

  template <typename Lane>
  bool Fits(const Buffer& b, const std::vector<Expr>& idx, int64_t k, int64_t width, const Lane& lane) {
    if (cuda::BaseAlignment(b, an_) < width) return false;
    if (b->scope == Scope::kShared && cuda::Swizzled(b, gemm_, wgmma_)) {
      // The swizzles move whole 16-byte chunks: rows of whole chunks keep a group together.
      int64_t cols = 0;
      if (width > 16 || !AsConstInt(b->shape.back(), &cols) || cols * b->dtype.bytes() % 16 != 0) return false;
    }
    auto offset = [&](int64_t j) {
      Expr off = MakeInt(0);
      for (size_t d = 0; d < idx.size(); ++d) off = off + Substitute(idx[d], lane(j)) * b->StrideOf(d);
      return an_.Simplify(Substitute(off, [&](const Var* v) -> Expr { return Let(v); }));
    };
    Expr first = offset(0);
    arith::detail::LinearForm f = arith::detail::ParseLinear(Promised(first));
    if (f.overflow || f.constant % k != 0) return false;
    for (const auto& term : f.terms) {
      if (term.second % k != 0) return false;
    }
    for (int64_t j = 1; j < k; ++j) {
      int64_t step = 0;
      if (!AsConstInt(an_.Simplify(offset(j) - first), &step) || step != j) return false;
    }
    return true;
  }

  Expr Promised(const Expr& e) { return cuda::PromisedMultiples(e, promise_, an_); }

  Expr Let(const Var* v) const {
    auto it = lets_.find(v);
    return it == lets_.end() ? nullptr : it->second;
  }

  PassContext& ctx_;
  std::unordered_map<const Var*, Expr> lets_;  ///< enclosing lets, their values with earlier lets inlined
  std::unordered_set<const BufferNode*> gemm_, wgmma_;
  cuda::AlignmentPromise promise_;  ///< dynamic sizes this variant may take as multiples
  arith::Analyzer an_;
};

}  // namespace

ir::PrimFunc CudaVectorizeLoops(const ir::PrimFunc& f, PassContext& ctx) {
  LoopVectorizer v(f->body, ctx);
  ir::Stmt body = v.Mutate(f->body);
  if (!v.vectorized) return f;
  if (v.walks()) {
    ctx.remarks.push_back(std::to_string(v.walks()) +
                          " register walk(s): their shared-memory and tensor accesses in 4-, 8- or 16-byte groups");
  }
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-vectorize-loops", CudaVectorizeLoops);

}  // namespace tl::transform
