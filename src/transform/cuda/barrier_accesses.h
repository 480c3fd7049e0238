// SPDX-License-Identifier: Apache-2.0
/// \file What cuda-insert-barriers tracks between barriers (insert_barriers.cc): the shared
/// buffers read and written since the last one (State), which buffers are the same memory
/// in the arena's plan (Memory), and the shared reads and writes of one statement
/// (AccessCollector), each with how it touched the buffer (barrier_slots.h).
#pragma once

#include <unordered_set>
#include <utility>

#include "barrier_slots.h"
#include "shared_plan.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"

namespace tl::transform::cuda::barriers {

using namespace ir;  // NOLINT: the pass's own helpers, included by insert_barriers.cc alone

using BufferSet = std::unordered_set<const BufferNode*>;

struct State {
  BufferSet reads, writes;
  BufferSet in_flight;  ///< cp.async targets with copies that may not have landed
  /// How each pending read and write touched its buffer (barrier_slots.h).
  cuda::SlotAccesses read_slots, write_slots;
  void Merge(const State& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
    in_flight.insert(o.in_flight.begin(), o.in_flight.end());
    cuda::MergeSlots(&read_slots, o.read_slots);
    cuda::MergeSlots(&write_slots, o.write_slots);
  }
  /// After __syncthreads: every thread's reads and writes are done and visible.
  void Barrier() {
    reads.clear();
    writes.clear();
    read_slots.clear();
    write_slots.clear();
  }
  /// Copies into `tiles` have landed: writes that other threads see after the next barrier,
  /// like ordinary ones (the program's own, at its T.ptx_wait_group).
  void Land(const BufferSet& tiles) {
    writes.insert(tiles.begin(), tiles.end());
    for (const BufferNode* b : tiles) write_slots[b].push_back(cuda::SlotAccess{});
  }
  /// After cp_async_wait(0): this thread's copies in flight have landed.
  void LandInFlight() {
    Land(in_flight);
    in_flight.clear();
  }
  BufferSet Accessed() const {
    BufferSet all = reads;
    all.insert(writes.begin(), writes.end());
    return all;
  }
};

/// Which buffers are the same memory: the same buffer, or overlapping planned ranges.
class Memory {
 public:
  explicit Memory(cuda::SharedPlan plan) : plan_(std::move(plan)) {}

  /// Whether some buffer of `a` and some buffer of `b` are the same memory.
  bool Intersects(const BufferSet& a, const BufferSet& b) const {
    for (const BufferNode* x : a) {
      if (b.count(x)) return true;
    }
    return Aliases(a, b);
  }
  /// Whether two different buffers share bytes.
  bool SharesBytes(const BufferNode* x, const BufferNode* y) const {
    auto ix = plan_.find(x), iy = plan_.find(y);
    return x != y && ix != plan_.end() && iy != plan_.end() && ix->second.Overlaps(iy->second);
  }
  /// Whether some buffer of `a` shares bytes with a different buffer of `b`.
  bool Aliases(const BufferSet& a, const BufferSet& b) const {
    for (const BufferNode* x : a) {
      auto ix = plan_.find(x);
      if (ix == plan_.end()) continue;
      for (const BufferNode* y : b) {
        auto iy = plan_.find(y);
        if (x != y && iy != plan_.end() && ix->second.Overlaps(iy->second)) return true;
      }
    }
    return false;
  }

 private:
  cuda::SharedPlan plan_;
};

inline bool IsShared(const Buffer& b) { return b->scope == Scope::kShared; }

/// The shared tile an address (`address_of(tile[...])`) points into, or null.
inline const BufferNode* SharedTileAt(const Expr& address) {
  const auto* addr = As<Call>(address);
  const auto* load = HasEffect(addr, kAddress) && !addr->args.empty() ? As<BufferLoad>(addr->args[0]) : nullptr;
  return load && IsShared(load->buffer) ? load->buffer.get() : nullptr;
}

/// Shared reads and writes of one unit statement.
class AccessCollector : public IRVisitor {
 public:
  BufferSet reads, writes, async_writes;
  cuda::SlotAccesses read_slots, write_slots;  ///< how each is touched
  /// In a kernel that waits for its own cp.async groups (T.ptx_wait_group): the tiles its
  /// T.ptx_cp_async copies write. Such a copy is a write of its tile where it is issued (its
  /// bytes may land any time from then on), and a wait is a write of every one of them (they
  /// have landed). Null otherwise: the program orders its copies with mbarriers.
  const BufferSet* program_copies = nullptr;
  BufferSet All() const {
    BufferSet all = reads;
    all.insert(writes.begin(), writes.end());
    all.insert(async_writes.begin(), async_writes.end());
    return all;
  }

 protected:
  void Visit_(const BufferLoad* op) override {
    if (IsShared(op->buffer)) Read(op->buffer.get(), cuda::SlotAccess{op->indices, true});
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferStore* op) override {
    if (IsShared(op->buffer)) Write(op->buffer.get(), cuda::SlotAccess{op->indices, true});
    IRVisitor::Visit_(op);
  }
  void Visit_(const Call* op) override {
    if (HasEffect(op, kAsyncWritesArg0)) {
      if (const BufferNode* tile = SharedTileAt(op->args[0])) async_writes.insert(tile);
      return;
    }
    if (program_copies && HasEffect(op, kProgramGroupCopy)) {
      if (const BufferNode* tile = SharedTileAt(op->args[0])) Write(tile, cuda::SlotAccess{});
      IRVisitor::Visit_(op);
      return;
    }
    if (program_copies && HasEffect(op, kProgramGroupWait)) {
      for (const BufferNode* b : *program_copies) Write(b, cuda::SlotAccess{});
      return;
    }
    // T.call_extern: the compiler does not see inside, so every shared tile whose address it
    // receives counts as read and written.
    if (IsExternCall(op)) {
      for (const Expr& a : op->args) {
        if (const BufferNode* tile = SharedTileAt(a)) {
          Read(tile, cuda::SlotAccess{});
          Write(tile, cuda::SlotAccess{});
        }
      }
      IRVisitor::Visit_(op);
      return;
    }
    // Calls that write through their first argument (an address_of); atomics read it too.
    bool atomic = HasEffect(op, kWritesArg0 | kReadsArg0);
    bool writes_first = HasEffect(op, kWritesArg0);
    if (writes_first && !op->args.empty()) {
      if (const auto* addr = As<Call>(op->args[0])) {
        if (const auto* load = As<BufferLoad>(addr->args[0])) {
          if (IsShared(load->buffer)) {
            Write(load->buffer.get(), cuda::SlotAccess{});
            if (atomic) Read(load->buffer.get(), cuda::SlotAccess{});
          }
          for (const Expr& i : load->indices) Visit(i);
        }
      }
      for (size_t k = 1; k < op->args.size(); ++k) Visit(op->args[k]);
      return;
    }
    IRVisitor::Visit_(op);
  }

 private:
  void Read(const BufferNode* b, cuda::SlotAccess a) {
    reads.insert(b);
    read_slots[b].push_back(std::move(a));
  }
  void Write(const BufferNode* b, cuda::SlotAccess a) {
    writes.insert(b);
    write_slots[b].push_back(std::move(a));
  }
};

}  // namespace tl::transform::cuda::barriers
