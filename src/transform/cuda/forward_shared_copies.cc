// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-forward-shared-copies": a T.copy between two whole shared tiles of one shape,
/// whose destination nothing else writes and whose source nothing writes while the
/// destination is read, is dropped; the destination's reads read the source. When the copy
/// converts (bfloat16 or float16 to float32), only a destination read by element loads
/// alone is forwarded, each load converting what it reads (upstream's mHC post reads its
/// bfloat16 stage through a float32 fragment kept in shared memory: half the shared bytes).
///
/// Such copies come from fragments kept in shared memory (cuda-lower-fragments): upstream's
/// mHC pre GEMM copies its staged tile into a bfloat16 fragment (`T.copy(x_smem_16,
/// x_frag_16)`) only to convert it into another; kept in shared memory, the fragment is a
/// second copy of the same bytes, a barrier and 16 KB more per block. The destination must
/// be named nowhere but in the statement list holding the copy, from the copy on, no
/// intrinsic may take its address (a GEMM reads its operands in layouts of its own), and no
/// synchronization may follow the copy in that list (past a barrier or an mbarrier
/// arrival, another thread may write the source).
/// Each forwarding is a remark.
///
/// Precondition: cuda-lower-fragments has run (fragments are registers or shared tiles);
/// the copies are still tile ops (cuda-pipeline stages the source's producer as before).
#include <unordered_map>
#include <unordered_set>

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/transform/passes.h"
#include "../region_util.h"
#include "pass_helpers.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

bool SameShape(const Buffer& a, const Buffer& b) {
  if (a->shape.size() != b->shape.size() || !a->strides.empty() || !b->strides.empty()) return false;
  for (size_t k = 0; k < a->shape.size(); ++k) {
    int64_t x = -1, y = -2;
    if (!AsConstInt(a->shape[k], &x) || !AsConstInt(b->shape[k], &y) || x != y) return false;
  }
  return true;
}

/// Buffers `s` writes, GEMM accumulators included.
std::unordered_set<const BufferNode*> WritesOf(const Stmt& s) {
  std::unordered_set<const BufferNode*> out;
  cuda::AddWrites(s, &out);
  struct Gemms : IRVisitor {
    std::unordered_set<const BufferNode*>* out;
    void Visit_(const GemmOp* op) override { out->insert(op->c.buffer.get()); }
  } g;
  g.out = &out;
  g.Visit(s);
  return out;
}

/// Whether some intrinsic call in `s` takes an address inside `b`.
bool AddressTaken(const Stmt& s, const BufferNode* b) {
  bool taken = false;
  ForEachExpr(s, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    if (!HasEffect(call, kAddress) || call->args.empty()) return;
    const auto* load = As<BufferLoad>(call->args[0]);
    taken = taken || (load && load->buffer.get() == b);
  });
  return taken;
}

/// Whether `s` synchronizes with other threads (a barrier, an mbarrier arrival or wait):
/// past one, another thread may write the source (an explicitly warp-specialized consumer
/// releasing a stage to its producer), so the destination's own bytes are needed.
bool Synchronizes(const Stmt& s) {
  bool found = false;
  ForEachExpr(s, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    found = found || HasEffect(call, kBarrier) || HasEffect(call, kPerThread);
  });
  return found;
}

/// Whether every use of `b` in `s` is an element load (no tile op region, no address).
bool OnlyElementLoads(const Stmt& s, const BufferNode* b) {
  struct Uses : IRVisitor {
    const BufferNode* b;
    bool other = false;
    void Visit_(const CopyOp* op) override {
      other |= op->src.buffer.get() == b || op->dst.buffer.get() == b;
      IRVisitor::Visit_(op);
    }
    void Visit_(const GemmOp* op) override {
      other |= op->a.buffer.get() == b || op->b.buffer.get() == b || op->c.buffer.get() == b;
      IRVisitor::Visit_(op);
    }
    void Visit_(const FillOp* op) override {
      other |= op->dst.buffer.get() == b;
      IRVisitor::Visit_(op);
    }
    void Visit_(const ReduceOp* op) override {
      other |= op->src.buffer.get() == b || op->dst.buffer.get() == b;
      IRVisitor::Visit_(op);
    }
    void Visit_(const AtomicOp* op) override {
      other |= op->dst.buffer.get() == b;
      IRVisitor::Visit_(op);
    }
  } u;
  u.b = b;
  u.Visit(s);
  return !u.other && !AddressTaken(s, b);
}

/// The destination's reads read the source: the same elements, converted to the
/// destination's dtype when the two differ.
class ReadsSource : public IRMutator {
 public:
  ReadsSource(const BufferNode* from, Buffer to) : from_(from), to_(std::move(to)) {}
  Buffer MutateBuffer(const Buffer& b) override { return b.get() == from_ ? to_ : b; }
  Expr Mutate_(const BufferLoad* op, const Expr& self) override {
    if (op->buffer.get() != from_ || to_->dtype == op->buffer->dtype) return IRMutator::Mutate_(op, self);
    std::vector<Expr> idx;
    for (const Expr& i : op->indices) idx.push_back(Mutate(i));
    return Cast::Make(op->buffer->dtype, BufferLoad::Make(to_, idx));
  }

 private:
  const BufferNode* from_;
  Buffer to_;
};

/// The float dtypes a load converts between on the fly (one instruction each way).
bool ConvertsOnLoad(DType from, DType to) {
  auto small_float = [](DType t) {
    return t == DType::Float(32) || t == DType::Float(16) || t == DType::BFloat16();
  };
  return small_float(from) && to == DType::Float(32);
}

/// How many times each buffer is named in `s` (loads, stores, tile-op regions; not its
/// Allocate).
std::unordered_map<const BufferNode*, int64_t> CountMentions(const Stmt& s) {
  struct Counter : IRVisitor {
    std::unordered_map<const BufferNode*, int64_t> n;
    void Visit_(const BufferLoad* op) override {
      ++n[op->buffer.get()];
      IRVisitor::Visit_(op);
    }
    void Visit_(const BufferStore* op) override {
      ++n[op->buffer.get()];
      IRVisitor::Visit_(op);
    }
    void Visit_(const CopyOp* op) override {
      ++n[op->src.buffer.get()];
      ++n[op->dst.buffer.get()];
      IRVisitor::Visit_(op);
    }
    void Visit_(const GemmOp* op) override {
      ++n[op->a.buffer.get()];
      ++n[op->b.buffer.get()];
      ++n[op->c.buffer.get()];
      IRVisitor::Visit_(op);
    }
    void Visit_(const FillOp* op) override {
      ++n[op->dst.buffer.get()];
      IRVisitor::Visit_(op);
    }
    void Visit_(const ReduceOp* op) override {
      ++n[op->src.buffer.get()];
      ++n[op->dst.buffer.get()];
      IRVisitor::Visit_(op);
    }
    void Visit_(const AtomicOp* op) override {
      ++n[op->dst.buffer.get()];
      IRVisitor::Visit_(op);
    }
  } c;
  c.Visit(s);
  return c.n;
}

/// Drops the Allocate of each forwarded destination.
class DropAllocations : public IRMutator {
 public:
  explicit DropAllocations(const std::unordered_set<const BufferNode*>& dropped) : dropped_(dropped) {}
  Stmt Mutate_(const Allocate* op, const Stmt& self) override {
    return dropped_.count(op->buffer.get()) ? Seq::Make({}, op->span) : self;
  }

 private:
  const std::unordered_set<const BufferNode*>& dropped_;
};

class Forwarder : public IRMutator {
 public:
  Forwarder(PassContext& ctx, const Stmt& body) : ctx_(ctx), mentions_(CountMentions(body)) {}
  std::unordered_set<const BufferNode*> dropped;

 protected:
  Stmt Mutate_(const Seq* op, const Stmt& self) override {
    std::vector<Stmt> stmts;
    for (const Stmt& s : op->stmts) stmts.push_back(Mutate(s));
    bool changed = false;
    for (size_t i = 0; i < stmts.size(); ++i) {
      const auto* copy = As<CopyOp>(stmts[i]);
      if (!copy) continue;
      const Buffer& src = copy->src.buffer;
      const Buffer& dst = copy->dst.buffer;
      // A converting copy (bfloat16 -> float32, say) is forwarded only where every read is an
      // element load, which converts what it reads.
      const bool converts = src->dtype != dst->dtype;
      if (src.get() == dst.get() || src->scope != Scope::kShared || dst->scope != Scope::kShared ||
          (converts && !ConvertsOnLoad(src->dtype, dst->dtype)) || !SameShape(src, dst) || !CoversWholeBuffer(copy->src) ||
          !CoversWholeBuffer(copy->dst)) {
        continue;
      }
      // dst: named nowhere but in this list from the copy on (wherever it is allocated: in a
      // loop body it is then written before it is read in every iteration, and nothing
      // after the list reads it), written by nothing after the copy, and read only by loads
      // and tile ops (no intrinsic's address).
      int64_t here = 0;
      for (size_t k = i; k < stmts.size(); ++k) {
        auto m = CountMentions(stmts[k]);
        here += m.count(dst.get()) ? m.at(dst.get()) : 0;
      }
      auto total = mentions_.find(dst.get());
      bool ok = total != mentions_.end() && total->second == here;
      for (size_t k = i + 1; k < stmts.size() && ok; ++k) {
        auto w = WritesOf(stmts[k]);
        ok = !w.count(dst.get()) && !w.count(src.get()) && !AddressTaken(stmts[k], dst.get()) &&
             !Synchronizes(stmts[k]) && (!converts || OnlyElementLoads(stmts[k], dst.get()));
      }
      if (!ok) continue;
      ctx_.remarks.push_back("T.copy " + src->name + " -> " + dst->name + " (line " + std::to_string(copy->span.line) +
                             "): " + dst->name + " reads " + src->name + " in place" +
                             (converts ? ", converting each element it loads" : "") +
                             " (both in shared memory, and nothing writes either while " + dst->name + " is read)");
      ReadsSource rs(dst.get(), src);
      for (size_t k = i + 1; k < stmts.size(); ++k) stmts[k] = rs.Mutate(stmts[k]);
      stmts[i] = nullptr;
      dropped.insert(dst.get());
      changed = true;
    }
    if (!changed) {
      bool same = true;
      for (size_t k = 0; k < stmts.size(); ++k) same = same && stmts[k] == op->stmts[k];
      if (same) return self;
    }
    std::vector<Stmt> out;
    for (Stmt& s : stmts) {
      if (s) out.push_back(std::move(s));
    }
    return Seq::Make(std::move(out), op->span);
  }

 private:
  PassContext& ctx_;
  std::unordered_map<const BufferNode*, int64_t> mentions_;  ///< in the function as it came
};

}  // namespace

ir::PrimFunc CudaForwardSharedCopies(const ir::PrimFunc& f, PassContext& ctx) {
  Forwarder fw(ctx, f->body);
  ir::Stmt body = fw.Mutate(f->body);
  if (!fw.dropped.empty()) body = DropAllocations(fw.dropped).Mutate(body);
  if (body == f->body) return f;
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-forward-shared-copies", CudaForwardSharedCopies);

}  // namespace tl::transform
