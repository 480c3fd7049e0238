// SPDX-License-Identifier: Apache-2.0
/// \file Compiling CUDA C++ to a cubin (NVRTC, else nvcc; cached on disk) and launching
/// kernels through the CUDA driver. Both libcuda and libnvrtc are opened with dlopen at
/// first use, so this code links and imports on machines with no GPU and no driver; only
/// the functions that need a device fail there, with a reason.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tl::runtime {

/// What ptxas reported for one kernel (or, in a build result, the maximum over kernels).
struct ResourceUsage {
  int64_t registers = 0;
  int64_t spill_stores_bytes = 0;
  int64_t spill_loads_bytes = 0;
  int64_t shared_bytes = 0;  ///< static shared memory only; dynamic is chosen at launch
  int64_t stack_bytes = 0;
};

/// Reads `ptxas -v` output (from NVRTC's log or nvcc's stderr). Returns the maximum of
/// each field over all entry functions; `per_function`, if given, receives each entry.
ResourceUsage ParsePtxasLog(const std::string& log,
                            std::map<std::string, ResourceUsage>* per_function = nullptr);

struct CudaBuildOptions {
  std::string arch;       ///< "sm_90a", "sm_80" (also accepted: "90a", "80")
  std::string cache_dir;  ///< cubins go to <cache_dir>/cuda/<2 hex>/<key>-<hash>.cubin
  std::vector<std::string> include_dirs;  ///< -I; their headers' contents enter the key
  std::vector<std::string> flags;         ///< passed verbatim, e.g. "--use_fast_math"
  std::vector<std::string> search_dirs;   ///< site-packages dirs holding NVRTC wheels
  std::string compiler;                   ///< "" (NVRTC, else nvcc), "nvrtc" or "nvcc"
};

struct CudaBuildResult {
  std::string cubin_path;
  bool cache_hit = false;
  std::string compiler;  ///< which compiler (and version) built it, e.g. "nvrtc 13.0 (...)"
  std::string log;       ///< the compiler's log, kept beside the cubin for cache hits
  ResourceUsage usage;
  std::map<std::string, ResourceUsage> per_function;
};

/// Compiles `source` to a cubin unless one for the same (source, arch, compiler, flags,
/// headers, cache version) is cached. Entries are verified on lookup
/// (support/cache_entry.h): a missing, truncated or changed cubin or log is rebuilt and a
/// warning recorded for TakeCacheWarnings; concurrent builders never read a half-written
/// or mismatched file. Throws std::runtime_error with
/// the compiler's log on failure, or saying how to install a compiler if none is found.
CudaBuildResult BuildCudaCubin(const std::string& source, const CudaBuildOptions& options);

/// Whether a CUDA compiler can be found; `description` names it (or says why not).
bool FindCudaCompiler(const std::vector<std::string>& search_dirs, std::string* description);

/// Whether the driver loads, initializes and sees a device; if not, `reason` says why.
/// Never throws.
bool CudaAvailable(std::string* reason);
/// The number of devices, 0 when CUDA is unavailable.
int CudaDeviceCount();
/// A CU_DEVICE_ATTRIBUTE_* value (numbering as in the driver API). Throws if unavailable.
int CudaDeviceAttribute(int device, int attribute);
/// The device's architecture as "sm_<major><minor>", e.g. "sm_90".
std::string CudaDeviceArch(int device);
int CudaMaxSharedMemoryPerBlockOptin(int device);
int CudaMultiprocessorCount(int device);
/// Waits for all work in the current context (retaining device 0's primary context if
/// none is current).
void CudaSynchronize();

/// One kernel argument, passed by value the way the kernel's parameter is declared.
struct CudaArg {
  enum class Kind { kPtr, kI32, kI64, kF32, kF64 };
  Kind kind = Kind::kI64;
  union {
    uint64_t ptr;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
  } value{};

  static CudaArg Ptr(uint64_t v) { CudaArg a; a.kind = Kind::kPtr; a.value.ptr = v; return a; }
  static CudaArg I32(int32_t v) { CudaArg a; a.kind = Kind::kI32; a.value.i32 = v; return a; }
  static CudaArg I64(int64_t v) { CudaArg a; a.kind = Kind::kI64; a.value.i64 = v; return a; }
  static CudaArg F32(float v) { CudaArg a; a.kind = Kind::kF32; a.value.f32 = v; return a; }
  static CudaArg F64(double v) { CudaArg a; a.kind = Kind::kF64; a.value.f64 = v; return a; }
};

/// How the runtime builds one TMA tensor map (a kernel's `__grid_constant__` descriptor
/// parameter) at each launch, from a tensor argument: the whole tensor, contiguous,
/// row-major, described innermost dimension first as the driver takes it.
struct TensorMapSpec {
  int tensor_arg = 0;   ///< the launch argument holding the tensor's device address
  int data_type = 0;    ///< CUtensorMapDataType
  int elem_bytes = 0;
  std::vector<int64_t> dims;  ///< innermost first; v < 0 stands for launch argument -(v + 1)
  std::vector<int64_t> box;   ///< innermost first
  int swizzle = 0;            ///< CUtensorMapSwizzle
  /// Empty: a tiled map (cuTensorMapEncodeTiled). Otherwise an im2col map of a 4-D NHWC
  /// tensor (cuTensorMapEncodeIm2col; `box` unused): channels per pixel, pixels per
  /// column, traversal stride (W and H), pixel box lower corner W, H, upper corner W, H.
  std::vector<int64_t> im2col;
};

/// A tensor map's geometry for one launch: what cuTensorMapEncodeTiled takes.
struct TensorMapGeometry {
  uint64_t address = 0;
  std::vector<uint64_t> dims;     ///< innermost first
  std::vector<uint64_t> strides;  ///< bytes, of dims 1.. (the innermost is contiguous)
};

struct CudaArg;
/// Reads the tensor's address and sizes from `args` and checks what TMA requires (16-byte
/// aligned address and strides, strides below 2^40, boxes of 1..256 elements whose rows
/// are a multiple of 16 bytes). Throws std::invalid_argument saying what does not hold.
TensorMapGeometry ResolveTensorMap(const TensorMapSpec& spec, const std::vector<CudaArg>& args);

/// A cubin's kernel. The cubin is loaded into whichever context is current at launch
/// (PyTorch's, normally), once per context; with none current, the primary context of
/// device 0 is retained and made current.
class CudaModule {
 public:
  CudaModule(const std::string& cubin_path, const std::string& entry);
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  /// Enqueues the kernel on `stream` (a CUstream handle; 0 = the legacy default stream).
  /// Raises the dynamic shared memory limit when `shared_bytes` needs it, and throws
  /// std::runtime_error naming the kernel when the device cannot run it.
  void Launch(const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block,
              uint32_t shared_bytes, uint64_t stream, const std::vector<CudaArg>& args);

  const std::string& entry() const;

  /// Declares the kernel's tensor-map parameters, in order; they follow the arguments
  /// given to Launch, which builds them (cached while the tensor's address and sizes stay
  /// the same).
  void AddTensorMap(const TensorMapSpec& spec);

  /// Launches with programmatic stream serialization allowed (the kernel runs T.pdl_sync,
  /// CudaSource::programmatic_launch), through cuLaunchKernelEx where the driver has it.
  void SetProgrammaticLaunch(bool on);
  bool programmatic_launch() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tl::runtime
