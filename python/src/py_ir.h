// SPDX-License-Identifier: Apache-2.0
/// \file The Python-side handles of IR values and the conversions every binding file of
/// `tilelang._tl` shares. In a named namespace: nanobind tells bound types apart by their
/// type identity, which must be the same in each file that uses them.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tl/ir/expr.h"
#include "tl/ir/stmt.h"
#include "tl/op/make.h"

namespace tl_bind {

namespace nb = nanobind;
using namespace tl;      // NOLINT: binding header
using namespace tl::ir;  // NOLINT: binding header


struct PyExpr { Expr e; };
struct PyStmt { Stmt s; };
struct PyBuffer { Buffer b; };
struct PyFunc { PrimFunc f; };

using PySpan = std::optional<std::tuple<std::string, int, int, int, int>>;

inline Span ToSpan(const PySpan& s) {
  if (!s) return {};
  auto [file, line, col, end_line, end_col] = *s;
  return Span{file, line, col, end_line, end_col};
}

inline DType ParseDType(const std::string& name) {
  DType t = DType::Parse(name);
  if (t.IsVoid() && name != "void") throw nb::value_error(("unknown dtype '" + name + "'").c_str());
  return t;
}

inline std::vector<Expr> Unwrap(const std::vector<PyExpr>& v) {
  std::vector<Expr> out;
  for (const auto& e : v) out.push_back(e.e);
  return out;
}

inline std::vector<PyExpr> Wrap(const std::vector<Expr>& v) {
  std::vector<PyExpr> out;
  for (const auto& e : v) out.push_back({e});
  return out;
}

/// (buffer, mins or None, extents with None for single indices)
using PyRegion =
    std::tuple<PyBuffer, std::optional<std::vector<PyExpr>>, std::optional<std::vector<std::optional<PyExpr>>>>;

inline op::RegionSpec ToRegion(const std::optional<PyRegion>& r) {
  op::RegionSpec spec;
  if (!r) return spec;
  spec.buffer = std::get<0>(*r).b;
  if (std::get<1>(*r)) spec.mins = Unwrap(*std::get<1>(*r));
  if (std::get<2>(*r)) {
    for (const auto& e : *std::get<2>(*r)) spec.extents.push_back(e ? e->e : nullptr);
  }
  return spec;
}

/// The binding groups, one per file (module.cc calls each once).
void BindIr(nb::module_& m);          // bind_ir.cc: IR construction and queries for the front end
void BindLowering(nb::module_& m);    // bind_lower.cc: functions, passes, code generation
void BindCpuRuntime(nb::module_& m);  // bind_cpu.cc: the CPU build and module
void BindLayout(nb::module_& m);      // bind_layout.cc: layout algebra (tilelang.layout)

}  // namespace tl_bind
