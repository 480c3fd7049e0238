// SPDX-License-Identifier: Apache-2.0
/// \file See gemm_live_columns.h.
#include "gemm_live_columns.h"

#include <algorithm>

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "../ranged_visitor.h"
#include "../region_util.h"

namespace tl::transform::cuda {
namespace {

using namespace ir;  // NOLINT: implementation file

/// Walks the kernel with the ranges of block indices and loops bound, bounding the live
/// columns of B over every write, and failing on any use of B or C it cannot account for.
class LiveColumnScan : public RangedVisitor {
 public:
  LiveColumnScan(const GemmOp* gemm, int64_t n, int n_dim)
      : b_(gemm->b.buffer.get()), c_(gemm->c.buffer.get()), n_(n), n_dim_(n_dim) {}
  bool ok = true;
  int64_t live = 0;   ///< the most columns any copy into B can bring from inside its tensor
  int copies = 0;
  std::string source;

 protected:
  void Visit_(const BufferStore* op) override {
    if (op->buffer.get() == b_ || op->buffer.get() == c_) ok = false;
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferLoad* op) override {
    if (op->buffer.get() == c_) ok = false;  // (an element read of C: a fused epilogue)
    IRVisitor::Visit_(op);
  }
  void Visit_(const Call* op) override {
    // An address handed to an intrinsic may be written through (cp.async, TMA, im2col).
    for (const Expr& a : op->args) {
      ForEachExpr(a, [&](const Expr& e) {
        const auto* load = As<BufferLoad>(e);
        if (load && (load->buffer.get() == b_ || load->buffer.get() == c_)) ok = false;
      });
    }
    IRVisitor::Visit_(op);
  }
  void Visit_(const FillOp* op) override {
    if (op->dst.buffer.get() == b_) ok = false;
    IRVisitor::Visit_(op);
  }
  void Visit_(const ReduceOp* op) override {
    if (op->dst.buffer.get() == b_ || op->dst.buffer.get() == c_ || op->src.buffer.get() == c_) ok = false;
    IRVisitor::Visit_(op);
  }
  void Visit_(const AtomicOp* op) override {
    if (op->dst.buffer.get() == b_ || op->dst.buffer.get() == c_ || op->src.buffer.get() == c_) ok = false;
    IRVisitor::Visit_(op);
  }
  void Visit_(const GemmOp* op) override {
    if (op->c.buffer.get() == b_ || op->a.buffer.get() == c_ || op->b.buffer.get() == c_) ok = false;
    IRVisitor::Visit_(op);
  }
  void Visit_(const CopyOp* op) override {
    if (op->dst.buffer.get() == c_) ok = false;
    if (op->dst.buffer.get() == b_) Copy(op);
    IRVisitor::Visit_(op);
  }

 private:
  /// A copy into B: the columns it can bring from inside its source tensor.
  void Copy(const CopyOp* op) {
    ++copies;
    const Region& src = op->src;
    std::vector<size_t> dims = TileDims(src);
    if (!CoversWholeBuffer(op->dst) || src.buffer->scope != Scope::kGlobal || dims.size() != 2) {
      ok = false;
      return;
    }
    for (size_t k = 0; k < 2; ++k) {
      int64_t e = 0, want = 0;
      if (!AsConstInt(src.ranges[dims[k]].extent, &e) || !AsConstInt(b_->shape[k], &want) || e != want) {
        ok = false;
        return;
      }
    }
    const size_t d = dims[n_dim_];
    int64_t extent = 0;
    arith::IntBound start = an_.Bound(src.ranges[d].min);
    if (!AsConstInt(src.buffer->shape[d], &extent) || !start.min || *start.min < 0) {
      ok = false;
      return;
    }
    const int64_t here = std::clamp<int64_t>(extent - *start.min, 0, n_);
    if (here > live || source.empty()) source = src.buffer->name;
    live = std::max(live, here);
  }

  const BufferNode *b_, *c_;
  int64_t n_;
  int n_dim_;
};

}  // namespace

int64_t LiveGemmColumns(const Stmt& kernel, const GemmOp* op, std::string* source) {
  const Buffer& b = op->b.buffer;
  int64_t n = 0;
  const int n_dim = op->trans_b ? 0 : 1;
  if (b->scope != Scope::kShared || b->shape.size() != 2 || !CoversWholeBuffer(op->b) ||
      !AsConstInt(b->shape[n_dim], &n)) {
    return n > 0 ? n : 0;
  }
  LiveColumnScan scan(op, n, n_dim);
  scan.Visit(kernel);
  if (!scan.ok || scan.copies == 0 || scan.live >= n) return n;
  if (source) *source = scan.source;
  return scan.live;
}

}  // namespace tl::transform::cuda
