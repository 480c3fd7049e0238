// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, a persistent kernel: the pipelined loop inside a tile loop,
///
///   for w in T.serial(waves):          (or T.Persistent, which lowers to this)
///     [lets: tile_id, bx, by]
///     [if the tile exists:]
///       T.clear(C); for k in T.Pipelined(...): loads, gemm; epilogue
///
/// Both roles run the tile loop: the producer loads every tile's k-tiles, the consumers run
/// each tile's statements around the pipelined loop as well as the loop. Stages and mbarrier
/// phases run on across tiles (a count of the earlier tiles' steps in each role), so the
/// producer fills the next tile's stages while the consumers are still in the last one's
/// epilogue, which is what a persistent kernel is for. The tile loop's lets and guard read
/// no buffer the kernel writes (both roles compute them alike); in the producer they get
/// variables of their own.
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pipeline_schedule.h"
#include "warp_specialize.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// Whether tile loops are specialized unless tl.ws_tile_loop says otherwise.
constexpr bool kTileLoopByDefault = false;

size_t PipelinedAt(const std::vector<Stmt>& stmts) {
  for (size_t i = 0; i < stmts.size(); ++i) {
    const auto* loop = As<For>(stmts[i]);
    if (loop && loop->for_kind == ForKind::kPipelined) return i;
  }
  return stmts.size();
}

}  // namespace

/// Finds the tile loop around the pipelined loop among the kernel's statements (tile_),
/// with the tile body's statements (*inner) and the pipelined loop's index there (*at);
/// or says why the loop's nesting does not fit.
std::string WarpSpecializer::FindTileLoop(const std::vector<Stmt>& stmts, std::vector<Stmt>* inner, size_t* at) {
  const std::string nested = "the pipelined loop is nested in other statements";
  // (off by default until the path has run on a GPU: its CPU-side tests read the lowering only)
  const bool by_default = kTileLoopByDefault || ConfigTrue(ctx_, "tl.auto_persistent");  // (which makes tile loops)
  if (!ConfigOn(ctx_, "tl.ws_tile_loop", by_default)) return nested + " (tl.ws_tile_loop is off)";
  for (size_t i = 0; i < stmts.size(); ++i) {
    const auto* outer = As<For>(stmts[i]);
    if (!outer || outer->for_kind != ForKind::kSerial) continue;
    PipelinedLoopCounter count;
    count.Visit(outer->body);
    if (!count.pipelined) continue;
    std::vector<Stmt> body = Flatten(outer->body);
    std::vector<Stmt> head;
    Expr guard;
    size_t p = PipelinedAt(body);
    if (p == body.size()) {
      size_t j = 0;
      while (j < body.size() && As<LetStmt>(body[j])) ++j;
      const auto* branch = j + 1 == body.size() ? As<IfThenElse>(body[j]) : nullptr;
      if (!branch || branch->else_case) {
        return nested + " other than a tile loop's body (for ...: [lets] [if ...:] ..., the pipelined loop "
                        "among the body's statements)";
      }
      head.assign(body.begin(), body.begin() + j);
      guard = branch->cond;
      body = Flatten(branch->then_case);
      p = PipelinedAt(body);
      if (p == body.size()) return nested + " deeper than a tile loop's body";
    }
    tile_.outer = outer;
    tile_.at = i;
    tile_.head = head;
    tile_.guard = guard;
    *inner = body;
    *at = p;
    return "";
  }
  return nested;
}

/// AssignRoles for a tile loop: the kernel's other statements shared as AssignRoles shares
/// them (allocations, lets before the tile loop) or run by the consumers before or after
/// the tile loop (consumer_pre, consumer_post); in the tile's body, the lets before the
/// pipelined loop that read nothing the kernel writes go to both roles (tile_.lets), the
/// other statements to the consumers, in every tile. False when the producer would need a
/// value only the consumers compute.
bool WarpSpecializer::AssignTileRoles(const std::vector<Stmt>& stmts, const std::vector<Stmt>& tile, size_t at,
                                      Roles* roles) {
  std::unordered_set<const BufferNode*> written;
  for (const Stmt& s : stmts) AddWrites(s, &written);
  std::unordered_set<const Var*> consumer_lets;
  auto consumer_only = [&](const Var* v) { return consumer_lets.count(v) > 0; };
  auto shared_let = [&](const Stmt& s) {
    const auto* let = As<LetStmt>(s);
    return let && Common(s, written) && !UsesVar(let->value, consumer_only);
  };
  for (size_t i = 0; i < stmts.size(); ++i) {
    if (i == tile_.at) continue;
    const Stmt& s = stmts[i];
    if (As<Allocate>(s) || As<AttrStmt>(s) || (i < tile_.at && shared_let(s))) {
      roles->common.push_back(StageAllocation(s));
      continue;
    }
    if (const auto* let = As<LetStmt>(s)) consumer_lets.insert(let->var.get());
    (i < tile_.at ? roles->consumer_pre : roles->consumer_post).push_back(s);
  }
  for (const Stmt& s : tile_.head) {
    if (!shared_let(s)) {
      Fail("the tile loop's " + As<LetStmt>(s)->var->name + " reads values only the consumer threads would compute");
      return false;
    }
  }
  for (size_t i = 0; i < tile.size(); ++i) {
    if (i == at) continue;
    const Stmt& s = tile[i];
    if (const auto* alloc = As<Allocate>(s)) {
      Fail("the tile loop's body allocates " + alloc->buffer->name + " (a persistent kernel's tiles are allocated "
           "once, before its tile loop)");
      return false;
    }
    if (i < at && shared_let(s)) {
      tile_.lets.push_back(s);
      continue;
    }
    if (const auto* let = As<LetStmt>(s)) consumer_lets.insert(let->var.get());
    (i < at ? roles->consumer_before : roles->consumer_after).push_back(s);
  }
  // the producer also evaluates the tile loop's bounds and guard
  bool needs = ProducerReadsAny(consumer_lets) || (tile_.guard && UsesVar(tile_.guard, consumer_only)) ||
               UsesVar(tile_.outer->extent, consumer_only) || UsesVar(tile_.outer->min, consumer_only);
  if (tile_.guard) {
    ForEachExpr(tile_.guard, [&](const Expr& e) {
      if (const auto* load = As<BufferLoad>(e)) needs = needs || written.count(load->buffer.get()) > 0;
    });
  }
  if (needs) {
    Fail("the copies or the tile loop depend on values computed by the consumer threads");
    return false;
  }
  return true;
}

/// A role's count of its earlier tiles' steps (a scalar of each thread, from 0).
Buffer WarpSpecializer::TileStepCounter() {
  return BufferNode::Make("tl_ws_tile_steps", DType::Int(32), {MakeInt(1)}, Scope::kVar);
}

/// The stages and phases of step k of the pipelined loop: k, or in a tile loop k after the
/// earlier tiles' steps.
Expr WarpSpecializer::Count(const VarRef& k) const {
  if (!tile_steps_) return k;
  return BufferLoad::Make(tile_steps_, {MakeInt(0)}) + k;
}

/// One role's tile loop: `for t: head; if guard: lets; before; loop; steps += trip count;
/// after`, with the role's step count declared before it. `fresh_vars`: the loop's variable
/// and the lets get new variables (the producer's copy, beside the consumers').
Stmt WarpSpecializer::InTileLoop(const std::vector<Stmt>& before, const Stmt& loop, const std::vector<Stmt>& after,
                                 bool fresh_vars) const {
  const For* outer = tile_.outer;
  const Span& span = outer->span;
  std::unordered_map<const Var*, Expr> renamed;
  auto rename = [&](const Var* v) -> Expr {
    auto it = renamed.find(v);
    return it == renamed.end() ? nullptr : it->second;
  };
  VarRef t = outer->var;
  if (fresh_vars) {
    t = Var::Make(outer->var->name, outer->var->dtype);
    renamed[outer->var.get()] = t;
  }
  auto lets = [&](const std::vector<Stmt>& in) {
    std::vector<Stmt> out;
    for (const Stmt& s : in) {
      const auto* let = As<LetStmt>(s);
      if (!fresh_vars) {
        out.push_back(s);
        continue;
      }
      VarRef v = Var::Make(let->var->name, let->var->dtype);
      out.push_back(LetStmt::Make(v, Substitute(let->value, rename), let->span));
      renamed[let->var.get()] = v;
    }
    return out;
  };
  std::vector<Stmt> head = lets(tile_.head);
  std::vector<Stmt> tile = lets(tile_.lets);
  tile.insert(tile.end(), before.begin(), before.end());
  tile.push_back(loop);
  tile.push_back(BufferStore::Make(tile_steps_, {MakeInt(0)},
                                   BufferLoad::Make(tile_steps_, {MakeInt(0)}) + loop_->extent, span));
  tile.insert(tile.end(), after.begin(), after.end());
  Stmt body = Seq::Make(tile, span);
  if (tile_.guard) body = IfThenElse::Make(tile_.guard, body, nullptr, span);
  head.push_back(body);
  Stmt each = Seq::Make(head, span);
  if (fresh_vars) each = Substitute(each, rename);
  return Seq::Make({Allocate::Make(tile_steps_, MakeInt(0), span),
                    For::Make(t, outer->min, outer->extent, outer->for_kind, each, outer->annotations, span)},
                   span);
}

/// After a tile's in-flight GEMM loop (GemmMainLoop) and its last wait: the releases of the
/// stages of the last `depth` k-tiles, which the loop leaves to the next step (a kernel of one
/// tile never needs them back; the next tile's loads do).
Stmt WarpSpecializer::InFlightTail(const Buffer& bars, int64_t depth) {
  const Span& span = loop_->span;
  std::vector<Stmt> releases;
  for (int64_t j = 1; j <= depth; ++j) {
    Expr count = BufferLoad::Make(tile_steps_, {MakeInt(0)}) + loop_->extent - MakeInt(j);
    releases.push_back(IfThenElse::Make(LE(MakeInt(j), loop_->extent),
                                        Release(Empty(bars, 0, FloorMod(count, MakeInt(stages_)))), nullptr, span));
  }
  return Seq::Make(releases, span);
}

}  // namespace tl::transform::cuda
