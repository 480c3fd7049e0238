// SPDX-License-Identifier: Apache-2.0
/// \file The CUDA runtime's part of `tilelang._tl`: device queries, build_cuda (compile
/// with the disk cache) and CudaModule.launch. Conversions only; the work is in
/// src/runtime/cuda. The GIL is released while compiling and launching.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <limits>

#include "launch_dims.h"
#include "tl/runtime/cuda_module.h"
#include "tl/target/cuda_target.h"

namespace nb = nanobind;
using namespace nb::literals;

void BindCuda(nb::module_& m);

namespace {

using tl::runtime::CudaArg;
using tl_bind::Dim3;
using tl::runtime::ResourceUsage;

nb::dict UsageDict(const ResourceUsage& u) {
  nb::dict d;
  d["registers"] = u.registers;
  d["spill_stores_bytes"] = u.spill_stores_bytes;
  d["spill_loads_bytes"] = u.spill_loads_bytes;
  d["shared_bytes"] = u.shared_bytes;
  d["stack_bytes"] = u.stack_bytes;
  return d;
}

CudaArg ToArg(const std::string& kind, nb::handle value, size_t index) {
  auto fail = [&](const std::string& why) {
    throw nb::value_error(("kernel argument " + std::to_string(index) + " (" + kind + "): " + why)
                              .c_str());
  };
  try {
    if (kind == "ptr") {
      // The per-call path passes plain ints: checked first, since a failed attribute
      // lookup costs more than the rest of the conversion.
      if (PyLong_Check(value.ptr())) return CudaArg::Ptr(nb::cast<uint64_t>(value));
      // A tensor-like object stands for its data pointer.
      nb::handle v = value;
      nb::object holder;
      if (nb::hasattr(value, "data_ptr")) v = holder = value.attr("data_ptr")();
      return CudaArg::Ptr(nb::cast<uint64_t>(v));
    }
    if (kind == "i32") {
      int64_t v = nb::cast<int64_t>(value);
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        fail(std::to_string(v) + " does not fit in 32 bits");
      }
      return CudaArg::I32(static_cast<int32_t>(v));
    }
    if (kind == "i64") return CudaArg::I64(nb::cast<int64_t>(value));
    if (kind == "f32") return CudaArg::F32(static_cast<float>(nb::cast<double>(value)));
    if (kind == "f64") return CudaArg::F64(nb::cast<double>(value));
  } catch (const nb::cast_error&) {
    fail("cannot convert " + nb::cast<std::string>(nb::str(value.type())));
  }
  fail("unknown kind; use ptr, i32, i64, f32 or f64");
  return {};
}

}  // namespace

void BindCuda(nb::module_& m) {
  using namespace tl::runtime;  // NOLINT: binding file

  m.def("cuda_available", [] {
    std::string reason;
    bool ok = CudaAvailable(&reason);
    return std::make_pair(ok, reason);
  }, "Whether the CUDA driver loads and sees a device, and if not, why.");
  m.def("device_count", &CudaDeviceCount, "Number of CUDA devices (0 without a driver).");
  m.def("device_arch", &CudaDeviceArch, "device"_a = 0, "The device's arch, e.g. 'sm_90'.");
  m.def("device_attribute", &CudaDeviceAttribute, "device"_a, "attribute"_a,
        "A CU_DEVICE_ATTRIBUTE_* value, numbered as in the driver API.");
  m.def("max_shared_memory_per_block_optin", &CudaMaxSharedMemoryPerBlockOptin, "device"_a = 0);
  m.def("multiprocessor_count", &CudaMultiprocessorCount, "device"_a = 0);
  m.def("cuda_target", [](const std::string& arch) {
    using tl::target::CudaTarget;
    CudaTarget t = CudaTarget::Parse(arch);  // ValueError naming the form for a bad name
    nb::dict d;
    d["arch"] = t.arch;
    d["sm"] = t.sm;
    d["suffix"] = std::string(t.suffix ? 1 : 0, t.suffix);
    d["warp_size"] = CudaTarget::kWarpSize;
    d["max_registers_per_thread"] = CudaTarget::kMaxRegistersPerThread;
    int64_t smem = t.MaxSharedBytesPerBlock();
    d["max_shared_bytes"] = smem > 0 ? nb::cast(smem) : nb::none();
    d["wgmma"] = t.HasWgmma();
    d["tma"] = t.HasTma();
    d["cp_async"] = t.HasCpAsync();
    d["programmatic_launch"] = t.HasProgrammaticLaunch();
    return d;
  }, "arch"_a, "What the compiler knows of a CUDA arch (src/target/cuda_target.cc): its number, "
     "limits and the instructions it may use.");
  m.def("cuda_compile_arch", &tl::target::CudaTarget::CompileArchForDevice, "device_arch"_a,
        "The arch a kernel for a device of this arch is compiled for (sm_90 -> sm_90a).");
  m.def("cuda_compile_defines", &tl::target::CudaCompileDefines, "config"_a,
        "The device headers' -D switches the pass configs ask for.");
  m.def("cuda_synchronize", [] {
    nb::gil_scoped_release release;
    CudaSynchronize();
  }, "Waits for all work in the current CUDA context.");
  m.def("find_cuda_compiler", [](const std::vector<std::string>& search_dirs) {
    std::string description;
    bool ok = FindCudaCompiler(search_dirs, &description);
    return std::make_pair(ok, description);
  }, "search_dirs"_a = std::vector<std::string>{},
     "(found, description): the compiler build_cuda would use, or why there is none.");

  m.def(
      "build_cuda",
      [](const std::string& source, const std::string& arch, const std::string& cache_dir,
         const std::vector<std::string>& include_dirs, const std::vector<std::string>& flags,
         const std::vector<std::string>& search_dirs, const std::string& compiler) {
        CudaBuildOptions opts{arch, cache_dir, include_dirs, flags, search_dirs, compiler};
        CudaBuildResult r;
        {
          nb::gil_scoped_release release;
          r = BuildCudaCubin(source, opts);
        }
        nb::dict usage = UsageDict(r.usage);
        nb::dict per_function;
        for (const auto& [name, u] : r.per_function) per_function[name.c_str()] = UsageDict(u);
        usage["per_function"] = per_function;
        return nb::make_tuple(r.cubin_path, r.cache_hit, r.compiler, r.log, usage);
      },
      "source"_a, "arch"_a, "cache_dir"_a, "include_dirs"_a = std::vector<std::string>{},
      "flags"_a = std::vector<std::string>{}, "search_dirs"_a = std::vector<std::string>{},
      "compiler"_a = "",
      "Compiles CUDA C++ to a cached cubin: (cubin_path, cache_hit, compiler, log, "
      "resource_usage).");

  nb::class_<CudaModule>(m, "CudaModule")
      .def(nb::init<const std::string&, const std::string&>(), "cubin_path"_a, "entry"_a)
      .def_prop_ro("entry", &CudaModule::entry)
      .def(
          "add_tensor_map",
          [](CudaModule& self, int tensor_arg, int data_type, int elem_bytes, const std::vector<int64_t>& dims,
             const std::vector<int64_t>& box, int swizzle, const std::vector<int64_t>& im2col) {
            self.AddTensorMap(TensorMapSpec{tensor_arg, data_type, elem_bytes, dims, box, swizzle, im2col});
          },
          "tensor_arg"_a, "data_type"_a, "elem_bytes"_a, "dims"_a, "box"_a, "swizzle"_a,
          "im2col"_a = std::vector<int64_t>{},
          "Declares the kernel's next TMA tensor-map parameter (see CudaSource.tma_specs); launches build it.")
      .def_prop_rw("programmatic_launch", &CudaModule::programmatic_launch, &CudaModule::SetProgrammaticLaunch,
                   "Launch with programmatic stream serialization allowed (CudaSource.programmatic_launch).")
      .def(
          "launch",
          [](CudaModule& self, const std::vector<int64_t>& grid, const std::vector<int64_t>& block,
             int64_t shared_bytes, uint64_t stream,
             const std::vector<std::pair<std::string, nb::object>>& args) {
            if (shared_bytes < 0 || shared_bytes > std::numeric_limits<uint32_t>::max()) {
              throw nb::value_error("shared_bytes out of range");
            }
            std::vector<CudaArg> converted;
            converted.reserve(args.size());
            for (size_t i = 0; i < args.size(); ++i) {
              converted.push_back(ToArg(args[i].first, args[i].second, i));
            }
            auto g = Dim3(grid, "grid"), b = Dim3(block, "block");
            nb::gil_scoped_release release;
            self.Launch(g, b, static_cast<uint32_t>(shared_bytes), stream, converted);
          },
          "grid"_a, "block"_a, "shared_bytes"_a = 0, "stream"_a = 0,
          "args"_a = std::vector<std::pair<std::string, nb::object>>{},
          "Enqueues the kernel; args are (kind, value) with kind in ptr/i32/i64/f32/f64.")
      .def(
          "launch_packed",
          [](CudaModule& self, const std::vector<int64_t>& grid, const std::vector<int64_t>& block,
             int64_t shared_bytes, uint64_t stream, const std::string& kinds, nb::list values) {
            // The per-call path: one letter per argument (p ptr, i i32, l i64, f f32,
            // d f64) and plain Python numbers, so no per-argument objects are built.
            if (shared_bytes < 0 || shared_bytes > std::numeric_limits<uint32_t>::max()) {
              throw nb::value_error("shared_bytes out of range");
            }
            if (kinds.size() != values.size()) throw nb::value_error("one kind letter per argument is needed");
            static const char* kNames[] = {"ptr", "i32", "i64", "f32", "f64"};
            std::vector<CudaArg> converted;
            converted.reserve(kinds.size());
            for (size_t i = 0; i < kinds.size(); ++i) {
              const char* at = std::strchr("pilfd", kinds[i]);
              if (!at || !kinds[i]) throw nb::value_error("unknown kind letter; use p, i, l, f or d");
              converted.push_back(ToArg(kNames[at - "pilfd"], values[i], i));
            }
            auto g = Dim3(grid, "grid"), b = Dim3(block, "block");
            nb::gil_scoped_release release;
            self.Launch(g, b, static_cast<uint32_t>(shared_bytes), stream, converted);
          },
          "grid"_a, "block"_a, "shared_bytes"_a, "stream"_a, "kinds"_a, "values"_a,
          "Enqueues the kernel: kinds has one letter per value (p ptr, i i32, l i64, f f32, d f64).");
}
