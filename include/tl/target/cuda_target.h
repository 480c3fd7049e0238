// SPDX-License-Identifier: Apache-2.0
/// \file A CUDA architecture and what the compiler may use on it, parsed once from the name
/// the user or the device gave ("sm_90a", "sm_80", "90a"). The one place that knows per-arch
/// facts: the passes ask it which instructions exist (wgmma, TMA, stmatrix), the JIT asks it
/// for the shared-memory limit to check before a build, the arch a device compiles for, and
/// the device headers' -D switches.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tl/target/warp.h"

namespace tl::target {

struct CudaTarget {
  std::string arch;  ///< normalized, "sm_90a"; empty when no arch is known
  int sm = 0;        ///< 90 for sm_90a; 0 when unknown
  char suffix = 0;   ///< 'a' (arch-specific features), 'f' (family-specific) or 0

  static constexpr int kWarpSize = ::tl::target::kWarpSize;
  static constexpr int kMaxRegistersPerThread = 255;

  /// `arch` as "sm_<number>[a|f]" or "<number>[a|f]"; throws std::invalid_argument naming
  /// the expected form for anything else.
  static CudaTarget Parse(const std::string& arch);
  /// Like Parse, but an unknown target (sm 0) for an empty or malformed name: for passes
  /// that only ask what the arch has.
  static CudaTarget Named(const std::string& arch);
  /// From the pass config "tl.target_arch" the CUDA pipeline sets (unknown without it).
  static CudaTarget FromConfig(const std::map<std::string, std::string>& config);
  /// The arch a kernel for a device of this arch ("sm_90", from the driver) is compiled
  /// for: Hopper's sm_90 becomes sm_90a, since the cubin is for this device only and so
  /// may use its arch-specific instructions (wgmma, setmaxnreg).
  static std::string CompileArchForDevice(const std::string& device_arch);

  bool Known() const { return sm > 0; }
  /// wgmma, setmaxnreg and the warp-specialized pipelines built on them: sm_90a only.
  bool HasWgmma() const { return sm == 90 && suffix == 'a'; }
  /// Hopper (sm_90, sm_90a): where a GEMM's wgmma form is weighed at all; HasWgmma says
  /// whether this arch name allows it, and cuda::WgmmaUnfit gives the reason when not.
  bool IsHopper() const { return sm == 90; }
  bool HasTma() const { return sm >= 90; }
  /// The L2 cache's bytes where the block order weighs them (cuda-launch-bounds): 50 MB on
  /// Hopper (H100, H200); 0 where not known.
  int64_t L2Bytes() const { return sm == 90 ? int64_t(50) << 20 : 0; }
  bool HasStmatrix() const { return sm >= 90; }
  bool HasCpAsync() const { return sm >= 80; }
  /// red.global.add.v2/v4.f32 (vector reductions to global memory): sm_90 on.
  bool HasVectorReductions() const { return sm >= 90; }
  /// The mma.sync shapes the tensor-core GEMMs use (m16n8k16, k32, tf32 k8): sm_80 on.
  bool HasMmaSync() const { return sm >= 80; }
  /// Blackwell's arch-specific instructions (e.g. cvt.rs stochastic rounding): sm_100a and
  /// later "a" targets.
  bool HasSm100aFeatures() const { return sm >= 100 && suffix == 'a'; }
  /// Programmatic dependent launch (griddepcontrol): sm_90 and later.
  bool HasProgrammaticLaunch() const { return sm >= 90; }
  /// Shared memory one block may opt in to, in bytes (CUDA programming guide, compute
  /// capabilities table); 0 when the arch is not in the table.
  int64_t MaxSharedBytesPerBlock() const;
};

/// The -D switches of the device headers, from the pass configs: float8 <-> float through
/// the hardware conversions (tl.enable_float8_hw_convert), tf32 tensor cores for tfloat32
/// GEMMs (tl.enable_tf32_mma), 16-bit float arithmetic as one instruction
/// (tl.enable_native_half_arith); each on unless its key is set false.
std::vector<std::string> CudaCompileDefines(const std::map<std::string, std::string>& config);

}  // namespace tl::target
