// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-plan-shared-memory": shared buffers that are never live together share bytes.
///
/// Liveness is counted in barrier units: the statements cuda-insert-barriers can put a
/// __syncthreads between (see BarriersGoInside), numbered in program order. A buffer is
/// live from the first unit that touches it to the last; a touch inside a loop counts for
/// the whole outermost loop around it that is inside the buffer's own scope, since the next
/// iteration comes back to it (a buffer allocated in a loop body, such as a reduction's
/// workspace, is new in every iteration: two of them in one body can share bytes). Buffers
/// touched by one unit are live together, so every reuse of bytes crosses a unit boundary,
/// where cuda-insert-barriers (which treats overlapping planned ranges as one memory) puts
/// the barrier ordering the old buffer's last reads before the new buffer's first writes.
///
/// cp.async writes land asynchronously: a barrier does not order them, cp_async_wait(0)
/// does. So a cp.async target stays live up to the next cp_async_wait(0) that runs
/// unconditionally after its last touch (to the end of the kernel when there is none), and
/// bytes it shares are never written while one of its copies may still be in flight.
///
/// Placement: largest buffer first, each at the lowest aligned offset that collides with
/// no placed buffer it is live with. When that saves nothing, the declaration-order layout
/// is kept, so kernels without reuse are generated exactly as before.
#include <algorithm>
#include <climits>
#include <functional>
#include <sstream>

#include "pass_helpers.h"
#include "shared_plan.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/functor.h"
#include "tl/layout/shared.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file
using cuda::BarriersGoInside;

/// Shared buffers an expression or statement touches, and the cp.async targets among them.
struct Touches : IRVisitor {
  std::vector<const BufferNode*> buffers;
  std::unordered_set<const BufferNode*> async;
  /// mbarriers: their bytes are never handed to another buffer (no mbarrier.inval).
  std::unordered_set<const BufferNode*> pinned;

  void VisitRegion(const Region& r) override {
    Add(r.buffer);
    IRVisitor::VisitRegion(r);
  }

 protected:
  void Add(const Buffer& b) {
    if (b && b->scope == Scope::kShared) buffers.push_back(b.get());
  }
  void Visit_(const BufferLoad* op) override {
    Add(op->buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferStore* op) override {
    Add(op->buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const Call* op) override {
    if (HasEffect(op, kAsyncWritesArg0)) {
      const auto* addr = As<Call>(op->args[0]);
      if (const auto* load = addr ? As<BufferLoad>(addr->args[0]) : nullptr) async.insert(load->buffer.get());
    }
    if (HasEffect(op, kPinsArg0)) {
      const auto* addr = As<Call>(op->args[0]);
      if (const auto* load = addr ? As<BufferLoad>(addr->args[0]) : nullptr) pinned.insert(load->buffer.get());
    }
    IRVisitor::Visit_(op);
  }
};

/// Inclusive range of unit positions.
struct Interval {
  int64_t first = INT64_MAX, last = -1;
  bool Overlaps(const Interval& o) const { return first <= o.last && o.first <= last; }
};

/// Live intervals of the shared buffers of one kernel body (the thread binding's body).
class Liveness {
 public:
  explicit Liveness(const Var* tx) : tx_(tx) {}

  std::vector<const Allocate*> allocs;  ///< shared Allocates, in program order

  void Walk(const Stmt& s) {
    if (!s) return;
    if (const auto* seq = As<Seq>(s)) {
      for (const Stmt& c : seq->stmts) Walk(c);
      return;
    }
    if (const auto* alloc = As<Allocate>(s)) {
      ++pos_;
      if (alloc->buffer->scope == Scope::kShared) {
        allocs.push_back(alloc);
        declared_[alloc->buffer.get()] = pos_;
        declared_depth_[alloc->buffer.get()] = loop_depth_;
      }
      return;
    }
    if (BarriersGoInside(s, tx_)) {
      if (const auto* loop = As<For>(s)) {
        return Loop([&] {
          TouchUnit(loop->min);
          TouchUnit(loop->extent);
          Walk(loop->body);
        });
      }
      if (const auto* w = As<While>(s)) {
        return Loop([&] {
          TouchUnit(w->cond);
          Walk(w->body);
        });
      }
      if (const auto* br = As<IfThenElse>(s)) {
        TouchUnit(br->cond);
        // On a condition on the thread index, the two branches run at the same time on
        // different threads (`if tx < 128: ... else: ...`, each warpgroup with tiles of its
        // own): what either touches is live through both.
        const bool concurrent = OnThread(br->cond);
        const int64_t start = pos_ + 1;
        const size_t mark = touched_.size();
        ++branch_depth_;
        Walk(br->then_case);
        Walk(br->else_case);
        --branch_depth_;
        if (concurrent) {
          for (size_t i = mark; i < touched_.size(); ++i) Extend(touched_[i], start, pos_);
        }
        return;
      }
    }
    if (const auto* tb = As<For>(s)) {
      if (tb->for_kind == ForKind::kThreadBinding) return Walk(tb->body);
    }
    if (const auto* let = As<LetStmt>(s)) {
      if (OnThread(let->value)) thread_vars_.insert(let->var.get());  // `tx = T.get_thread_binding()`
    }
    TouchUnit(s);
    if (cuda::IsWaitAll(s) && loop_depth_ == 0 && branch_depth_ == 0) waits_.push_back(pos_);
  }

  /// The interval of `b`; cp.async targets last until the next unconditional wait for all.
  Interval Of(const BufferNode* b) const {
    auto it = live_.find(b);
    Interval iv = it != live_.end() ? it->second : Interval{declared_.at(b), declared_.at(b)};
    if (pinned_.count(b)) iv.last = INT64_MAX;
    if (async_.count(b)) {
      auto w = std::upper_bound(waits_.begin(), waits_.end(), iv.last);
      iv.last = w == waits_.end() ? INT64_MAX : *w;
    }
    return iv;
  }

 private:
  template <typename Node>
  void TouchUnit(const Node& n) {
    ++pos_;
    Touches t;
    t.Visit(n);
    async_.insert(t.async.begin(), t.async.end());
    pinned_.insert(t.pinned.begin(), t.pinned.end());
    for (const BufferNode* b : t.buffers) {
      touched_.push_back(b);
      auto d = declared_depth_.find(b);
      int scope_depth = d == declared_depth_.end() ? 0 : d->second;
      if (loop_depth_ > scope_depth) {
        in_loop_[scope_depth].insert(b);  // the loop at depth scope_depth + 1 holds it live
      } else {
        Extend(b, pos_, pos_);
      }
    }
  }

  void Loop(const std::function<void()>& walk_body) {
    int64_t start = pos_ + 1;
    int depth = loop_depth_;  // this loop is at depth + 1
    if (in_loop_.size() <= static_cast<size_t>(depth)) in_loop_.resize(depth + 1);
    in_loop_[depth].clear();
    ++loop_depth_;
    walk_body();
    --loop_depth_;
    for (const BufferNode* b : in_loop_[depth]) Extend(b, start, pos_);
    in_loop_[depth].clear();
  }

  void Extend(const BufferNode* b, int64_t first, int64_t last) {
    Interval& iv = live_[b];
    iv.first = std::min(iv.first, first);
    iv.last = std::max(iv.last, last);
  }

  bool OnThread(const Expr& e) const {
    return UsesVar(e, [&](const Var* v) { return v == tx_ || thread_vars_.count(v) > 0; });
  }

  const Var* tx_;
  std::unordered_set<const Var*> thread_vars_;  ///< lets that depend on the thread index
  std::vector<const BufferNode*> touched_;      ///< every touch, in program order
  int64_t pos_ = 0;
  int loop_depth_ = 0, branch_depth_ = 0;
  /// in_loop_[d]: buffers declared at loop depth d touched inside the current loop at depth
  /// d + 1 (deeper down), live for that whole loop
  std::vector<std::unordered_set<const BufferNode*>> in_loop_;
  std::unordered_map<const BufferNode*, int> declared_depth_;
  std::unordered_map<const BufferNode*, Interval> live_;
  std::unordered_map<const BufferNode*, int64_t> declared_;
  std::unordered_set<const BufferNode*> async_, pinned_;
  std::vector<int64_t> waits_;  ///< positions of unconditional cp_async_wait(0)
};

struct Slot {
  const BufferNode* buffer;
  int64_t bytes, align;
  Interval live;
  int64_t offset = 0;
};

int64_t AlignUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/// Declaration order, one after another: the layout without reuse. Returns the arena size.
int64_t PlaceInOrder(std::vector<Slot>& slots) {
  int64_t end = 0;
  for (Slot& s : slots) {
    s.offset = AlignUp(end, s.align);
    end = s.offset + s.bytes;
  }
  return end;
}

/// Largest first, each at the lowest aligned offset clear of the placed slots it is live
/// with. Returns the arena size.
int64_t PlaceByLiveness(std::vector<Slot>& slots) {
  std::vector<size_t> order(slots.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return slots[a].bytes > slots[b].bytes; });
  std::vector<size_t> placed;
  int64_t peak = 0;
  for (size_t i : order) {
    Slot& s = slots[i];
    std::vector<const Slot*> live_with;
    std::vector<int64_t> candidates = {0};
    for (size_t j : placed) {
      if (!slots[j].live.Overlaps(s.live)) continue;
      live_with.push_back(&slots[j]);
      candidates.push_back(AlignUp(slots[j].offset + slots[j].bytes, s.align));
    }
    std::sort(candidates.begin(), candidates.end());
    for (int64_t c : candidates) {
      bool clear = std::none_of(live_with.begin(), live_with.end(), [&](const Slot* o) {
        return c < o->offset + o->bytes && o->offset < c + s.bytes;
      });
      if (clear) {
        s.offset = c;
        break;
      }
    }
    placed.push_back(i);
    peak = std::max(peak, s.offset + s.bytes);
  }
  return peak;
}

/// "C_s over A_s, B_s": which buffers reuse which bytes, for the remark.
std::string DescribeReuse(const std::vector<Slot>& slots) {
  std::ostringstream os;
  for (const Slot& s : slots) {
    std::string over;
    for (const Slot& o : slots) {
      bool shares = &o != &s && s.offset < o.offset + o.bytes && o.offset < s.offset + s.bytes;
      if (shares && o.live.last < s.live.first) over += (over.empty() ? "" : ", ") + o.buffer->name;
    }
    if (!over.empty()) os << (os.tellp() > 0 ? "; " : "") << s.buffer->name << " over " << over;
  }
  return os.str();
}

/// Puts T.attr("tl.shared_offset", offset, layout) before each planned Allocate, in its Seq.
class RecordPlan : public IRMutator {
 public:
  explicit RecordPlan(const target::SharedPlan& plan) : plan_(plan) {}

 protected:
  Stmt Mutate_(const Seq* op, const Stmt& self) override {
    std::vector<Stmt> out;
    for (const Stmt& s : op->stmts) {
      if (const auto* alloc = As<Allocate>(s)) {
        if (Stmt attr = Attr(alloc)) out.push_back(attr);
        out.push_back(s);
      } else {
        out.push_back(Mutate(s));
      }
    }
    return Seq::Make(out, op->span);
  }
  Stmt Mutate_(const Allocate* op, const Stmt& self) override {
    // An Allocate outside any Seq declares nothing later statements could use.
    Stmt attr = Attr(op);
    return attr ? Seq::Make({attr, self}, op->span) : self;
  }

 private:
  Stmt Attr(const Allocate* op) const {
    auto it = plan_.find(op->buffer.get());
    return it == plan_.end() ? nullptr : target::SharedOffsetAttr(it->second.lo, it->second.layout, op->span);
  }
  const target::SharedPlan& plan_;
};

/// The layout of a shared tile: wgmma's panels for what wgmma reads (and TMA-stored panel
/// tiles), the XOR-rows swizzle for the other GEMM operands whose windows allow it and for
/// staging tiles, otherwise plain.
target::SharedLayout LayoutOf(const Buffer& b, const std::unordered_set<const BufferNode*>& gemm_operands,
                              const std::unordered_set<const BufferNode*>& wgmma_operands,
                              const std::unordered_set<const BufferNode*>& staging) {
  bool swizzled = staging.count(b.get()) || cuda::Swizzled(b, gemm_operands, wgmma_operands);
  TL_ICHECK(swizzled || !wgmma_operands.count(b.get()))
      << "wgmma operand " << b->name << " cannot take the panel layout (rows or window misaligned)";
  if (!swizzled) return target::SharedLayout::kPlain;
  if (wgmma_operands.count(b.get())) return target::SharedLayout::kWgmmaPanels;
  return staging.count(b.get()) ? target::SharedLayout::kStagingXorRows : target::SharedLayout::kXorRows;
}

class Planner : public IRMutator {
 public:
  explicit Planner(PassContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding) return IRMutator::Mutate_(op, self);
    Liveness live(op->var.get());
    live.Walk(op->body);
    auto gemm_operands = cuda::GemmOperands(op->body);
    auto wgmma_operands = cuda::WgmmaOperands(op->body);
    // Staging tiles in the XOR-rows swizzle (shared_plan.h), unless tl.enable_staging_swizzle
    // is false: on since the H200 run where attention, convolution and dequantizing GEMMs
    // gained 2-8% with it (the epilogue's 8-way conflicts it removes were measured by ncu).
    std::unordered_set<const BufferNode*> staging;
    if (cuda::ConfigOn(ctx_, "tl.enable_staging_swizzle", true)) staging = cuda::StagingTiles(op->body, gemm_operands);
    std::vector<Slot> slots;
    std::unordered_map<const BufferNode*, target::SharedLayout> layouts;
    for (const Allocate* a : live.allocs) {
      int64_t bytes = cuda::ConstBytes(a->buffer);
      if (bytes < 0) return self;  // codegen reports the unknown size at the Allocate
      target::SharedLayout tile_layout = LayoutOf(a->buffer, gemm_operands, wgmma_operands, staging);
      layouts[a->buffer.get()] = tile_layout;
      int64_t align = layout::SharedAlignment(target::IsSwizzled(tile_layout));
      slots.push_back(Slot{a->buffer.get(), bytes, align, live.Of(a->buffer.get())});
    }
    std::vector<Slot> reused = slots;
    int64_t in_order = PlaceInOrder(slots);
    int64_t peak = PlaceByLiveness(reused);
    std::string reuse = DescribeReuse(reused);
    // Without reuse, a smaller peak would only come from reordering around padding.
    if (peak < in_order && !reuse.empty()) {
      slots = reused;
      ctx_.remarks.push_back("shared memory: " + std::to_string(peak) + " bytes instead of " +
                             std::to_string(in_order) + " (" + std::to_string(in_order - peak) +
                             " saved by reusing the bytes of dead buffers: " + reuse + ")");
    }
    target::SharedPlan plan;
    for (const Slot& s : slots) plan[s.buffer] = target::PlannedTile{s.offset, s.offset + s.bytes, layouts.at(s.buffer)};
    std::string names;
    for (const Allocate* a : live.allocs) {
      if (staging.count(a->buffer.get())) names += (names.empty() ? "" : ", ") + a->buffer->name;
    }
    if (!names.empty()) {
      ctx_.remarks.push_back("shared memory: " + names + " XOR-swizzled (staging tiles: element and 16-byte "
                             "accesses only; rows of one column in different banks)");
    }
    Stmt body = RecordPlan(plan).Mutate(op->body);
    return For::Make(op->var, op->min, op->extent, op->for_kind, body, op->annotations, op->span);
  }

 private:
  PassContext& ctx_;
};

}  // namespace

ir::PrimFunc CudaPlanSharedMemory(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, Planner(ctx).Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-plan-shared-memory", CudaPlanSharedMemory);

}  // namespace tl::transform
