// SPDX-License-Identifier: Apache-2.0
/// \file Passes as data: a name, a function PrimFunc -> PrimFunc, one registry.
///
/// The registry serves the pipelines (pipeline_<target>.cc), Python's
/// `tilelang.transform.run_pass(name, func)` and tests.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tl/ir/stmt.h"
#include "tl/target/cuda_target.h"

namespace tl::transform {

/// Per-compilation state shared by the passes of one pipeline run.
struct PassContext {
  /// User pass_configs ("tl.xxx": value), as strings.
  std::map<std::string, std::string> config;
  /// Decisions and fallbacks made on the way, shown by kernel.get_remarks().
  std::vector<std::string> remarks;
  /// When set, the IR after each pass is appended here (TILELANG_DUMP_IR / tests).
  std::vector<std::pair<std::string, std::string>>* dump = nullptr;
  /// When set, each pass's wall time in milliseconds is appended here, in order.
  std::vector<std::pair<std::string, double>>* timings = nullptr;

  /// The CUDA target of this compilation, from "tl.target_arch" (which the CUDA pipeline's
  /// caller sets; unknown on the CPU), parsed once: what every CUDA pass asks about the arch.
  const target::CudaTarget& Cuda() const {
    if (!cuda_) cuda_ = target::CudaTarget::FromConfig(config);
    return *cuda_;
  }
  /// Whether this compilation is for CUDA (its caller set "tl.target_arch"); false on the CPU.
  bool TargetsCuda() const { return config.count("tl.target_arch") > 0; }

 private:
  mutable std::optional<target::CudaTarget> cuda_;
};

/// Whether pass config `key` is set to a true value ("1", "true", "yes", "on").
bool ConfigTrue(const PassContext& ctx, const std::string& key);

/// Whether switch `key` is on: `default_on` when unset, else whether it is set to a true value
/// (so "tl.enable_wgmma_fp8": False turns off a path that is on by default).
bool ConfigOn(const PassContext& ctx, const std::string& key, bool default_on);

/// The integer value of pass config `key`, if set; a user error at `span` ("<key> must be
/// <expected>, got '<value>'") when it is not an integer in [lowest, highest].
std::optional<int64_t> ConfigInt(const PassContext& ctx, const std::string& key, int64_t lowest, int64_t highest,
                                 const Span& span, const char* expected);

using PassFn = std::function<ir::PrimFunc(const ir::PrimFunc&, PassContext&)>;

struct PassInfo {
  std::string name;
  PassFn fn;
};

/// Registers a pass; returns true so it can initialise a static.
bool RegisterPass(const std::string& name, PassFn fn);
/// The pass registered under `name`, or nullptr.
const PassInfo* FindPass(const std::string& name);
std::vector<std::string> ListPasses();
/// Runs `name` on `f`, recording the IR afterwards when ctx.dump is set and its wall
/// time when ctx.timings is set.
ir::PrimFunc RunPass(const std::string& name, const ir::PrimFunc& f, PassContext& ctx);

}  // namespace tl::transform

#define TL_REGISTER_PASS(name, fn) \
  static const bool tl_pass_registered_##fn = ::tl::transform::RegisterPass(name, fn)
