// SPDX-License-Identifier: Apache-2.0
/// \file Which threads each fragment's uses run on (fragment_uses.h).
#include "fragment_uses.h"

#include <algorithm>
#include <unordered_set>

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class UseRanges : public IRVisitor {
 public:
  UseRanges(const std::function<bool(const Expr&)>& is_thread_index, int64_t threads)
      : is_index_(is_thread_index), threads_(threads), running_{true, ThreadRange{0, threads}} {}
  std::unordered_map<const BufferNode*, FragmentUses> uses;

  using IRVisitor::Visit;
  void Visit(const Stmt& s) override {
    if (!s) return;
    Span prev = span_;
    if (s->span.Defined()) span_ = s->span;
    IRVisitor::Visit(s);
    span_ = prev;
  }

 protected:
  void Visit_(const LetStmt* op) override {
    if (IsIndex(op->value)) {
      aliases_.insert(op->var.get());
    } else if (OnThread(op->value)) {
      thread_vars_.insert(op->var.get());
    }
    IRVisitor::Visit_(op);
  }
  void Visit_(const IfThenElse* op) override {
    if (!OnThread(op->cond)) return IRVisitor::Visit_(op);
    const RunningThreads outer = running_;
    const auto [then_threads, else_threads] =
        outer.Branches(op->cond, [&](const Expr& e) { return IsIndex(e); }, threads_);
    Visit(op->cond);
    running_ = then_threads;
    Visit(op->then_case);
    if (op->else_case) {
      running_ = else_threads;
      Visit(op->else_case);
    }
    running_ = outer;
  }
  void Visit_(const BufferLoad* op) override {
    Note(op->buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferStore* op) override {
    Note(op->buffer);
    IRVisitor::Visit_(op);
  }
  void VisitRegion(const Region& r) override {
    if (r.buffer) Note(r.buffer);
    IRVisitor::VisitRegion(r);
  }

 private:
  bool IsIndex(const Expr& e) const {
    const auto* v = As<Var>(e);
    return (v && aliases_.count(v) > 0) || is_index_(e);
  }
  bool OnThread(const Expr& e) const {
    bool found = false;
    ForEachExpr(e, [&](const Expr& x) {
      const auto* v = As<Var>(x);
      found = found || IsIndex(x) || (v && thread_vars_.count(v) > 0) || HasEffect(As<Call>(x), kThreadIndex);
    });
    return found;
  }
  void Note(const Buffer& b) {
    if (!b || b->scope != Scope::kFragment) return;
    auto [it, fresh] = uses.emplace(b.get(), FragmentUses{running_.known, running_.range, span_});
    FragmentUses& u = it->second;
    if (fresh || !u.one_range) return;
    if (!running_.known || !u.OnlyIn(running_.range)) {
      u.one_range = false;
      u.other = span_;
    }
  }

  const std::function<bool(const Expr&)>& is_index_;
  int64_t threads_;
  std::unordered_set<const Var*> aliases_, thread_vars_;
  RunningThreads running_;
  Span span_;
};

}  // namespace

FragmentUses::FragmentUses(bool known, const ThreadRange& r, const Span& first) : one_range(known), first(first) {
  if (known) threads = r;
}

std::unordered_map<const ir::BufferNode*, FragmentUses> FragmentUseRanges(
    const ir::Stmt& body, const std::function<bool(const ir::Expr&)>& is_thread_index, int64_t threads) {
  UseRanges finder(is_thread_index, threads);
  finder.Visit(body);
  return std::move(finder.uses);
}

}  // namespace tl::transform
