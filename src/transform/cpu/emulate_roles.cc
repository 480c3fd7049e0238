// SPDX-License-Identifier: Apache-2.0
/// \file Warpgroup roles in the CPU's emulation of a block (emulate_threads.h).
///
/// Upstream's hand warp-specialized kernels give their warpgroups roles in one top-level
/// `if tx < 128: ... elif tx < 256: ... else: ...` whose branches wait on each other's
/// mbarriers (a producer fills stages the consumers wait for, the consumers free them): no
/// program order of the branches runs them, so lockstep stops at the first wait that cannot
/// pass. Such branches (or sibling branches on disjoint ranges, as `with T.ws(i):` blocks
/// become) are roles that run at the same time, each its own lockstep
/// emulation of its threads on a CPU thread of its own (templates/tl/cpu/roles.h); the
/// mbarriers then block a role until another completes the phase, under one lock that also
/// orders the tiles the roles hand each other. A wait that no running role can release
/// fails the call with its line, as in lockstep.
///
/// In the IR: `tl.cpu_roles(n)`, then `if (cpu_role(i)) { role i }` for each role, then
/// `tl.cpu_roles_end`; the C++ code generator makes each role a function run by
/// tl::cpu::Roles.
#include "emulate_threads.h"
#include "tl/ir/intrinsics.h"

namespace tl::transform::cpu {

namespace {

/// Whether `s`, run by a branch of `branch_threads` threads, waits on threads outside it: an
/// mbarrier wait, or a named barrier (T.sync_threads(id, n), T.named_barrier_arrive) whose
/// count is not the branch's own thread count.
bool Waits(const Stmt& s, int64_t branch_threads) {
  bool waits = false;
  ForEachExpr(s, [&](const Expr& e) {
    const auto* c = As<Call>(e);
    waits |= IsIntrinsic(c, TL_INTRINSIC_NAME("mbarrier_wait_parity")) ||
             IsIntrinsic(c, TL_INTRINSIC_NAME("named_barrier_arrive"));
    int64_t n = 0;
    if (IsIntrinsic(c, TL_INTRINSIC_NAME("named_barrier_sync")) && c->args.size() == 2) {
      waits |= !AsConstInt(c->args[1], &n) || n != branch_threads;
    }
  });
  return waits;
}

}  // namespace

/// A top-level branch on a range of the thread index whose statements wait on an mbarrier
/// (outside any loop: the roles join at the chain's end, which a loop would repeat).
bool ThreadEmulator::RoleSplit(const IfThenElse* br, const Expr& mask, const std::optional<ThreadRange>& range,
                               const std::optional<ThreadRange>& other) const {
  if (mask || loop_depth_ > 0 || !range || dims_.size() != 1) return false;
  return Waits(br->then_case, range->hi - range->lo) ||
         (br->else_case && Waits(br->else_case, other ? other->hi - other->lo : -1));
}


size_t ThreadEmulator::RoleRun(const std::vector<Stmt>& stmts, size_t i) const {
  if (loop_depth_ > 0 || dims_.size() != 1) return 0;
  std::vector<ThreadRange> taken;
  bool waits = false;
  size_t k = i;
  for (; k < stmts.size(); ++k) {
    const auto* br = As<IfThenElse>(stmts[k]);
    if (!br || br->else_case || !Varying(br->cond)) break;
    auto r = ThreadRangeOf(br->cond, [&](const Expr& e) { return IsThreadIndex(e); }, threads_);
    if (!r || r->Empty()) break;
    bool disjoint = true;
    for (const ThreadRange& o : taken) disjoint &= r->hi <= o.lo || o.hi <= r->lo;
    if (!disjoint) break;
    taken.push_back(*r);
    waits |= Waits(br->then_case, r->hi - r->lo);
  }
  return waits && k - i >= 2 ? k - i : 0;
}

void ThreadEmulator::EmitRoles(std::vector<Stmt>* out, const Span& span) {
  std::vector<std::vector<Stmt>> roles = std::move(roles_);
  roles_.clear();
  const int64_t n = static_cast<int64_t>(roles.size());
  out->push_back(AttrStmt::Make("tl.cpu_roles", {MakeInt(n)}, span));
  for (int64_t i = 0; i < n; ++i) {
    Expr which = Call::Make(DType::Bool(), "cpu_role", {MakeInt(i)});
    out->push_back(IfThenElse::Make(which, Seq::Make(roles[i], span), nullptr, span));
  }
  out->push_back(AttrStmt::Make("tl.cpu_roles_end", {}, span));
}

/// A named barrier of `count` threads met by the threads of several roles: the arrivals of
/// this role's threads that reach it (counted in lockstep), once, then for T.sync_threads a
/// wait for the phase they arrived at (templates/tl/cpu/mbarrier.h).
void ThreadEmulator::EmitRoleNamedBarrier(const Call* call, int64_t count, bool wait, const Stmt& s, const Expr& mask,
                                          std::vector<Stmt>* out) {
  const Span& span = s->span;
  Buffer arrivals = NewScalar("arrivals", DType::Int(32), MakeInt(0), span, out);
  Expr n = BufferLoad::Make(arrivals, {MakeInt(0)});
  out->push_back(ThreadLoop(BufferStore::Make(arrivals, {MakeInt(0)}, n + MakeInt(1), span), mask, span));
  Expr id = call->args.empty() ? MakeInt(0) : call->args[0];
  std::vector<Expr> args = {id, MakeInt(count), n};
  if (wait) args.push_back(MakeInt(span.line));
  const char* name = wait ? "cpu_named_barrier_sync" : "cpu_named_barrier_arrive";
  out->push_back(Evaluate::Make(Call::Make(DType::Void(), name, args), span));
}

}  // namespace tl::transform::cpu
