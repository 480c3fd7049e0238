// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-forward-shared-copies": a T.copy between two whole shared tiles of one dtype
/// and shape, whose destination nothing else writes and whose source nothing writes
/// while the destination is read, is dropped; the destination's reads read the source.
///
/// Such copies come from fragments kept in shared memory (cuda-lower-fragments): upstream's
/// mHC pre GEMM copies its staged tile into a bfloat16 fragment (`T.copy(x_smem_16,
/// x_frag_16)`) only to convert it into another; kept in shared memory, the fragment is a
/// second copy of the same bytes, a barrier and 16 KB more per block. The destination must
/// be allocated in the statement list holding the copy (its scope ends with the list), no
/// intrinsic may take its address (a GEMM reads its operands in layouts of its own), and no
/// synchronization may follow the copy in that list (past a barrier or an mbarrier
/// arrival, another thread may write the source).
/// Each forwarding is a remark.
///
/// Precondition: cuda-lower-fragments has run (fragments are registers or shared tiles);
/// the copies are still tile ops (cuda-pipeline stages the source's producer as before).
#include <unordered_set>

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/transform/passes.h"
#include "../region_util.h"
#include "pass_helpers.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

/// Whether `r` covers its whole buffer (every range [0, dim)).
bool WholeTile(const Region& r) {
  if (r.ranges.size() != r.buffer->shape.size()) return false;
  for (size_t k = 0; k < r.ranges.size(); ++k) {
    int64_t lo = -1, ext = -1, dim = -2;
    if (!AsConstInt(r.ranges[k].min, &lo) || lo != 0 || !AsConstInt(r.ranges[k].extent, &ext) ||
        !AsConstInt(r.buffer->shape[k], &dim) || ext != dim) {
      return false;
    }
  }
  return true;
}

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
    if (!call || call->op != "address_of" || call->args.empty()) return;
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

class ReadsSource : public IRMutator {
 public:
  ReadsSource(const BufferNode* from, Buffer to) : from_(from), to_(std::move(to)) {}
  Buffer MutateBuffer(const Buffer& b) override { return b.get() == from_ ? to_ : b; }

 private:
  const BufferNode* from_;
  Buffer to_;
};

class Forwarder : public IRMutator {
 public:
  explicit Forwarder(PassContext& ctx) : ctx_(ctx) {}

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
      if (src.get() == dst.get() || src->scope != Scope::kShared || dst->scope != Scope::kShared ||
          src->dtype != dst->dtype || !SameShape(src, dst) || !WholeTile(copy->src) || !WholeTile(copy->dst)) {
        continue;
      }
      // dst: allocated here, untouched before the copy, written by nothing after it, and
      // read only by loads and tile ops (no intrinsic's address).
      size_t alloc = stmts.size();
      for (size_t k = 0; k < i; ++k) {
        const auto* a = As<Allocate>(stmts[k]);
        if (a && a->buffer.get() == dst.get()) alloc = k;
      }
      if (alloc == stmts.size()) continue;
      bool ok = true;
      for (size_t k = alloc + 1; k < i && ok; ++k) ok = !cuda::BuffersOf(stmts[k]).count(dst.get());
      for (size_t k = i + 1; k < stmts.size() && ok; ++k) {
        auto w = WritesOf(stmts[k]);
        ok = !w.count(dst.get()) && !w.count(src.get()) && !AddressTaken(stmts[k], dst.get()) &&
             !Synchronizes(stmts[k]);
      }
      if (!ok) continue;
      ctx_.remarks.push_back("T.copy " + src->name + " -> " + dst->name + " (line " + std::to_string(copy->span.line) +
                             "): " + dst->name + " reads " + src->name +
                             " in place (both in shared memory, and nothing writes either while " + dst->name +
                             " is read)");
      ReadsSource rs(dst.get(), src);
      for (size_t k = i + 1; k < stmts.size(); ++k) stmts[k] = rs.Mutate(stmts[k]);
      stmts[i] = nullptr;
      stmts[alloc] = nullptr;
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
};

}  // namespace

ir::PrimFunc CudaForwardSharedCopies(const ir::PrimFunc& f, PassContext& ctx) {
  ir::Stmt body = Forwarder(ctx).Mutate(f->body);
  if (body == f->body) return f;
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-forward-shared-copies", CudaForwardSharedCopies);

}  // namespace tl::transform
