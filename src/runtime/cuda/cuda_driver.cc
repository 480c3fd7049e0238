// SPDX-License-Identifier: Apache-2.0
/// \file The CUDA driver, opened with dlopen at first use: device queries, contexts and
/// CudaModule (load a cubin, launch a kernel). Nothing here links against libcuda, so a
/// machine without a driver still imports the package; CudaAvailable says why CUDA is off.
#include <dlfcn.h>

#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "cuda_internal.h"
#include "tl/runtime/cuda_module.h"

namespace tl::runtime {
namespace cuda {
namespace {

/// Resolves one symbol into `slot`; false (and `missing` names it) when absent.
template <typename Fn>
bool Resolve(void* lib, const char* name, Fn* slot, std::string* missing) {
  *slot = reinterpret_cast<Fn>(::dlsym(lib, name));
  if (!*slot) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *slot != nullptr;
}

struct DriverState {
  Driver drv{};
  bool ok = false;
  std::string reason;
};

DriverState LoadDriver() {
  DriverState st;
  // libcuda.so.1 is the driver's soname; libcuda.so exists only with development files.
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();  // the soname's error is the one worth reporting
    st.reason = std::string("the CUDA driver could not be loaded (") + (err ? err : "not found") +
                "); install the NVIDIA driver to run kernels";
    lib = ::dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return st;
    st.reason.clear();
  }
  Driver& d = st.drv;
  std::string missing;
  Resolve(lib, "cuInit", &d.Init, &missing);
  Resolve(lib, "cuDriverGetVersion", &d.DriverGetVersion, &missing);
  Resolve(lib, "cuDeviceGetCount", &d.DeviceGetCount, &missing);
  Resolve(lib, "cuDeviceGet", &d.DeviceGet, &missing);
  Resolve(lib, "cuDeviceGetAttribute", &d.DeviceGetAttribute, &missing);
  Resolve(lib, "cuCtxGetCurrent", &d.CtxGetCurrent, &missing);
  Resolve(lib, "cuCtxSetCurrent", &d.CtxSetCurrent, &missing);
  Resolve(lib, "cuCtxGetDevice", &d.CtxGetDevice, &missing);
  Resolve(lib, "cuCtxSynchronize", &d.CtxSynchronize, &missing);
  Resolve(lib, "cuDevicePrimaryCtxRetain", &d.DevicePrimaryCtxRetain, &missing);
  Resolve(lib, "cuModuleLoadData", &d.ModuleLoadData, &missing);
  Resolve(lib, "cuModuleUnload", &d.ModuleUnload, &missing);
  Resolve(lib, "cuModuleGetFunction", &d.ModuleGetFunction, &missing);
  Resolve(lib, "cuFuncGetAttribute", &d.FuncGetAttribute, &missing);
  Resolve(lib, "cuFuncSetAttribute", &d.FuncSetAttribute, &missing);
  Resolve(lib, "cuLaunchKernel", &d.LaunchKernel, &missing);
  Resolve(lib, "cuGetErrorString", &d.GetErrorString, &missing);
  Resolve(lib, "cuGetErrorName", &d.GetErrorName, &missing);
  d.LaunchKernelEx = reinterpret_cast<decltype(d.LaunchKernelEx)>(::dlsym(lib, "cuLaunchKernelEx"));
  // Optional: only kernels that load with TMA need it, and they say so when it is absent.
  d.TensorMapEncodeTiled = reinterpret_cast<decltype(d.TensorMapEncodeTiled)>(::dlsym(lib, "cuTensorMapEncodeTiled"));
  d.TensorMapEncodeIm2col =
      reinterpret_cast<decltype(d.TensorMapEncodeIm2col)>(::dlsym(lib, "cuTensorMapEncodeIm2col"));
  if (!missing.empty()) {
    st.reason = "the CUDA driver is too old (missing " + missing + "); update the NVIDIA driver";
    return st;
  }
  CUresult status = d.Init(0);
  if (status != kCudaSuccess) {
    st.reason = "cuInit failed: " + ErrorText(d, status);
    return st;
  }
  int count = 0;
  status = d.DeviceGetCount(&count);
  if (status != kCudaSuccess || count == 0) {
    st.reason = status != kCudaSuccess ? "cuDeviceGetCount failed: " + ErrorText(d, status)
                                       : std::string("the CUDA driver sees no device");
    return st;
  }
  st.ok = true;
  return st;  // the library stays open for the life of the process, on purpose
}

void Check(const Driver& drv, CUresult status, const std::string& what) {
  if (status != kCudaSuccess) throw std::runtime_error(what + " failed: " + ErrorText(drv, status));
}

}  // namespace

const Driver* GetDriver(std::string* reason) {
  static const DriverState state = LoadDriver();  // thread-safe, once per process
  if (!state.ok && reason) *reason = state.reason;
  return state.ok ? &state.drv : nullptr;
}

const Driver& RequireDriver() {
  std::string reason;
  const Driver* drv = GetDriver(&reason);
  if (!drv) throw std::runtime_error("CUDA is not available: " + reason);
  return *drv;
}

std::string ErrorText(const Driver& drv, CUresult status) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (drv.GetErrorName) drv.GetErrorName(status, &name);
  if (drv.GetErrorString) drv.GetErrorString(status, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(status);
  if (text) out += std::string(" (") + text + ")";
  return out;
}

CUcontext CurrentOrPrimaryContext(const Driver& drv) {
  CUcontext ctx = nullptr;
  Check(drv, drv.CtxGetCurrent(&ctx), "cuCtxGetCurrent");
  if (ctx) return ctx;
  CUdevice dev = 0;
  Check(drv, drv.DeviceGet(&dev, 0), "cuDeviceGet(0)");
  // Retained for the life of the process: the CUDA runtime shares this context, so
  // releasing it could tear down PyTorch's state.
  Check(drv, drv.DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  Check(drv, drv.CtxSetCurrent(ctx), "cuCtxSetCurrent");
  return ctx;
}

}  // namespace cuda

using namespace cuda;  // NOLINT: this file implements the cuda layer

bool CudaAvailable(std::string* reason) {
  std::string why;
  bool ok = GetDriver(&why) != nullptr;
  if (reason) *reason = ok ? "" : why;
  return ok;
}

int CudaDeviceCount() {
  const Driver* drv = GetDriver(nullptr);
  int count = 0;
  if (!drv || drv->DeviceGetCount(&count) != kCudaSuccess) return 0;
  return count;
}

int CudaDeviceAttribute(int device, int attribute) {
  const Driver& drv = RequireDriver();
  CUdevice dev = 0;
  Check(drv, drv.DeviceGet(&dev, device), "cuDeviceGet(" + std::to_string(device) + ")");
  int value = 0;
  Check(drv, drv.DeviceGetAttribute(&value, attribute, dev),
        "cuDeviceGetAttribute(" + std::to_string(attribute) + ")");
  return value;
}

std::string CudaDeviceArch(int device) {
  return "sm_" + std::to_string(CudaDeviceAttribute(device, kAttrComputeCapabilityMajor)) +
         std::to_string(CudaDeviceAttribute(device, kAttrComputeCapabilityMinor));
}

int CudaMaxSharedMemoryPerBlockOptin(int device) {
  return CudaDeviceAttribute(device, kAttrMaxSharedPerBlockOptin);
}

int CudaMultiprocessorCount(int device) {
  return CudaDeviceAttribute(device, kAttrMultiprocessorCount);
}

void CudaSynchronize() {
  const Driver& drv = RequireDriver();
  CurrentOrPrimaryContext(drv);
  Check(drv, drv.CtxSynchronize(), "cuCtxSynchronize");
}

/// The cubin's bytes and, per context it was loaded into, its module and function.
struct CudaModule::Impl {
  struct Loaded {
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    int static_shared = 0;     // bytes of __shared__ declared in the kernel
    int optin_limit = 0;       // the device's opt-in shared memory per block
    int dynamic_limit = 0;     // the dynamic shared memory attribute as last set
  };
  std::string path, entry, image;
  bool programmatic_launch = false;  ///< CudaSource::programmatic_launch
  std::mutex mu;
  std::unordered_map<CUcontext, Loaded> loaded;
  /// The kernel's tensor-map parameters and, per map, the last one encoded.
  struct EncodedMap {
    bool valid = false;
    TensorMapGeometry geometry;
    alignas(128) uint64_t bytes[16] = {};
  };
  std::vector<TensorMapSpec> map_specs;
  std::vector<std::unique_ptr<EncodedMap>> maps;

  /// Encodes map `i` for this launch's arguments unless the cached one still holds.
  const void* TensorMap(const Driver& drv, size_t i, const std::vector<CudaArg>& args) {
    const TensorMapSpec& spec = map_specs[i];
    TensorMapGeometry g;
    try {
      g = ResolveTensorMap(spec, args);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error("kernel " + entry + ": tensor argument " + std::to_string(spec.tensor_arg) +
                               " cannot be loaded with TMA: " + e.what());
    }
    EncodedMap& m = *maps[i];
    if (m.valid && m.geometry.address == g.address && m.geometry.dims == g.dims) return m.bytes;
    const bool im2col = !spec.im2col.empty();
    if (im2col ? !drv.TensorMapEncodeIm2col : !drv.TensorMapEncodeTiled) {
      throw std::runtime_error("kernel " + entry + " loads with TMA, which this CUDA driver lacks (no " +
                               (im2col ? "cuTensorMapEncodeIm2col" : "cuTensorMapEncodeTiled") +
                               "); update the driver or compile with pass_configs={'tl.disable_tma_lower': True}");
    }
    CUresult status;
    if (im2col) {
      // (channels, pixels, stride, lower W, lower H, upper W, upper H): TensorMapSpec::im2col
      const std::vector<int64_t>& p = spec.im2col;
      const int lower[2] = {static_cast<int>(p[3]), static_cast<int>(p[4])};
      const int upper[2] = {static_cast<int>(p[5]), static_cast<int>(p[6])};
      const uint32_t steps[4] = {1, static_cast<uint32_t>(p[2]), static_cast<uint32_t>(p[2]), 1};
      status = drv.TensorMapEncodeIm2col(m.bytes, spec.data_type, static_cast<uint32_t>(g.dims.size()),
                                         reinterpret_cast<void*>(g.address), g.dims.data(), g.strides.data(), lower,
                                         upper, static_cast<uint32_t>(p[0]), static_cast<uint32_t>(p[1]), steps,
                                         /*interleave=*/0, spec.swizzle, /*l2_promotion: 128B=*/2, /*oob_fill: zeros=*/0);
    } else {
      std::vector<uint32_t> box(spec.box.begin(), spec.box.end()), element_strides(box.size(), 1);
      // A 1-D map has no strides; the driver still gets an array (a null one is suspected of
      // failing the encode: the 1-D TMA stores of the thirteenth session's GPU run failed).
      const uint64_t no_strides[1] = {0};
      // L2 promotion of 128 bytes, as upstream's maps: 256 made upstream's FP8 GEMM (64-byte
      // box rows, 4096^3) 0.187 ms against 0.179 (H100), and fp16 GEMMs and attention no faster.
      status = drv.TensorMapEncodeTiled(m.bytes, spec.data_type, static_cast<uint32_t>(g.dims.size()),
                                        reinterpret_cast<void*>(g.address), g.dims.data(),
                                        g.strides.empty() ? no_strides : g.strides.data(),
                                        box.data(), element_strides.data(), /*interleave=*/0, spec.swizzle,
                                        /*l2_promotion: 128B=*/2, /*oob_fill: zeros=*/0);
    }
    if (status != kCudaSuccess) {
      m.valid = false;
      throw std::runtime_error("kernel " + entry + ": encoding the TMA tensor map of argument " +
                               std::to_string(spec.tensor_arg) + " failed: " + ErrorText(drv, status));
    }
    m.geometry = g;
    m.valid = true;
    return m.bytes;
  }

  Loaded& LoadInto(const Driver& drv, CUcontext ctx) {
    auto it = loaded.find(ctx);
    if (it != loaded.end()) return it->second;
    Loaded l;
    CUresult status = drv.ModuleLoadData(&l.module, image.data());
    if (status != kCudaSuccess) {
      std::string hint = status == kCudaErrorNoBinaryForGpu
                             ? "; it was built for another architecture: rebuild for the "
                               "device's (see device_arch)"
                             : "";
      throw std::runtime_error("cannot load kernel " + entry + " from " + path + ": " +
                               ErrorText(drv, status) + hint);
    }
    status = drv.ModuleGetFunction(&l.function, l.module, entry.c_str());
    if (status != kCudaSuccess) {
      drv.ModuleUnload(l.module);
      throw std::runtime_error("cubin " + path + " has no kernel named " + entry + ": " +
                               ErrorText(drv, status) + " (is it declared extern \"C\"?)");
    }
    CUdevice dev = 0;
    Check(drv, drv.CtxGetDevice(&dev), "cuCtxGetDevice");
    Check(drv, drv.DeviceGetAttribute(&l.optin_limit, kAttrMaxSharedPerBlockOptin, dev),
          "cuDeviceGetAttribute(max shared memory per block, opt-in)");
    Check(drv, drv.FuncGetAttribute(&l.static_shared, kFuncAttrSharedSizeBytes, l.function),
          "cuFuncGetAttribute(shared size) of " + entry);
    return loaded.emplace(ctx, l).first->second;
  }
};

CudaModule::CudaModule(const std::string& cubin_path, const std::string& entry)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = cubin_path;
  impl_->entry = entry;
  std::ifstream in(cubin_path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read cubin " + cubin_path);
  std::stringstream ss;
  ss << in.rdbuf();
  impl_->image = ss.str();
  // Load now into the current (or primary) context, so a bad cubin or entry name fails
  // here rather than at the first launch.
  const Driver& drv = RequireDriver();
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->LoadInto(drv, CurrentOrPrimaryContext(drv));
}

CudaModule::~CudaModule() {
  const Driver* drv = GetDriver(nullptr);
  if (!drv) return;
  // Modules die with their context anyway; unloading may fail at process exit once the
  // context is gone, which is harmless, so the status is ignored.
  for (auto& [ctx, l] : impl_->loaded) drv->ModuleUnload(l.module);
}

const std::string& CudaModule::entry() const { return impl_->entry; }

void CudaModule::SetProgrammaticLaunch(bool on) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->programmatic_launch = on;
}

bool CudaModule::programmatic_launch() const { return impl_->programmatic_launch; }

void CudaModule::AddTensorMap(const TensorMapSpec& spec) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->map_specs.push_back(spec);
  impl_->maps.push_back(std::make_unique<Impl::EncodedMap>());
}

namespace {

// cuda.h's CUlaunchAttribute and CUlaunchConfig, laid out as the driver reads them (the
// header is not included: the driver is loaded with dlopen).
struct LaunchAttribute {
  uint32_t id;
  char pad[4];
  union {
    char bytes[64];
    int programmatic_stream_serialization_allowed;
  } value;
};
static_assert(sizeof(LaunchAttribute) == 72, "CUlaunchAttribute is 72 bytes");
struct LaunchConfig {
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
  CUstream stream;
  LaunchAttribute* attrs;
  unsigned num_attrs;
};
constexpr uint32_t kLaunchAttributeProgrammaticStreamSerialization = 6;

/// cuLaunchKernelEx with programmatic stream serialization allowed: the kernel may start
/// before the previous one in the stream ends (it waits with griddepcontrol.wait).
CUresult LaunchProgrammatic(const Driver& drv, CUfunction f, const std::array<uint32_t, 3>& grid,
                            const std::array<uint32_t, 3>& block, uint32_t shared_bytes, CUstream stream,
                            void** params) {
  LaunchAttribute attr{};
  attr.id = kLaunchAttributeProgrammaticStreamSerialization;
  attr.value.programmatic_stream_serialization_allowed = 1;
  LaunchConfig config{grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, stream, &attr, 1};
  return drv.LaunchKernelEx(&config, f, params, nullptr);
}

}  // namespace

void CudaModule::Launch(const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block,
                        uint32_t shared_bytes, uint64_t stream, const std::vector<CudaArg>& args) {
  const Driver& drv = RequireDriver();
  const std::string& entry = impl_->entry;
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl::Loaded& l = impl_->LoadInto(drv, CurrentOrPrimaryContext(drv));
  int64_t total_shared = static_cast<int64_t>(shared_bytes) + l.static_shared;
  if (total_shared > l.optin_limit) {
    throw std::runtime_error("kernel " + entry + " needs " + std::to_string(total_shared) +
                             " bytes of shared memory, the device allows " +
                             std::to_string(l.optin_limit));
  }
  // Beyond 48 KB per block a kernel must opt in to more dynamic shared memory.
  constexpr int64_t kDefaultSharedLimit = 48 * 1024;
  if (total_shared > kDefaultSharedLimit && static_cast<int>(shared_bytes) > l.dynamic_limit) {
    Check(drv, drv.FuncSetAttribute(l.function, kFuncAttrMaxDynamicShared, shared_bytes),
          "setting the dynamic shared memory of kernel " + entry + " to " +
              std::to_string(shared_bytes) + " bytes");
    l.dynamic_limit = static_cast<int>(shared_bytes);
  }
  std::vector<void*> params(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    // Every union member starts at the union's address, so one pointer fits all kinds.
    params[i] = const_cast<void*>(static_cast<const void*>(&args[i].value));
  }
  // Tensor maps follow, by value: cuLaunchKernel copies their 128 bytes.
  for (size_t i = 0; i < impl_->map_specs.size(); ++i) {
    params.push_back(const_cast<void*>(impl_->TensorMap(drv, i, args)));
  }
  CUstream cu_stream = reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream));
  void** kernel_params = params.empty() ? nullptr : params.data();
  CUresult status;
  if (impl_->programmatic_launch && drv.LaunchKernelEx) {
    status = LaunchProgrammatic(drv, l.function, grid, block, shared_bytes, cu_stream, kernel_params);
  } else {
    status = drv.LaunchKernel(l.function, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
                              cu_stream, kernel_params, nullptr);
  }
  if (status != kCudaSuccess) {
    throw std::runtime_error(
        "launching kernel " + entry + " (grid " + std::to_string(grid[0]) + "x" +
        std::to_string(grid[1]) + "x" + std::to_string(grid[2]) + ", block " +
        std::to_string(block[0]) + "x" + std::to_string(block[1]) + "x" +
        std::to_string(block[2]) + ", " + std::to_string(shared_bytes) +
        " bytes dynamic shared memory) failed: " + ErrorText(drv, status));
  }
}

}  // namespace tl::runtime
