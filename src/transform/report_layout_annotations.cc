// SPDX-License-Identifier: Apache-2.0
/// \file "report-layout-annotations": T.annotate_layout is accepted but not applied (the
/// compiler chooses every tile's layout, and every access goes through that choice, so
/// results do not depend on it); each annotated tile is named in the remarks so that the
/// decision is visible. The annotation statements are dropped. Attributes "tl.remark:<text>"
/// (hints the front end accepts without acting on them) become remarks the same way, and
/// "tl.unsupported:<text>" compile errors at their line.
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class Reporter : public IRMutator {
 public:
  explicit Reporter(PassContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt Mutate_(const AttrStmt* op, const Stmt& self) override {
    // "tl.remark:<text>": a front-end note on a hint that is accepted but has no effect here
    // (T.annotate_safe_value, T.pdl_sync, ...): the text becomes a remark with its line.
    if (op->key.rfind("tl.remark:", 0) == 0) {
      ctx_.remarks.push_back(op->key.substr(10) + " (line " + std::to_string(op->span.line) + ")");
      return Seq::Make({}, op->span);
    }
    // "tl.unsupported:<text>": a construct the front end accepted so that the program
    // loads, but that cannot be compiled; the error comes at compile time, at its line (as
    // upstream's does, so tests that expect it around the compile call see it).
    if (op->key.rfind("tl.unsupported:", 0) == 0) TL_USER_ERROR(op->span) << op->key.substr(15);
    if (op->key != "layout_annotation") return IRMutator::Mutate_(op, self);
    for (const Expr& v : op->values) {
      const auto* addr = As<Call>(v);
      const auto* load = addr && !addr->args.empty() ? As<BufferLoad>(addr->args[0]) : nullptr;
      if (!load) continue;
      ctx_.remarks.push_back("T.annotate_layout(" + load->buffer->name + ", line " + std::to_string(op->span.line) +
                             "): not applied; the compiler chooses this tile's layout (shared GEMM operands are "
                             "swizzled for conflict-free access)");
    }
    return Seq::Make({}, op->span);
  }

 private:
  PassContext& ctx_;
};

}  // namespace

ir::PrimFunc ReportLayoutAnnotations(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, Reporter(ctx).Mutate(f->body), f->span);
}

TL_REGISTER_PASS("report-layout-annotations", ReportLayoutAnnotations);

}  // namespace tl::transform
