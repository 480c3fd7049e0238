// SPDX-License-Identifier: Apache-2.0
/// \file Functions, the pass pipelines and code generation: `lower_cpu`, `lower_cuda`,
/// `codegen_*` and what the JIT reads of a CUDA source. Conversions only.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <map>

#include "tl/codegen/cpu.h"
#include "tl/codegen/cuda.h"
#include "tl/ir/equal.h"
#include "tl/ir/printer.h"
#include "tl/transform/passes.h"
#include "py_ir.h"

namespace tl_bind {

namespace {

/// One pipeline run for Python: (lowered, remarks, dumps), plus the per-pass wall times (ms)
/// when asked for.
nb::object RunPipeline(PrimFunc (*lower)(const PrimFunc&, transform::PassContext&), const PyFunc& f,
                       const std::map<std::string, std::string>& config, bool dump, bool timings) {
  transform::PassContext ctx;
  ctx.config = config;
  std::vector<std::pair<std::string, std::string>> dumps;
  std::vector<std::pair<std::string, double>> times;
  if (dump) ctx.dump = &dumps;
  if (timings) ctx.timings = &times;
  PyFunc out{lower(f.f, ctx)};
  if (timings) return nb::make_tuple(out, ctx.remarks, dumps, times);
  return nb::make_tuple(out, ctx.remarks, dumps);
}

/// A kernel's dynamic dimensions as (name, parameter, dimension, "shape" | "stride").
template <typename Dims>
std::vector<std::tuple<std::string, int, int, std::string>> DynamicDims(const Dims& dims) {
  std::vector<std::tuple<std::string, int, int, std::string>> out;
  for (const auto& d : dims) out.emplace_back(d.name, d.param, d.dim, d.stride ? "stride" : "shape");
  return out;
}

}  // namespace

void BindLowering(nb::module_& m) {
  // ---- functions, passes, code generation
  m.def("prim_func", [](const std::string& name, const std::vector<nb::object>& params, const PyStmt& body,
                        const PySpan& span) {
    std::vector<Param> ps;
    for (const nb::object& p : params) {
      if (nb::isinstance<PyBuffer>(p)) {
        ps.push_back({nb::cast<PyBuffer>(p).b, nullptr});
      } else {
        Expr e = nb::cast<PyExpr>(p).e;
        ps.push_back({nullptr, std::static_pointer_cast<const Var>(e)});
      }
    }
    return PyFunc{PrimFuncNode::Make(name, ps, body.s, ToSpan(span))};
  });
  m.def("structural_equal", [](const PyFunc& a, const PyFunc& b) { return StructuralEqual(a.f, b.f); });
  m.def("list_passes", &transform::ListPasses);
  m.def("run_pass", [](const std::string& name, const PyFunc& f) {
    transform::PassContext ctx;
    return PyFunc{transform::RunPass(name, f.f, ctx)};
  });
  m.def("lower_cpu", [](const PyFunc& f, const std::map<std::string, std::string>& config, bool dump,
                         bool timings) { return RunPipeline(transform::LowerForCpu, f, config, dump, timings); },
        nb::arg("func"), nb::arg("config"), nb::arg("dump"), nb::arg("timings") = false);
  m.def("written_params", [](const PyFunc& f) { return transform::WrittenParams(f.f); },
        "Names of the tensor parameters the function may write.");
  m.def("fragment_layouts", [](const PyFunc& f, const std::map<std::string, std::string>& config) {
    transform::PassContext ctx;
    ctx.config = config;
    nb::list out;
    for (const auto& t : transform::DescribeFragmentLayouts(f.f, ctx)) {
      nb::dict d;
      d["name"] = t.name;
      d["layout"] = t.layout;
      d["origin"] = t.origin;
      d["rows"] = t.rows;
      d["cols"] = t.cols;
      d["threads"] = t.threads;
      d["locals"] = t.locals;
      d["thread"] = t.thread;
      d["local"] = t.local;
      d["replicas"] = t.replicas;
      out.append(d);
    }
    return out;
  }, nb::arg("func"), nb::arg("config"), "The register layouts CUDA lowering chooses for one kernel's fragments.");
  m.def("split_kernels", [](const PyFunc& f) {
    std::vector<PyFunc> out;
    for (const PrimFunc& part : transform::SplitKernels(f.f)) out.push_back(PyFunc{part});
    return out;
  });
  m.def("lower_cuda", [](const PyFunc& f, const std::map<std::string, std::string>& config, bool dump,
                          bool timings) { return RunPipeline(transform::LowerForCuda, f, config, dump, timings); },
        nb::arg("func"), nb::arg("config"), nb::arg("dump"), nb::arg("timings") = false);
  nb::class_<codegen::CudaSource>(m, "CudaSource")
      .def_ro("code", &codegen::CudaSource::code)
      .def_ro("entry", &codegen::CudaSource::entry)
      .def_ro("block", &codegen::CudaSource::block)
      .def_ro("shared_bytes", &codegen::CudaSource::shared_bytes)
      .def_ro("programmatic_launch", &codegen::CudaSource::programmatic_launch)
      .def_ro("arg_kinds", &codegen::CudaSource::arg_kinds)
      .def_prop_ro("dynamic_dims", [](const codegen::CudaSource& s) { return DynamicDims(s.dynamic_dims); })
      .def_prop_ro("tma_specs", [](const codegen::CudaSource& s) {
        // (tensor_arg, data_type, elem_bytes, dims, box, swizzle): CudaModule.add_tensor_map's arguments.
        std::vector<std::tuple<int, int, int, std::vector<int64_t>, std::vector<int64_t>, int>> out;
        for (const auto& t : s.tma_specs) out.emplace_back(t.tensor_arg, t.data_type, t.elem_bytes, t.dims, t.box, t.swizzle);
        return out;
      })
      .def_prop_ro("tma_im2col", [](const codegen::CudaSource& s) {
        // Per tensor map of tma_specs: [] for a tiled map, else its im2col parameters (TmaSpec::im2col).
        std::vector<std::vector<int64_t>> out;
        for (const auto& t : s.tma_specs) out.push_back(t.im2col);
        return out;
      })
      .def_prop_ro("grid_text", [](const codegen::CudaSource& s) {
        // The grid extents as the printer writes them (for exported headers of dynamic kernels).
        std::vector<std::string> out;
        for (const Expr& e : s.grid) out.push_back(ToString(e));
        return out;
      })
      .def_ro("grid_params", &codegen::CudaSource::grid_params)
      .def("grid", [](const codegen::CudaSource& s, const std::vector<int64_t>& values) {
        // values: the dynamic dimensions, then the scalar parameters of grid_params.
        std::vector<VarRef> vars = s.dynamic_vars;
        vars.insert(vars.end(), s.grid_param_vars.begin(), s.grid_param_vars.end());
        if (values.size() != vars.size()) {
          throw nb::value_error(("grid(): " + std::to_string(vars.size()) + " values expected, got " +
                                 std::to_string(values.size())).c_str());
        }
        std::vector<int64_t> g;
        for (const Expr& e : s.grid) g.push_back(codegen::EvalWithBindings(e, vars, values));
        return g;
      });
  m.def("codegen_cuda", [](const PyFunc& f) { return codegen::GenerateCuda(f.f); });
  m.def("codegen_cpu", [](const PyFunc& f) {
    codegen::CpuSource src = codegen::GenerateCpu(f.f);
    return std::make_tuple(src.code, src.entry, DynamicDims(src.dynamic_dims));
  });

}

}  // namespace tl_bind
