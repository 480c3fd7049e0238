// SPDX-License-Identifier: Apache-2.0
/// \file Which tensor parameters a kernel may write. The PyTorch custom-op wrapper declares
/// those as mutated in the op's schema; torch.compile then knows which inputs change.
#include <string>
#include <unordered_set>
#include <vector>

#include "tl/ir/intrinsics.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {
using namespace ir;

/// Buffers the body may write. Conservative: besides stores and tile-op destinations, a
/// buffer whose address is taken (`address_of`, as T.call_extern and T.print pass
/// tiles) counts as written, since the callee may write through it.
struct WriteCollector : IRVisitor {
  std::unordered_set<std::string> names;
  void Add(const Buffer& b) {
    if (b) names.insert(b->name);
  }
  void Visit_(const BufferStore* op) override {
    Add(op->buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const CopyOp* op) override {
    Add(op->dst.buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const GemmOp* op) override {
    Add(op->c.buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const FillOp* op) override {
    Add(op->dst.buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const ReduceOp* op) override {
    Add(op->dst.buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const AtomicOp* op) override {
    Add(op->dst.buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const Call* op) override {
    if (HasEffect(op, kAddress)) {
      for (const Expr& a : op->args)
        if (const auto* load = As<BufferLoad>(a)) Add(load->buffer);
    }
    IRVisitor::Visit_(op);
  }
};
}  // namespace

std::vector<std::string> WrittenParams(const ir::PrimFunc& f) {
  WriteCollector c;
  c.Visit(f->body);
  std::vector<std::string> out;
  for (const Param& p : f->params)
    if (p.buffer && c.names.count(p.buffer->name)) out.push_back(p.buffer->name);
  return out;
}

}  // namespace tl::transform
