// SPDX-License-Identifier: Apache-2.0
/// \file Small statement helpers of the CUDA passes (see pass_helpers.h).
#include "pass_helpers.h"

#include <algorithm>
#include <cctype>

#include "tl/ir/functor.h"
#include "tl/layout/shared.h"
#include "tl/ir/intrinsics.h"
#include "tl/target/cuda_target.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

Expr PromisedMultiples(const Expr& e, const AlignmentPromise& promise, arith::Analyzer& an) {
  if (promise.elems <= 1) return e;
  struct Scale : IRMutator {
    const AlignmentPromise* promise;
    Expr Mutate_(const Var* op, const Expr& self) override {
      return promise->Covers(op) ? self * MakeInt(promise->elems, op->dtype) : self;
    }
  } scale;
  scale.promise = &promise;
  return an.Simplify(scale.Mutate(e));
}

int64_t BaseAlignment(const Buffer& b, arith::Analyzer& an) {
  switch (b->scope) {
    // The runtime refuses tensor arguments at other addresses; an address a kernel was
    // given (T.make_tensor over a T.ptr or a pointer table's entry) is known to hold
    // elements only.
    case Scope::kGlobal: return b->data ? b->dtype.bytes() : 16;
    case Scope::kShared: return layout::SharedAlignment(false);
    case Scope::kLocal:
    case Scope::kVar: {
      int64_t count = 0;
      return AsConstInt(an.Simplify(b->NumElements()), &count) ? layout::LocalAlignment(count * b->dtype.bytes()) : 0;
    }
    default: return 0;
  }
}

std::set<int64_t> ProgramNamedBarrierIds(const Stmt& body) {
  std::set<int64_t> ids;
  ForEachExpr(body, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    int64_t id = 0;
    if ((IsIntrinsic(call, TL_INTRINSIC_NAME("named_barrier_sync")) ||
         IsIntrinsic(call, TL_INTRINSIC_NAME("named_barrier_sync_all")) ||
         IsIntrinsic(call, TL_INTRINSIC_NAME("named_barrier_arrive"))) &&
        !call->args.empty() && AsConstInt(call->args[0], &id)) {
      ids.insert(id);
    }
  });
  return ids;
}

AlignmentPromise DynamicAlignment(const PassContext& ctx) {
  AlignmentPromise out;
  auto it = ctx.config.find("tl.dynamic_alignment");
  if (it == ctx.config.end()) return out;
  const std::string& text = it->second;
  size_t colon = text.find(':');
  try {
    out.elems = std::max<int64_t>(1, std::stoll(text.substr(0, colon)));
  } catch (const std::exception&) {
    return AlignmentPromise{};
  }
  for (size_t at = colon == std::string::npos ? text.size() : colon + 1; at < text.size();) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    if (comma > at) out.vars.insert(text.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

Stmt CallStmt(const std::string& name, std::vector<Expr> args, const Span& span) {
  return Evaluate::Make(Call::Make(DType::Void(), name, std::move(args)), span);
}

/// Buffers a statement names: loads, stores and tile-op regions.
std::unordered_set<const BufferNode*> BuffersOf(const Stmt& s) {
  struct Collector : IRVisitor {
    std::unordered_set<const BufferNode*> found;
    void VisitRegion(const Region& r) override {
      found.insert(r.buffer.get());
      IRVisitor::VisitRegion(r);
    }
    void Visit_(const BufferLoad* op) override {
      found.insert(op->buffer.get());
      IRVisitor::Visit_(op);
    }
    void Visit_(const BufferStore* op) override {
      found.insert(op->buffer.get());
      IRVisitor::Visit_(op);
    }
  } c;
  c.Visit(s);
  return c.found;
}

/// Adds the buffers `s` writes (stores and tile-op destinations) to `out`.
void AddWrites(const Stmt& s, std::unordered_set<const BufferNode*>* out) {
  struct Writes : IRVisitor {
    std::unordered_set<const BufferNode*>* out;
    void Visit_(const BufferStore* op) override {
      out->insert(op->buffer.get());
      IRVisitor::Visit_(op);
    }
    // Lowered stores through an address (cast_copy, vec_copy, ...: kWritesArg0), e.g. a
    // T.copy from a register fragment into a shared tile.
    void Visit_(const Call* op) override {
      if ((HasEffect(op, kWritesArg0) || HasEffect(op, kAsyncWritesArg0)) && !op->args.empty()) {
        const auto* addr = As<Call>(op->args[0]);
        if (const auto* load = addr ? As<BufferLoad>(addr->args[0]) : nullptr) out->insert(load->buffer.get());
      }
      IRVisitor::Visit_(op);
    }
    void Visit_(const CopyOp* op) override { out->insert(op->dst.buffer.get()); }
    void Visit_(const FillOp* op) override { out->insert(op->dst.buffer.get()); }
    void Visit_(const ReduceOp* op) override { out->insert(op->dst.buffer.get()); }
    void Visit_(const AtomicOp* op) override { out->insert(op->dst.buffer.get()); }
  } w;
  w.out = out;
  w.Visit(s);
}

/// Shared tiles that wgmma reads in its panel layout (see WgmmaOperandOffset), and those a
/// TMA store reads through a swizzling descriptor (tma_copy.h, TmaStorePanels).
std::unordered_set<const BufferNode*> WgmmaOperands(const Stmt& body) {
  std::unordered_set<const BufferNode*> out;
  ForEachExpr(body, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    // (tma_descriptor(tensor, swizzle, box...), address_of(tile[...]), ...)
    if (IsIntrinsic(call, TL_INTRINSIC_NAME("tma_store"))) {
      const auto* desc = As<Call>(call->args[0]);
      int64_t swizzle = 0;
      const auto* addr = As<Call>(call->args[1]);
      const auto* load = addr ? As<BufferLoad>(addr->args[0]) : nullptr;
      if (desc && desc->args.size() > 1 && AsConstInt(desc->args[1], &swizzle) && swizzle && load) {
        out.insert(load->buffer.get());
      }
      return;
    }
    if (!HasEffect(call, kPanelOperands)) return;
    for (int k = HasEffect(call, kRegisterA) ? 1 : 0; k < 2; ++k) {
      const auto* addr = As<Call>(call->args[k]);
      if (const auto* load = addr ? As<BufferLoad>(addr->args[0]) : nullptr) out.insert(load->buffer.get());
    }
  });
  return out;
}

}  // namespace tl::transform::cuda
