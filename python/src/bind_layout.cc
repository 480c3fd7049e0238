// SPDX-License-Identifier: Apache-2.0
/// \file `tilelang._tl.IndexMap`: the layout algebra of layout/index_map.h for
/// tilelang.layout's Layout and Fragment. Conversions only.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <stdexcept>

#include "py_ir.h"
#include "tl/layout/index_map.h"

namespace tl_bind {

using namespace nb::literals;

namespace {

layout::IndexMap MakeMap(const std::vector<PyExpr>& vars, const std::vector<int64_t>& extents,
                         const std::vector<PyExpr>& outputs) {
  layout::IndexMap m;
  for (const PyExpr& v : vars) {
    if (!As<Var>(v.e)) throw std::invalid_argument("IndexMap: the input variables must be variables");
    m.vars.push_back(std::static_pointer_cast<const Var>(v.e));
  }
  if (extents.size() != vars.size()) throw std::invalid_argument("IndexMap: one extent per input variable");
  m.extents = extents;
  m.outputs = Unwrap(outputs);
  return m;
}

std::vector<PyExpr> Vars(const layout::IndexMap& m) {
  std::vector<PyExpr> out;
  for (const auto& v : m.vars) out.push_back({v});
  return out;
}

}  // namespace

void BindLayout(nb::module_& m) {
  using layout::IndexMap;
  nb::class_<IndexMap>(m, "IndexMap", "A map from a tile's logical indices to physical indices (index_map.h).")
      .def(nb::new_([](const std::vector<PyExpr>& vars, const std::vector<int64_t>& extents,
                       const std::vector<PyExpr>& outputs) { return MakeMap(vars, extents, outputs); }),
           "vars"_a, "extents"_a, "outputs"_a)
      .def_static("input_var", [](size_t d) { return PyExpr{layout::InputVar(d)}; }, "d"_a,
                  "The variable of input dimension d, shared by every map (i<d>).")
      .def_static("replica_var", []() { return PyExpr{layout::ReplicaVar()}; })
      .def_prop_ro("vars", &Vars)
      .def_prop_ro("extents", [](const IndexMap& x) { return x.extents; })
      .def_prop_ro("outputs", [](const IndexMap& x) { return Wrap(x.outputs); })
      .def("output_extents", &layout::OutputExtents)
      .def("linearized", [](const IndexMap& x) { return PyExpr{layout::LinearizedIndex(x)}; })
      .def("apply", [](const IndexMap& x, const std::vector<PyExpr>& idx) { return Wrap(layout::Apply(x, Unwrap(idx))); },
           "indices"_a)
      .def("repeat", &layout::Repeat, "dim"_a, "factor"_a)
      .def("expand", &layout::Expand, "leading"_a)
      .def("equal", [](const IndexMap& a, const IndexMap& b) { return layout::Equal(a, b); }, "other"_a);
}

}  // namespace tl_bind
