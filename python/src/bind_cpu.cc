// SPDX-License-Identifier: Apache-2.0
/// \file The CPU runtime's part of `tilelang._tl`: the host compiler build (with the disk
/// cache) and CpuModule.run. The GIL is released while compiling and running.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "tl/runtime/cpu_module.h"
#include "tl/support/cache_entry.h"
#include "py_ir.h"

namespace tl_bind {

void BindCpuRuntime(nb::module_& m) {
  // ---- CPU runtime
  m.def("build_cpu", [](const std::string& source, const std::string& cache_dir, const std::string& include_dir,
                        const std::vector<std::string>& flags) {
    runtime::CpuBuildOptions opt{cache_dir, include_dir, "", flags};
    runtime::CpuBuildResult r;
    {
      nb::gil_scoped_release release;  // the host compiler can take a while
      r = runtime::BuildCpuLibrary(source, opt);
    }
    return std::make_tuple(r.library_path, r.cache_hit, r.command);
  });
  m.def("content_hash", &runtime::ContentHash);
  m.def("take_cache_warnings", &TakeCacheWarnings,
        "Warnings about broken cache entries this thread's builds found (and rebuilt), once each.");
  nb::class_<runtime::CpuModule>(m, "CpuModule")
      .def(nb::init<const std::string&, const std::string&>())
      .def("run", [](const runtime::CpuModule& mod, const nb::list& args) {
        std::vector<runtime::TLArg> a(args.size());
        for (size_t i = 0; i < args.size(); ++i) {
          nb::handle h = args[i];
          if (nb::isinstance<nb::float_>(h)) {
            a[i].f = nb::cast<double>(h);
          } else {
            a[i].i = nb::cast<int64_t>(h);
          }
        }
        nb::gil_scoped_release release;
        return mod.Run(a);
      });
}

}  // namespace tl_bind
