// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-lower-copies": T.copy between global and shared memory as vectorized,
/// thread-partitioned loops (see copy_lowering.h). Copies it cannot vectorize are left
/// for the generic loop lowering. Under a condition selecting a range of threads
/// (thread_range.h) a copy is spread over those threads; under another thread-dependent
/// condition it is refused.
///
/// On sm_90 and newer, T.tma_copy(shared, global) is a TMA store issued by one thread
/// (tma_copy.h; a store TMA cannot do is a remark). So is every T.copy of a shared tile (or
/// of a run of its whole rows) into a global tensor parameter that TMA can store, as
/// upstream lowers them (consecutive ones under one barrier and one wait), unless
/// the kernel also reads that tensor (or adds into it: the store's wait only covers reading
/// the tile, so a later read of the tensor would not be ordered after the store's writes)
/// or tl.auto_tma_store=0 (the threads store it, as on sm_80).
#include <optional>
#include <string>

#include "copy_lowering.h"
#include "tma_copy.h"
#include "thread_share.h"
#include "tl/ir/functor.h"
#include "tl/support/error.h"
#include "tl/target/warp.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file
using target::kWarpSize;

/// The tensors a kernel reads, or updates in place, anywhere: element loads (addresses and
/// atomics included), copies and reductions from them, tile atomics into them.
class ReadTensors : public IRVisitor {
 public:
  std::unordered_set<const BufferNode*> read;

 protected:
  void Visit_(const BufferLoad* op) override {
    read.insert(op->buffer.get());
    IRVisitor::Visit_(op);
  }
  void Visit_(const CopyOp* op) override {
    read.insert(op->src.buffer.get());
    IRVisitor::Visit_(op);
  }
  void Visit_(const ReduceOp* op) override {
    read.insert(op->src.buffer.get());
    read.insert(op->dst.buffer.get());
    IRVisitor::Visit_(op);
  }
  void Visit_(const AtomicOp* op) override {
    read.insert(op->dst.buffer.get());
    if (op->src.buffer) read.insert(op->src.buffer.get());
    IRVisitor::Visit_(op);
  }
  void Visit_(const GemmOp* op) override {
    for (const Region* r : {&op->a, &op->b, &op->c}) read.insert(r->buffer.get());
    IRVisitor::Visit_(op);
  }
};

std::unordered_set<const BufferNode*> TensorsRead(const Stmt& body) {
  ReadTensors v;
  v.Visit(body);
  return std::move(v.read);
}

class CopyLowerer : public cuda::ThreadShareMutator {
 public:
  CopyLowerer(const PrimFunc& f, PassContext& ctx)
      : ctx_(ctx),
        params_(f->params),
        tma_stores_(TmaStoresAvailable(ctx)),
        panels_(cuda::WgmmaOperands(f->body)),
        read_(TensorsRead(f->body)) {}

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding) return IRMutator::Mutate_(op, self);
    cuda::ThreadShare saved = share_;
    int64_t threads = 0;
    AsConstInt(op->extent, &threads);
    share_.Bind(op->var, threads);
    Stmt out = IRMutator::Mutate_(op, self);
    share_ = saved;
    return out;
  }

  Stmt Mutate_(const AttrStmt* op, const Stmt& self) override {
    if (op->key != "tl.tma_store") return IRMutator::Mutate_(op, self);
    explicit_store_ = true;  // T.tma_copy(shared, global): the copy that follows
    return Seq::Make({}, op->span);
  }

  // Consecutive copies that are all automatic TMA stores (a copy into a view split into
  // runs of the owner's rows, lower-buffer-views) share one barrier and one wait.
  Stmt Mutate_(const Seq* op, const Stmt& self) override {
    std::vector<Stmt> out;
    std::vector<cuda::TmaStoreCopy> run;
    auto flush = [&] {
      if (!run.empty()) out.push_back(cuda::LowerTmaStores(run, EQ(share_.Spread(), MakeInt(0))));
      run.clear();
    };
    for (const Stmt& s : op->stmts) {
      const auto* copy = As<CopyOp>(s);
      std::optional<cuda::TmaStoreCopy> store;
      if (copy && !explicit_store_ && share_.Bound()) store = TmaStore(copy, false);
      if (store) {
        run.push_back(*store);
        continue;
      }
      flush();
      // (a copy already found no TMA store goes straight to the threads: not checked twice)
      out.push_back(copy && !explicit_store_ && share_.Bound() ? ThreadCopy(copy, s) : Mutate(s));
    }
    flush();
    return Seq::Make(out, op->span);
  }

  Stmt Mutate_(const CopyOp* op, const Stmt& self) override {
    TL_ICHECK(share_.Bound()) << "copy outside a thread binding";
    bool asked = explicit_store_;
    explicit_store_ = false;
    if (std::optional<cuda::TmaStoreCopy> tma = TmaStore(op, asked)) {
      return cuda::LowerTmaStores({*tma}, EQ(share_.Spread(), MakeInt(0)));
    }
    return ThreadCopy(op, self);
  }

 private:
  /// The copy spread over the threads (copy_lowering.h), or `self` for the generic lowering.
  Stmt ThreadCopy(const CopyOp* op, const Stmt& self) {
    Stmt s = cuda::LowerCopyPartitioned(op, share_.Spread(), share_.SpreadThreads(), false, ctx_);
    if (s && share_.Unranged()) {
      TL_USER_ERROR(op->span) << "T.copy under a condition on the thread index that does not select a range of "
                                 "threads (tx < c, tx >= c, and their conjunctions): the copy is shared by all "
                                 "threads, so only part of it would run; test a range, or move it out";
    }
    return s ? s : self;
  }

  /// TMA stores: sm_90 or newer, unless tl.disable_tma_lower or tl.disable_tma_store.
  static bool TmaStoresAvailable(const PassContext& ctx) {
    return ctx.Cuda().HasTma() && !cuda::ConfigTrue(ctx, "tl.disable_tma_lower") &&
           !cuda::ConfigTrue(ctx, "tl.disable_tma_store");
  }

  /// The copy as a TMA store, or nullopt (`asked`: by T.tma_copy, which notes why not).
  std::optional<cuda::TmaStoreCopy> TmaStore(const CopyOp* op, bool asked) {
    if (op->src.buffer->scope != Scope::kShared || op->dst.buffer->scope != Scope::kGlobal ||
        !(asked || (auto_tma_store_ && !read_.count(op->dst.buffer.get())))) {
      return std::nullopt;
    }
    std::string why;
    bool panelled = cuda::TmaStorePanels(op, panels_);
    if (op->disable_tma) {
      why = "disable_tma=True";
    } else if (!tma_stores_) {
      why = "TMA needs sm_90 or newer (and neither tl.disable_tma_lower nor tl.disable_tma_store)";
    } else if (share_.Unranged() || share_.SpreadThreads() % kWarpSize) {
      why = "the copy runs on part of the block's threads that is not a range of whole warps";
    } else {
      why = cuda::TmaStoreUnfit(op, panelled, params_, cuda::DynamicAlignment(ctx_));
    }
    if (!why.empty()) {
      if (asked) {
        ctx_.remarks.push_back("T.tma_copy at line " + std::to_string(op->span.line) + " into " +
                               op->dst.buffer->name + ": stored by the threads, not TMA (" + why + ")");
      }
      return std::nullopt;
    }
    std::string said = "T.copy at line " + std::to_string(op->span.line) + ": " + op->src.buffer->name + " -> " +
                       op->dst.buffer->name + " is a TMA store" +
                       (panelled ? " (the tile in 128-byte-swizzled panels)" : "");
    // (once for the pieces of one copy into a view)
    if (!asked && (ctx_.remarks.empty() || ctx_.remarks.back() != said)) ctx_.remarks.push_back(said);
    return cuda::TmaStoreCopy{op, panelled};
  }

  PassContext& ctx_;
  std::vector<Param> params_;
  bool tma_stores_;
  std::unordered_set<const BufferNode*> panels_;  ///< tiles already in panel layout (wgmma operands)
  std::unordered_set<const BufferNode*> read_;    ///< tensors the kernel reads (no automatic TMA store into them)
  bool auto_tma_store_ = cuda::ConfigOn(ctx_, "tl.auto_tma_store", true);
  bool explicit_store_ = false;
};

}  // namespace

ir::PrimFunc CudaLowerCopies(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, CopyLowerer(f, ctx).Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-lower-copies", CudaLowerCopies);

}  // namespace tl::transform
