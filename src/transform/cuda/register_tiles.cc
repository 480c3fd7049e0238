// SPDX-License-Identifier: Apache-2.0
/// \file Register-tile candidates (see register_tiles.h).
#include "register_tiles.h"

#include <unordered_map>
#include <unordered_set>

#include "tl/ir/functor.h"
#include "tl/target/warp.h"
#include "../region_util.h"
#include "../thread_range.h"
#include "thread_binding.h"

namespace tl::transform::cuda {
namespace {

using namespace ir;  // NOLINT: implementation file
using target::kWarpSize;

bool ConstShape2D(const Buffer& b, int64_t* m, int64_t* n) {
  return b->shape.size() == 2 && AsConstInt(b->shape[0], m) && AsConstInt(b->shape[1], n);
}

/// A 1-D fragment of constant length (a vector).
bool ConstShape1D(const Buffer& b, int64_t* len) { return b->shape.size() == 1 && AsConstInt(b->shape[0], len); }

bool IsFragmentBuffer(const Buffer& b) { return b && b->scope == Scope::kFragment; }

class CandidateFinder : public IRVisitor {
 public:
  std::vector<Buffer> order;  ///< candidates in allocation order
  std::unordered_set<const BufferNode*> bad;
  std::unordered_map<const BufferNode*, const BufferNode*> parent;
  std::unordered_set<const BufferNode*> column_reads;  ///< read as F[s, j] somewhere
  /// The vectors leading the one-loop nests that read a tile as F[s, j]: the tile can be
  /// held in registers only if they are.
  std::unordered_map<const BufferNode*, std::vector<Buffer>> column_leaders;

  /// The kernel's thread index and count, to tell branches on part of the threads.
  const Var* tx = nullptr;
  int64_t threads = 0;

  const BufferNode* Find(const BufferNode* b) {
    while (parent[b] != b) b = parent[b] = parent[parent[b]];
    return b;
  }

 protected:
  bool IsCandidate(const Buffer& b) const { return b && parent.count(b.get()); }
  void Reject(const Buffer& b) {
    if (IsCandidate(b)) bad.insert(b.get());
  }
  void Tie(const Buffer& a, const Buffer& b) {
    if (!IsCandidate(a) || !IsCandidate(b)) return;
    if (!(a->shape.size() == b->shape.size() && ShapesEqual(a, b))) {
      Reject(a);
      Reject(b);
      return;
    }
    parent[Find(a.get())] = Find(b.get());
  }
  static bool ShapesEqual(const Buffer& a, const Buffer& b) {
    int64_t am, an, bm, bn;
    if (ConstShape1D(a, &am)) return ConstShape1D(b, &bm) && am == bm;
    return ConstShape2D(a, &am, &an) && ConstShape2D(b, &bm, &bn) && am == bm && an == bn;
  }
  bool IsVectorCandidate(const Buffer& b) const { return IsCandidate(b) && b->shape.size() == 1; }

  void Visit_(const Allocate* op) override {
    int64_t m, n;
    if (op->buffer->scope == Scope::kFragment && (ConstShape2D(op->buffer, &m, &n) || ConstShape1D(op->buffer, &m)) &&
        !op->init) {
      parent[op->buffer.get()] = op->buffer.get();
      order.push_back(op->buffer);
    }
    IRVisitor::Visit_(op);
  }

  // Work under a branch that only part of the block's threads take: a layout over all of
  // them would leave the elements of the threads outside the branch uncomputed. With
  // `range_tiles`, a fragment whose every use is under one range of whole warps is laid out
  // over that range's threads (ThreadRangeLayout); otherwise it stays in shared memory,
  // where the work is spread over the branch's threads.

 public:
  bool range_tiles = false;
  /// The threads that run the statement being visited: all, a range, or unknown (a
  /// thread-dependent condition that is no range).
  RunningThreads running;
  /// Each candidate's threads, from its first use (a later use on others rejects it).
  std::unordered_map<const BufferNode*, ThreadRange> range_of;

 protected:
  std::unordered_set<const Var*> thread_vars_, aliases_;

  bool OnThread(const Expr& e) const {
    return UsesVar(e, [&](const Var* v) { return v == tx || thread_vars_.count(v) || aliases_.count(v); });
  }
  void Visit_(const LetStmt* op) override {
    const Var* v = As<Var>(op->value);
    if (v && (v == tx || aliases_.count(v))) {
      aliases_.insert(op->var.get());
    } else if (OnThread(op->value)) {
      thread_vars_.insert(op->var.get());
    }
    IRVisitor::Visit_(op);
  }
  void Visit_(const IfThenElse* op) override {
    if (!tx || !OnThread(op->cond)) return IRVisitor::Visit_(op);
    auto is_thread = [&](const Expr& e) {
      const Var* v = As<Var>(e);
      return v && (v == tx || aliases_.count(v));
    };
    const RunningThreads outer = running;
    const auto [then_threads, else_threads] = outer.Branches(op->cond, is_thread, threads);
    Visit(op->cond);
    running = then_threads;
    Visit(op->then_case);
    if (op->else_case) {
      running = else_threads;
      Visit(op->else_case);
    }
    running = outer;
  }
  /// Notes a use of `b` by the threads running it now.
  void NoteThreads(const Buffer& b) {
    if (!IsCandidate(b)) return;
    const ThreadRange& r = running.range;
    bool all = running.known && r.lo <= 0 && r.hi >= threads;
    bool whole_warps = r.lo % kWarpSize == 0 && (r.hi - r.lo) % kWarpSize == 0 && r.hi > r.lo;
    if (!running.known || (!all && !(range_tiles && whole_warps))) return Reject(b);
    ThreadRange use = all ? ThreadRange{0, threads} : r;
    auto [it, fresh] = range_of.emplace(b.get(), use);
    if (!fresh && (it->second.lo != use.lo || it->second.hi != use.hi)) Reject(b);
  }
  /// Reductions and atomics run on the whole block's threads only.
  void RejectUnderPartialBranch(const Buffer& b) {
    const ThreadRange& r = running.range;
    if (!running.known || r.lo > 0 || r.hi < threads) Reject(b);
  }

  // Element accesses outside a T.Parallel nest over the tile's shape.
  void Visit_(const BufferLoad* op) override {
    Reject(op->buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferStore* op) override {
    Reject(op->buffer);
    IRVisitor::Visit_(op);
  }

  void Visit_(const For* op) override {
    if (op->for_kind != ForKind::kParallel) return IRVisitor::Visit_(op);
    std::vector<const For*> loops = {op};
    while (const auto* inner = As<For>(loops.back()->body)) {
      if (inner->for_kind != ForKind::kParallel) break;
      loops.push_back(inner);
    }
    std::vector<int64_t> extents;
    for (const For* f : loops) {
      int64_t lo = -1, ext = 0;
      extents.push_back(AsConstInt(f->min, &lo) && lo == 0 && AsConstInt(f->extent, &ext) ? ext : -1);
    }
    // Every fragment tile here must be indexed by exactly the nest's variables, over
    // exactly its shape; the tiles that are share one layout.
    Buffer first;
    std::vector<Buffer> fragments;  // every fragment the nest reads or writes
    std::vector<Buffer> column_tiles;  // tiles a one-loop nest reads as F[s, j]
    ForEachExpr(loops.back()->body, [&](const Expr& e) {
      if (const auto* load = As<BufferLoad>(e)) {
        NoteThreads(load->buffer);
        if (IsColumnRead(load, loops, extents)) {
          column_tiles.push_back(load->buffer);
          return;
        }
        Access(load->buffer, load->indices, loops, extents, &first, /*load=*/true);
        if (IsFragmentBuffer(load->buffer)) fragments.push_back(load->buffer);
      }
    });
    VisitStores(loops.back()->body, loops, extents, &first, &fragments);
    // A vector shares its nest only with vectors that get its layout: next to a tile (as
    // that tile's per-row values) or to a fragment kept in shared memory it is not one.
    bool vectors_alone = true;
    for (const Buffer& b : fragments) vectors_alone &= IsVectorCandidate(b);
    if (!vectors_alone) {
      for (const Buffer& b : fragments) {
        if (IsVectorCandidate(b)) Reject(b);
      }
    }
    // A one-loop nest over V[j] reading F[s, j] (upstream's mHC pre: ol[j] += pre * xl[s, j]):
    // F in registers holds whole columns, its columns laid out as the vectors are (both take
    // the widest vec that splits n evenly over the threads), and the vectors lead the nest.
    // Without a vector to lead it, F stays in shared memory.
    std::vector<Buffer> leaders;
    for (const Buffer& b : fragments) {
      if (vectors_alone && IsVectorCandidate(b)) leaders.push_back(b);
    }
    for (const Buffer& f : column_tiles) {
      if (leaders.empty()) {
        Reject(f);
        continue;
      }
      column_reads.insert(f.get());
      for (const Buffer& v : leaders) column_leaders[f.get()].push_back(v);
    }
    // Tile ops inside a T.Parallel body are not expected; anything else was seen above.
  }

  /// F[s, j] in a one-loop nest over j covering F's columns, F a 2-D candidate, s free of j.
  bool IsColumnRead(const BufferLoad* load, const std::vector<const For*>& loops,
                    const std::vector<int64_t>& extents) const {
    int64_t m, n;
    if (loops.size() != 1 || load->indices.size() != 2 || !IsCandidate(load->buffer) ||
        !ConstShape2D(load->buffer, &m, &n) || extents[0] != n || As<Var>(load->indices[1]) != loops[0]->var.get()) {
      return false;
    }
    return !UsesVar(load->indices[0], [&](const Var* v) { return v == loops[0]->var.get(); });
  }

  void VisitStores(const Stmt& s, const std::vector<const For*>& loops, const std::vector<int64_t>& extents,
                   Buffer* first, std::vector<Buffer>* fragments) {
    struct Stores : IRVisitor {
      std::vector<const BufferStore*> found;
      void Visit_(const BufferStore* op) override {
        found.push_back(op);
        IRVisitor::Visit_(op);
      }
    } stores;
    stores.Visit(s);
    for (const BufferStore* st : stores.found) {
      NoteThreads(st->buffer);
      Access(st->buffer, st->indices, loops, extents, first);
      if (IsFragmentBuffer(st->buffer)) fragments->push_back(st->buffer);
    }
  }

  void Access(const Buffer& b, const std::vector<Expr>& idx, const std::vector<const For*>& loops,
              const std::vector<int64_t>& extents, Buffer* first, bool load = false) {
    if (!IsCandidate(b)) return;
    int64_t m, n;
    bool nest_2d = loops.size() == 2 && idx.size() == 2 && ConstShape2D(b, &m, &n) && extents[0] == m &&
                   extents[1] == n && As<Var>(idx[1]) == loops[1]->var.get();
    bool ok = nest_2d && As<Var>(idx[0]) == loops[0]->var.get();
    // F[s, j], read only: another row of the thread's column when it holds whole columns.
    if (nest_2d && !ok && load && !UsesVar(idx[0], [&](const Var* v) { return v == loops[0]->var.get() ||
                                                                            v == loops[1]->var.get(); })) {
      ok = true;
      column_reads.insert(b.get());
    }
    ok |= loops.size() == 1 && idx.size() == 1 && ConstShape1D(b, &m) && extents[0] == m &&
          As<Var>(idx[0]) == loops[0]->var.get();
    if (!ok) return Reject(b);
    if (*first) {
      Tie(*first, b);
    } else {
      *first = b;
    }
  }

  void Visit_(const CopyOp* op) override {
    NoteThreads(op->src.buffer);
    NoteThreads(op->dst.buffer);
    for (const Region* r : {&op->src, &op->dst}) {
      const Region& other = r == &op->src ? op->dst : op->src;
      if (IsVectorCandidate(r->buffer)) {
        // A whole vector against one run of elements, or against another vector.
        bool fits = IsFragmentBuffer(other.buffer) ? IsVectorCandidate(other.buffer)
                                                   : transform::TileDims(other).size() == 1;
        if (!CoversWholeBuffer(*r) || !fits) Reject(r->buffer);
        continue;
      }
      // A whole tile against a region of rank 2 or more (rows and columns to walk).
      if (IsCandidate(r->buffer) && (!CoversWholeBuffer(*r) || other.ranges.size() < 2)) Reject(r->buffer);
    }
    Tie(op->src.buffer, op->dst.buffer);
    IRVisitor::Visit_(op);
  }

  void Visit_(const FillOp* op) override {
    NoteThreads(op->dst.buffer);
    // A part of the tile is filled register by register (FillPartOfRegs), over both dimensions.
    if (op->dst.ranges.size() != op->dst.buffer->shape.size()) Reject(op->dst.buffer);
    IRVisitor::Visit_(op);
  }

  void Visit_(const ReduceOp* op) override {
    RejectUnderPartialBranch(op->src.buffer);
    // Row reductions of a whole tile only; column reductions keep the tile in shared
    // memory, where they need no atomics.
    // A whole vector reduced to one value is folded in registers too (ReduceVector).
    bool whole_vector = op->src.buffer->shape.size() == 1 && CoversWholeBuffer(op->src);
    if (!whole_vector && (op->dim != 1 || !CoversWholeBuffer(op->src) || op->src.buffer->shape.size() != 2)) {
      Reject(op->src.buffer);
    }
    Reject(op->dst.buffer);
    IRVisitor::Visit_(op);
  }

  void Visit_(const GemmOp* op) override {
    Reject(op->a.buffer);
    Reject(op->b.buffer);
    Reject(op->c.buffer);
    IRVisitor::Visit_(op);
  }

  void Visit_(const AtomicOp* op) override {
    if (op->src.buffer) RejectUnderPartialBranch(op->src.buffer);
    if (op->src.buffer) {
      size_t non_unit = 0;
      for (const Range& rg : op->dst.ranges) {
        int64_t e = 0;
        non_unit += !(AsConstInt(rg.extent, &e) && e == 1);
      }
      if (!CoversWholeBuffer(op->src) || non_unit != 2) Reject(op->src.buffer);
    }
    Reject(op->dst.buffer);
    IRVisitor::Visit_(op);
  }
};

}  // namespace

std::vector<RegisterTileGroup> RegisterTileGroups(const Stmt& body, bool range_tiles) {
  CandidateFinder finder;
  ThreadBinding tb = GetThreadBinding(body, "cuda-lower-fragments");
  finder.tx = tb.tx.get();
  finder.threads = tb.threads;
  finder.range_tiles = range_tiles;
  finder.running.range = ThreadRange{0, tb.threads};
  finder.Visit(body);
  // A group's members run on the same threads (those of its first member's uses).
  std::unordered_map<const BufferNode*, ThreadRange> group_range;
  for (const auto& [b, r] : finder.range_of) {
    auto [it, fresh] = group_range.emplace(finder.Find(b), r);
    if (!fresh && (it->second.lo != r.lo || it->second.hi != r.hi)) finder.bad.insert(b);
  }
  std::unordered_set<const BufferNode*> bad_roots;
  for (const BufferNode* b : finder.bad) bad_roots.insert(finder.Find(b));
  // A tile read across its rows in a nest that a vector leads stays out with that vector.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [tile, leaders] : finder.column_leaders) {
      if (bad_roots.count(finder.Find(tile))) continue;
      for (const Buffer& v : leaders) {
        if (bad_roots.count(finder.Find(v.get()))) {
          bad_roots.insert(finder.Find(tile));
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<RegisterTileGroup> groups;
  std::unordered_map<const BufferNode*, size_t> group_of;
  for (const Buffer& b : finder.order) {
    const BufferNode* root = finder.Find(b.get());
    if (bad_roots.count(root)) continue;
    auto [it, fresh] = group_of.emplace(root, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].members.push_back(b);
    groups[it->second].whole_columns |= finder.column_reads.count(b.get()) > 0;
    auto range = group_range.find(root);
    if (range != group_range.end() && (range->second.lo > 0 || range->second.hi < tb.threads)) {
      groups[it->second].threads = range->second;
    }
    auto leaders = finder.column_leaders.find(b.get());
    if (leaders != finder.column_leaders.end()) {
      auto& out = groups[it->second].column_leaders;
      out.insert(out.end(), leaders->second.begin(), leaders->second.end());
    }
  }
  return groups;
}

}  // namespace tl::transform::cuda
