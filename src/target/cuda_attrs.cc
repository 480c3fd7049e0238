// SPDX-License-Identifier: Apache-2.0
/// \file The attributes the CUDA passes leave for the code generator (cuda_attrs.h).
#include "tl/target/cuda_attrs.h"

#include <array>

#include <functional>
#include <vector>

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/support/error.h"

namespace tl::target {

using namespace ir;  // NOLINT: implementation file

Stmt SharedOffsetAttr(int64_t offset, SharedLayout layout, const Span& span) {
  return AttrStmt::Make(kSharedOffsetAttr, {MakeInt(offset), MakeInt(static_cast<int64_t>(layout))}, span);
}

Stmt FragmentLayoutAttr(const std::string& buffer, const std::string& layout, const Span& span) {
  return AttrStmt::Make(kFragmentLayoutPrefix + buffer + " = " + layout, {}, span);
}

bool ReadFragmentLayoutAttr(const AttrStmt& attr, std::string* buffer, std::string* layout) {
  const std::string prefix = kFragmentLayoutPrefix;
  if (attr.key.compare(0, prefix.size(), prefix) != 0) return false;
  const size_t eq = attr.key.find(" = ", prefix.size());
  if (eq == std::string::npos) return false;
  *buffer = attr.key.substr(prefix.size(), eq - prefix.size());
  *layout = attr.key.substr(eq + 3);
  return true;
}

SharedPlan ReadSharedPlan(const Stmt& body) {
  struct Reader : IRVisitor {
    SharedPlan plan;
    void Visit_(const Seq* op) override {
      for (size_t i = 0; i < op->stmts.size(); ++i) {
        const auto* attr = As<AttrStmt>(op->stmts[i]);
        if (!attr || attr->key != kSharedOffsetAttr) continue;
        const auto* alloc = i + 1 < op->stmts.size() ? As<Allocate>(op->stmts[i + 1]) : nullptr;
        int64_t offset = 0, layout = 0, count = 0;
        TL_ICHECK(alloc && attr->values.size() == 2 && AsConstInt(attr->values[0], &offset) &&
                  AsConstInt(attr->values[1], &layout) && layout >= 0 &&
                  layout <= static_cast<int64_t>(SharedLayout::kWgmmaPanels))
            << kSharedOffsetAttr << " must hold an offset and a layout and precede the Allocate it places";
        TL_ICHECK(AsConstInt(arith::Analyzer().Simplify(alloc->buffer->NumElements()), &count))
            << "planned shared buffer " << alloc->buffer->name << " of unknown size";
        plan[alloc->buffer.get()] =
            PlannedTile{offset, offset + count * alloc->buffer->dtype.bytes(), static_cast<SharedLayout>(layout)};
      }
      IRVisitor::Visit_(op);
    }
  } reader;
  reader.Visit(body);
  return reader.plan;
}

Stmt DropSharedPlan(const Stmt& body) {
  struct Dropper : IRMutator {
    Stmt Mutate_(const Seq* op, const Stmt& self) override {
      std::vector<Stmt> out;
      for (const Stmt& s : op->stmts) {
        const auto* attr = As<AttrStmt>(s);
        if (!attr || attr->key != kSharedOffsetAttr) out.push_back(Mutate(s));
      }
      return Seq::Make(out, op->span);
    }
  } dropper;
  return dropper.Mutate(body);
}

const AttrStmt* FindLaunchMarker(const Stmt& body, const char* key) {
  const AttrStmt* found = nullptr;
  std::function<void(const Stmt&)> find = [&](const Stmt& s) {
    if (const auto* attr = As<AttrStmt>(s)) {
      if (attr->key == key) found = attr;
    }
    if (const auto* seq = As<Seq>(s)) {
      for (const Stmt& c : seq->stmts) find(c);
    }
    if (const auto* f = As<For>(s)) {
      if (f->for_kind == ForKind::kThreadBinding) find(f->body);
    }
    if (const auto* k = As<KernelLaunch>(s)) find(k->body);
  };
  find(body);
  return found;
}

int64_t LaunchMarker(const Stmt& body, const char* key, int64_t otherwise) {
  int64_t value = otherwise;
  if (const AttrStmt* attr = FindLaunchMarker(body, key)) AsConstInt(attr->values[0], &value);
  return value;
}

std::array<int64_t, 3> ClusterDims(const Stmt& body) {
  std::array<int64_t, 3> dims{1, 1, 1};
  if (const AttrStmt* attr = FindLaunchMarker(body, kClusterDimsAttr)) {
    for (size_t k = 0; k < 3 && k < attr->values.size(); ++k) AsConstInt(attr->values[k], &dims[k]);
  }
  return dims;
}

}  // namespace tl::target
