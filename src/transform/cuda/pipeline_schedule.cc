// SPDX-License-Identifier: Apache-2.0
/// \file The schedule of a T.Pipelined loop (see pipeline_schedule.h).
#include "pipeline_schedule.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "pass_helpers.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

bool IsProducer(const Stmt& s) {
  const auto* c = As<CopyOp>(s);
  return c && c->src.buffer->scope == Scope::kGlobal && c->dst.buffer->scope == Scope::kShared;
}

/// Buffers written by a statement (stores and tile-op destinations).
struct WriteCollector : IRVisitor {
  std::unordered_set<const BufferNode*> writes;
  void Visit_(const BufferStore* op) override {
    writes.insert(op->buffer.get());
    IRVisitor::Visit_(op);
  }
  void Visit_(const CopyOp* op) override { writes.insert(op->dst.buffer.get()); }
  void Visit_(const FillOp* op) override { writes.insert(op->dst.buffer.get()); }
  void Visit_(const ReduceOp* op) override { writes.insert(op->dst.buffer.get()); }
};

/// Whether a region's bounds read only variables, constants and the thread's own scalars
/// that the loop never writes (`cu_k_s_min = T.alloc_var(...)` set before the loop), so that
/// they can be evaluated ahead of the statements before them, iterations ahead.
bool IsPure(const Region& r, const std::unordered_set<const BufferNode*>& loop_writes) {
  bool pure = true;
  for (const Range& rg : r.ranges) {
    for (const Expr& e : {rg.min, rg.extent}) {
      struct LoadFinder : IRVisitor {
        const std::unordered_set<const BufferNode*>* loop_writes = nullptr;
        bool found = false;
        void Visit_(const BufferLoad* op) override {
          const bool own_scalar = (op->buffer->scope == Scope::kVar || op->buffer->scope == Scope::kLocal) &&
                                  !loop_writes->count(op->buffer.get());
          found |= !own_scalar;
          IRVisitor::Visit_(op);
        }
      } f;
      f.loop_writes = &loop_writes;
      f.Visit(e);
      pure = pure && !f.found;
    }
  }
  return pure;
}

/// Variables defined inside the loop body (lets): a producer hoisted to the top of the
/// body cannot use them.
std::unordered_set<const Var*> DefinedIn(const std::vector<Stmt>& stmts) {
  std::unordered_set<const Var*> out;
  for (const Stmt& s : stmts) {
    if (const auto* let = As<LetStmt>(s)) out.insert(let->var.get());
  }
  return out;
}

bool Mentions(const Region& r, const std::unordered_set<const Var*>& vars) {
  bool found = false;
  for (const Range& rg : r.ranges) {
    for (const Expr& e : {rg.min, rg.extent}) {
      struct VarFinder : IRVisitor {
        const std::unordered_set<const Var*>* vars;
        bool* found;
        void Visit_(const Var* v) override {
          if (vars->count(v)) *found = true;
        }
      } f;
      f.vars = &vars;
      f.found = &found;
      f.Visit(e);
    }
  }
  return found;
}

/// The buffers allocated inside `body`. Such a tile cannot be staged: its prologue loads
/// would run before it exists (a fragment that layout inference kept in shared memory, whose
/// allocation hoist-pipelined-allocations left in place, became an undeclared buffer in
/// codegen).
std::unordered_set<const BufferNode*> AllocatedIn(const Stmt& body) {
  struct AllocCollector : IRVisitor {
    std::unordered_set<const BufferNode*> buffers;
    void Visit_(const Allocate* a) override {
      buffers.insert(a->buffer.get());
      IRVisitor::Visit_(a);
    }
  } allocated;
  allocated.Visit(body);
  return allocated.buffers;
}

/// Adds the buffers statement `s` reads (element loads, GEMM operands, copy sources) to `read`.
void NoteReads(const Stmt& s, std::unordered_set<const BufferNode*>* read) {
  ForEachExpr(s, [&](const Expr& e) {
    if (const auto* load = As<BufferLoad>(e)) read->insert(load->buffer.get());
  });
  if (const auto* g = As<GemmOp>(s)) {
    read->insert(g->a.buffer.get());
    read->insert(g->b.buffer.get());
  }
  if (const auto* cp = As<CopyOp>(s)) read->insert(cp->src.buffer.get());
}

}  // namespace

std::vector<const CopyOp*> PipelineProducers(const For* op, std::string* why) {
  auto stmts = Flatten(op->body);
  auto defined = DefinedIn(stmts);
  const auto allocated = AllocatedIn(op->body);
  std::vector<const CopyOp*> producers;
  WriteCollector rest, loop_writes;
  loop_writes.Visit(op->body);
  std::unordered_set<const BufferNode*> read_so_far;  // statements before may not read it
  for (const Stmt& s : stmts) {
    const auto* c = As<CopyOp>(s);
    if (IsProducer(s) && IsPure(c->src, loop_writes.writes) && IsPure(c->dst, loop_writes.writes) &&
        !Mentions(c->src, defined) &&
        !Mentions(c->dst, defined) && !read_so_far.count(c->dst.buffer.get()) &&
        !allocated.count(c->dst.buffer.get())) {
      producers.push_back(c);
    } else {
      rest.Visit(s);
    }
    NoteReads(s, &read_so_far);
  }
  if (producers.empty()) {
    *why = "its body has no copy from global to shared memory that can be prefetched";
    return {};
  }
  std::unordered_set<const BufferNode*> seen;
  std::vector<const CopyOp*> kept;
  for (const CopyOp* c : producers) {
    if (rest.writes.count(c->dst.buffer.get()) || !seen.insert(c->dst.buffer.get()).second) continue;
    kept.push_back(c);
  }
  if (kept.empty()) *why = "its shared buffers are also written elsewhere in the loop";
  return kept;
}

std::vector<GatherCopy> PipelineGathers(const For* op, const std::vector<const CopyOp*>& producers,
                                        std::vector<std::string>* refused) {
  auto stmts = Flatten(op->body);
  auto defined = DefinedIn(stmts);
  const auto allocated = AllocatedIn(op->body);
  std::unordered_set<const BufferNode*> producer_dsts;
  for (const CopyOp* c : producers) producer_dsts.insert(c->dst.buffer.get());
  std::vector<GatherCopy> found;
  std::vector<size_t> at;  // statement index of each
  std::unordered_set<const BufferNode*> read_so_far;
  for (size_t i = 0; i < stmts.size(); ++i) {
    const Stmt& st = stmts[i];
    std::string why;
    if (auto g = MatchGatherCopy(st, &why)) {
      const BufferNode* dst = g->store->buffer.get();
      bool uses_defined = false, reads_tiles = false;
      ForEachExpr(st, [&](const Expr& e) {
        if (const auto* v = As<Var>(e)) uses_defined |= defined.count(v) > 0;
        if (const auto* l = As<BufferLoad>(e)) reads_tiles |= l->buffer->scope != Scope::kGlobal;
      });
      const std::string where = "the element copy into " + g->store->buffer->name + " at line " +
                                std::to_string(g->nest->span.line);
      if (uses_defined) {
        refused->push_back(where + " uses a value computed in the loop body");
      } else if (reads_tiles) {
        refused->push_back(where + " reads a tile (only global tensors are read ahead)");
      } else if (allocated.count(dst) || read_so_far.count(dst) || producer_dsts.count(dst)) {
        refused->push_back(where + ": its tile is allocated, read or copied into earlier in the body");
      } else {
        found.push_back(*g);
        at.push_back(i);
      }
    }
    NoteReads(st, &read_so_far);
  }
  // Nothing else in the loop may write the tile, or any tensor a gather reads.
  std::vector<GatherCopy> kept;
  for (size_t k = 0; k < found.size(); ++k) {
    WriteCollector others;
    for (size_t i = 0; i < stmts.size(); ++i) {
      if (i != at[k]) others.Visit(stmts[i]);
    }
    bool reads_written = false;
    ForEachExpr(stmts[at[k]], [&](const Expr& e) {
      if (const auto* l = As<BufferLoad>(e)) reads_written |= others.writes.count(l->buffer.get()) > 0;
    });
    if (others.writes.count(found[k].store->buffer.get()) || reads_written) {
      refused->push_back("the element copy into " + found[k].store->buffer->name + " at line " +
                         std::to_string(found[k].nest->span.line) + ": the loop also writes what it reads or writes");
      continue;
    }
    kept.push_back(found[k]);
  }
  return kept;
}

namespace {

/// In pipelined loops, copies name their tile through values bound earlier in the body
/// (`k0 = ko * bk; T.copy(A[by * bm, k0], A_s)`). Substituting those bindings when they
/// are plain index arithmetic lets such copies be prefetched (and proven aligned).
class InlineIndexLets : public IRMutator {
 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    Stmt inner = IRMutator::Mutate_(op, self);
    const auto* loop = As<For>(inner);
    if (!loop || loop->for_kind != ForKind::kPipelined) return inner;
    std::unordered_map<const Var*, Expr> values;
    auto subst = [&](const Expr& e) {
      return Substitute(e, [&](const Var* v) -> Expr {
        auto it = values.find(v);
        return it == values.end() ? nullptr : it->second;
      });
    };
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& st : Flatten(loop->body)) {
      if (const auto* let = As<LetStmt>(st)) {
        bool pure = true;
        ForEachExpr(st, [&](const Expr& e) { pure &= !As<BufferLoad>(e) && !As<Call>(e); });
        if (pure && let->var->dtype.IsInt()) values[let->var.get()] = subst(let->value);
        out.push_back(st);
        continue;
      }
      const auto* copy = As<CopyOp>(st);
      if (copy && !values.empty()) {
        Region src{copy->src.buffer, {}}, dst{copy->dst.buffer, {}};
        for (const Range& r : copy->src.ranges) src.ranges.push_back({subst(r.min), subst(r.extent)});
        for (const Range& r : copy->dst.ranges) dst.ranges.push_back({subst(r.min), subst(r.extent)});
        out.push_back(CopyOp::Make(src, dst, copy->span, copy->disable_tma));
        changed = true;
        continue;
      }
      out.push_back(st);
    }
    if (!changed) return inner;
    return For::Make(loop->var, loop->min, loop->extent, loop->for_kind, Seq::Make(out, loop->body->span),
                     loop->annotations, loop->span);
  }
};

}  // namespace

std::vector<Stmt> Flatten(const Stmt& s) {
  // Nested sequences too: hoist-pipelined-allocations puts a loop's hoisted tiles and the
  // loop in a sequence of their own, which must not hide the loop from its callers.
  return FlattenSeq(s);
}

void CheckWgmmaWaited(const For* loop, const std::function<bool(const BufferNode*)>& staged) {
  bool pending = false;
  ForEachExpr(loop->body, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    int64_t n = -1;
    if (HasEffect(call, kWgmmaInFlight)) {
      for (int k = 0; k < 2; ++k) {
        const auto* addr = As<Call>(call->args[k]);
        const auto* load = addr && !addr->args.empty() ? As<BufferLoad>(addr->args[0]) : nullptr;
        pending |= load && staged(load->buffer.get());
      }
    } else if (HasEffect(call, kWgmmaWait) && AsConstInt(call->args[0], &n) && n == 0) {
      pending = false;
    }
  });
  if (pending) {
    TL_USER_ERROR(loop->span) << "T.Pipelined: a T.wgmma_gemm on a tile this loop stages is not waited for with "
                                 "T.wait_wgmma(0) later in the same iteration; the next iteration's loads into "
                                 "its stage would overwrite operands its wgmmas may still read";
  }
}

bool HasProgramGroups(const For* loop) {
  bool found = false;
  ForEachExpr(loop->body, [&](const Expr& e) {
    found |= HasEffect(As<Call>(e), kProgramGroupCommit) || HasEffect(As<Call>(e), kProgramGroupWait);
  });
  return found;
}

void CheckNoProgramGroups(const For* loop) {
  struct Finder : IRVisitor {
    void Visit_(const Evaluate* ev) override {
      const auto* call = As<Call>(ev->value);
      if (HasEffect(call, kProgramGroupCommit) || HasEffect(call, kProgramGroupWait)) {
        TL_USER_ERROR(ev->span) << "T." << call->op << " inside a T.Pipelined loop that this compiler stages with "
                                << "cp.async groups of its own (its waits count them): commit and wait for "
                                << "T.ptx_cp_async copies outside the loop, or give it num_stages=0";
      }
    }
  } finder;
  finder.Visit(loop->body);
}

int64_t NumStages(const For* op) {
  auto it = op->annotations.find("num_stages");
  int64_t s = 0;
  if (it != op->annotations.end()) AsConstInt(it->second, &s);
  return s;
}

namespace {

/// Whether a statement's accesses are all synchronous element work: no tile op (a copy may
/// become a TMA store, which reads its shared source later), no GEMM (unless `gemms`: a T.gemm
/// other than T.wgmma_gemm is done with its operands when it returns) or asynchronous call.
struct Synchronous : IRVisitor {
  explicit Synchronous(bool gemms = false) : gemms_(gemms) {}
  bool ok = true;
  void Visit_(const CopyOp*) override { ok = false; }
  void Visit_(const GemmOp* op) override { ok &= gemms_ && !op->async_wgmma; }
  void Visit_(const FillOp*) override { ok = false; }
  void Visit_(const ReduceOp*) override { ok = false; }
  void Visit_(const AtomicOp*) override { ok = false; }
  void Visit_(const Call* op) override {
    // (GEMMs are lowered by now: gemm_ss, gemm_ss_wgmma, ... wait for their own work)
    const bool done_gemm = gemms_ && HasEffect(op, kGemm) && !HasEffect(op, kWgmmaInFlight);
    if (!done_gemm && (HasEffect(op, kGemm) || HasEffect(op, kWgmmaInFlight) || HasEffect(op, kAsyncWritesArg0) ||
                       HasEffect(op, kBarrier) || HasEffect(op, kBlockLevel))) {
      ok = false;
    }
    IRVisitor::Visit_(op);
  }

 private:
  bool gemms_;
};

/// The number of leading consumers that hold every statement naming a staged tile (0: none
/// does, or one of them is not Synchronous(gemms)).
size_t StageReaders(const std::vector<Stmt>& consumers, const std::unordered_set<const BufferNode*>& staged,
                    bool gemms) {
  size_t n = 0;
  for (size_t i = 0; i < consumers.size(); ++i) {
    bool names_stage = false;
    for (const BufferNode* b : BuffersOf(consumers[i])) names_stage |= staged.count(b) > 0;
    if (!names_stage) continue;
    Synchronous sync(gemms);
    sync.Visit(consumers[i]);
    if (!sync.ok) return 0;
    n = i + 1;
  }
  return n;
}

}  // namespace

size_t StageReadersThrough(const std::vector<Stmt>& consumers, const std::unordered_set<const BufferNode*>& staged) {
  return StageReaders(consumers, staged, /*gemms=*/true);
}

std::vector<RefillGroup> PerCopyRefillGroups(const std::vector<Stmt>& consumers,
                                             const std::vector<const BufferNode*>& copy_tiles) {
  std::unordered_set<const BufferNode*> staged(copy_tiles.begin(), copy_tiles.end());
  if (!StageReaders(consumers, staged, /*gemms=*/true)) return {};
  std::vector<std::optional<std::pair<size_t, size_t>>> span(copy_tiles.size());  // (first, last) reader
  for (size_t i = 0; i < consumers.size(); ++i) {
    auto names = BuffersOf(consumers[i]);
    for (size_t c = 0; c < copy_tiles.size(); ++c) {
      if (!names.count(copy_tiles[c])) continue;
      if (!span[c]) span[c] = std::make_pair(i, i);
      span[c]->second = i;
    }
  }
  std::vector<RefillGroup> groups;
  for (size_t c = 0; c < copy_tiles.size(); ++c) {
    if (!span[c]) return {};
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const RefillGroup& g) { return g.last_reader == span[c]->second; });
    if (it == groups.end()) {
      groups.push_back(RefillGroup{{c}, span[c]->first, span[c]->second});
    } else {
      it->copies.push_back(c);
      it->first_reader = std::min(it->first_reader, span[c]->first);
    }
  }
  if (groups.size() < 2) return {};
  std::sort(groups.begin(), groups.end(),
            [](const RefillGroup& a, const RefillGroup& b) { return a.last_reader < b.last_reader; });
  return groups;
}

size_t StageReadersPrefix(const std::vector<Stmt>& consumers, const std::unordered_set<const BufferNode*>& staged) {
  size_t n = StageReaders(consumers, staged, /*gemms=*/false);
  return n < consumers.size() ? n : 0;
}

Stmt InlinePipelineIndexLets(const Stmt& body) { return InlineIndexLets().Mutate(body); }

Region SubstituteRegion(const Region& r, const Var* var, const Expr& value) {
  Region out{r.buffer, {}};
  auto f = [&](const Var* v) -> Expr { return v == var ? value : nullptr; };
  for (const Range& rg : r.ranges) out.ranges.push_back({Substitute(rg.min, f), Substitute(rg.extent, f)});
  return out;
}

}  // namespace tl::transform::cuda
