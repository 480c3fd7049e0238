// SPDX-License-Identifier: Apache-2.0
/// \file Private to src/runtime/cuda: the driver API entry points we resolve with dlsym
/// (types declared here, values from the driver API reference, so no CUDA header is
/// needed to build), and the compiler back ends behind BuildCudaCubin.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tl::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;

constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorNoBinaryForGpu = 209;
constexpr int kAttrMaxSharedPerBlock = 8;        // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
constexpr int kAttrMultiprocessorCount = 16;     // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr int kAttrMaxSharedPerBlockOptin = 97;  // ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
constexpr int kFuncAttrSharedSizeBytes = 1;      // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
constexpr int kFuncAttrMaxDynamicShared = 8;     // ..._MAX_DYNAMIC_SHARED_SIZE_BYTES

/// The driver entry points, resolved once per process. Names with a `_v2` suffix are the
/// symbols the driver header maps the plain names to.
struct Driver {
  CUresult (*Init)(unsigned);                                          // cuInit
  CUresult (*DriverGetVersion)(int*);                                  // cuDriverGetVersion
  CUresult (*DeviceGetCount)(int*);                                    // cuDeviceGetCount
  CUresult (*DeviceGet)(CUdevice*, int);                               // cuDeviceGet
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice);                 // cuDeviceGetAttribute
  CUresult (*CtxGetCurrent)(CUcontext*);                               // cuCtxGetCurrent
  CUresult (*CtxSetCurrent)(CUcontext);                                // cuCtxSetCurrent
  CUresult (*CtxGetDevice)(CUdevice*);                                 // cuCtxGetDevice
  CUresult (*CtxSynchronize)();                                        // cuCtxSynchronize
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);            // cuDevicePrimaryCtxRetain
  CUresult (*ModuleLoadData)(CUmodule*, const void*);                  // cuModuleLoadData
  CUresult (*ModuleUnload)(CUmodule);                                  // cuModuleUnload
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);   // cuModuleGetFunction
  CUresult (*FuncGetAttribute)(int*, int, CUfunction);                 // cuFuncGetAttribute
  CUresult (*FuncSetAttribute)(CUfunction, int, int);                  // cuFuncSetAttribute
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, CUstream, void**, void**);  // cuLaunchKernel
  /// cuLaunchKernelEx (CUDA 12+), for launch attributes (programmatic dependent launch);
  /// null on older drivers, which then launch such kernels plainly (they still wait).
  CUresult (*LaunchKernelEx)(const void* config, CUfunction, void**, void**);
  CUresult (*GetErrorString)(CUresult, const char**);                  // cuGetErrorString
  CUresult (*GetErrorName)(CUresult, const char**);                    // cuGetErrorName
  /// cuTensorMapEncodeTiled (CUDA 12+); null on older drivers, which then cannot run
  /// kernels that load with TMA.
  CUresult (*TensorMapEncodeTiled)(void* map, int data_type, uint32_t rank, void* address, const uint64_t* dims,
                                   const uint64_t* strides, const uint32_t* box, const uint32_t* element_strides,
                                   int interleave, int swizzle, int l2_promotion, int oob_fill);
  /// cuTensorMapEncodeIm2col (CUDA 12+), for T.im2col's TMA loads; null like the above.
  CUresult (*TensorMapEncodeIm2col)(void* map, int data_type, uint32_t rank, void* address, const uint64_t* dims,
                                    const uint64_t* strides, const int* lower_corner, const int* upper_corner,
                                    uint32_t channels, uint32_t pixels, const uint32_t* element_strides,
                                    int interleave, int swizzle, int l2_promotion, int oob_fill);
};

/// The initialized driver, or nullptr with `reason` set (no library, no device, ...).
const Driver* GetDriver(std::string* reason);
/// The driver, or a std::runtime_error saying why CUDA cannot be used.
const Driver& RequireDriver();
/// "CUDA_ERROR_X (description)" for a driver status.
std::string ErrorText(const Driver& drv, CUresult status);
/// The current context; with none current, retains device 0's primary context and makes
/// it current (what the CUDA runtime, hence PyTorch, would use too).
CUcontext CurrentOrPrimaryContext(const Driver& drv);

/// A compiled cubin and the compiler's log.
struct CompileOutput {
  std::string cubin;
  std::string log;
};

/// The compiler BuildCudaCubin will use, found once: "nvrtc" or "nvcc", its identity
/// (version, enters the cache key) and a description for users.
struct CompilerChoice {
  std::string kind;
  std::string identity;
  std::string description;
  std::string path;  ///< the NVRTC library or nvcc executable
};

/// Picks NVRTC (when it loads) else nvcc; `want` forces one ("nvrtc"/"nvcc"). Throws
/// std::runtime_error saying what was tried when none is found.
CompilerChoice ChooseCompiler(const std::string& want, const std::vector<std::string>& search_dirs);

/// Compiles with the chosen compiler, adding its fixed options (architecture, C++17,
/// ptxas -v, line info) to the caller's `flags`. `work_dir` holds nvcc's temporary files.
/// Throws std::runtime_error with the command and log on failure.
CompileOutput Compile(const CompilerChoice& compiler, const std::string& source,
                      const std::string& arch, const std::vector<std::string>& include_dirs,
                      const std::vector<std::string>& flags, const std::string& work_dir);

/// The toolkit's include dir next to the compiler (for cuda_fp16.h and friends), or "".
std::string ToolkitIncludeDir(const CompilerChoice& compiler);

}  // namespace tl::runtime::cuda
