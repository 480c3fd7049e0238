// SPDX-License-Identifier: Apache-2.0
/// \file Statement and tile-op constructors, with their invariant checks.
#include "tl/ir/stmt.h"

namespace tl::ir {

Region Region::Full(const Buffer& b) {
  Region r{b, {}};
  for (const Expr& d : b->shape) r.ranges.push_back({MakeInt(0, d->dtype), d});
  return r;
}

const char* ForKindName(ForKind k) {
  switch (k) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "Parallel";
    case ForKind::kPipelined: return "Pipelined";
    case ForKind::kUnrolled: return "unroll";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kThreadBinding: return "thread_binding";
  }
  return "?";
}

const char* ReduceKindName(ReduceKind k) {
  switch (k) {
    case ReduceKind::kSum: return "sum";
    case ReduceKind::kAbsSum: return "abssum";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kMin: return "min";
    case ReduceKind::kAbsMax: return "absmax";
    case ReduceKind::kMaxNan: return "max";
    case ReduceKind::kMinNan: return "min";
    case ReduceKind::kAbsMaxNan: return "absmax";
  }
  return "?";
}

bool PropagatesNan(ReduceKind k) {
  return k == ReduceKind::kMaxNan || k == ReduceKind::kMinNan || k == ReduceKind::kAbsMaxNan;
}

ReduceKind WithoutNan(ReduceKind k) {
  switch (k) {
    case ReduceKind::kMaxNan: return ReduceKind::kMax;
    case ReduceKind::kMinNan: return ReduceKind::kMin;
    case ReduceKind::kAbsMaxNan: return ReduceKind::kAbsMax;
    default: return k;
  }
}

const char* AtomicKindName(AtomicKind k) {
  switch (k) {
    case AtomicKind::kAdd: return "add";
    case AtomicKind::kMax: return "max";
    case AtomicKind::kMin: return "min";
  }
  return "?";
}

Stmt For::Make(VarRef var, Expr min, Expr extent, ForKind kind, Stmt body,
               std::map<std::string, Expr> annotations, Span span) {
  TL_ICHECK(var && min && extent && body) << "incomplete For";
  return std::make_shared<For>(std::move(var), std::move(min), std::move(extent), kind,
                               std::move(body), std::move(annotations), std::move(span));
}

Stmt While::Make(Expr cond, Stmt body, Span span) {
  TL_ICHECK(cond->dtype.IsBool()) << "while condition must be bool";
  return std::make_shared<While>(std::move(cond), std::move(body), std::move(span));
}

Stmt IfThenElse::Make(Expr cond, Stmt then_case, Stmt else_case, Span span) {
  TL_ICHECK(cond && cond->dtype.IsBool()) << "if condition must be bool";
  return std::make_shared<IfThenElse>(std::move(cond), std::move(then_case), std::move(else_case),
                                      std::move(span));
}

namespace {
bool DeclaresSomething(const Seq* seq) {
  for (const Stmt& s : seq->stmts) {
    if (s->kind == NodeKind::kLetStmt || s->kind == NodeKind::kAllocate) return true;
  }
  return false;
}
}  // namespace

Stmt Seq::Make(std::vector<Stmt> stmts, Span span) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s) continue;
    const auto* inner = As<Seq>(s);
    // A nested Seq that declares nothing can be spliced without changing any scope.
    if (inner && !DeclaresSomething(inner)) {
      flat.insert(flat.end(), inner->stmts.begin(), inner->stmts.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1 && flat[0]->kind != NodeKind::kLetStmt &&
      flat[0]->kind != NodeKind::kAllocate) {
    return flat[0];
  }
  return std::make_shared<Seq>(std::move(flat), std::move(span));
}

Stmt LetStmt::Make(VarRef var, Expr value, Span span) {
  TL_ICHECK(var->dtype == value->dtype) << "let " << var->name << ": type " << var->dtype.str()
                                        << " bound to " << value->dtype.str();
  return std::make_shared<LetStmt>(std::move(var), std::move(value), std::move(span));
}

Stmt BufferStore::Make(Buffer buffer, std::vector<Expr> indices, Expr value, Span span) {
  TL_ICHECK(indices.size() == buffer->shape.size())
      << "store to " << buffer->name << " with " << indices.size() << " indices";
  TL_ICHECK(value->dtype == buffer->dtype)
      << "store of " << value->dtype.str() << " into " << buffer->dtype.str() << " buffer "
      << buffer->name;
  return std::make_shared<BufferStore>(std::move(buffer), std::move(indices), std::move(value),
                                       std::move(span));
}

Stmt Allocate::Make(Buffer buffer, Expr init, Span span) {
  TL_ICHECK(buffer->scope != Scope::kGlobal) << "Allocate of global buffer " << buffer->name;
  return std::make_shared<Allocate>(std::move(buffer), std::move(init), std::move(span));
}

Stmt Evaluate::Make(Expr value, Span span) {
  return std::make_shared<Evaluate>(std::move(value), std::move(span));
}

Stmt AttrStmt::Make(std::string key, std::vector<Expr> values, Span span) {
  return std::make_shared<AttrStmt>(std::move(key), std::move(values), std::move(span));
}

Stmt Break::Make(Span span) { return std::make_shared<Break>(std::move(span)); }
Stmt Continue::Make(Span span) { return std::make_shared<Continue>(std::move(span)); }

Stmt KernelLaunch::Make(std::vector<Expr> grid, std::vector<VarRef> block_vars,
                        std::vector<int64_t> threads, Stmt body, Span span) {
  TL_ICHECK(!grid.empty() && grid.size() <= 3) << "kernel grid must have 1 to 3 dims";
  TL_ICHECK(grid.size() == block_vars.size()) << "one block variable per grid dim";
  TL_ICHECK(!threads.empty() && threads.size() <= 3) << "1 to 3 thread extents";
  return std::make_shared<KernelLaunch>(std::move(grid), std::move(block_vars), std::move(threads),
                                        std::move(body), std::move(span));
}

namespace {
void CheckRegion(const Region& r, const char* what) {
  TL_ICHECK(r.buffer) << what << ": region without buffer";
  TL_ICHECK(r.ranges.size() == r.buffer->shape.size())
      << what << ": region of " << r.buffer->name << " has " << r.ranges.size() << " ranges for "
      << r.buffer->shape.size() << " dims";
}
}  // namespace

Stmt CopyOp::Make(Region src, Region dst, Span span, bool disable_tma) {
  CheckRegion(src, "copy");
  CheckRegion(dst, "copy");
  return std::make_shared<CopyOp>(std::move(src), std::move(dst), std::move(span), disable_tma);
}

Stmt GemmOp::Make(Region a, Region b, Region c, bool trans_a, bool trans_b, GemmPolicy policy,
                  Expr clear_accum, Span span, bool tf32, bool async_wgmma) {
  CheckRegion(a, "gemm");
  CheckRegion(b, "gemm");
  CheckRegion(c, "gemm");
  return std::make_shared<GemmOp>(std::move(a), std::move(b), std::move(c), trans_a, trans_b,
                                  policy, std::move(clear_accum), std::move(span), tf32, async_wgmma);
}

Stmt FillOp::Make(Region dst, Expr value, Span span) {
  CheckRegion(dst, "fill");
  return std::make_shared<FillOp>(std::move(dst), std::move(value), std::move(span));
}

Stmt ReduceOp::Make(Region src, Region dst, ReduceKind kind, int dim, bool clear, Span span) {
  CheckRegion(src, "reduce");
  CheckRegion(dst, "reduce");
  TL_ICHECK(dim >= 0 && dim < static_cast<int>(src.ranges.size())) << "reduce dim out of range";
  return std::make_shared<ReduceOp>(std::move(src), std::move(dst), kind, dim, clear,
                                    std::move(span));
}

Stmt AtomicOp::Make(AtomicKind kind, Region dst, Region src, Expr value, Span span) {
  CheckRegion(dst, "atomic");
  TL_ICHECK((src.buffer != nullptr) != (value != nullptr)) << "atomic needs a region or a value";
  return std::make_shared<AtomicOp>(kind, std::move(dst), std::move(src), std::move(value),
                                    std::move(span));
}

std::shared_ptr<const PrimFuncNode> PrimFuncNode::Make(std::string name, std::vector<Param> params,
                                                       Stmt body, Span span) {
  return std::make_shared<PrimFuncNode>(std::move(name), std::move(params), std::move(body),
                                        std::move(span));
}

}  // namespace tl::ir
