// SPDX-License-Identifier: Apache-2.0
/// \file The pass registry.
#include "tl/transform/pass.h"

#include <cctype>
#include <chrono>
#include <stdexcept>

#include "tl/ir/printer.h"
#include "tl/support/error.h"

namespace tl::transform {
namespace {
std::map<std::string, PassInfo>& Registry() {
  static std::map<std::string, PassInfo> registry;
  return registry;
}
}  // namespace

bool RegisterPass(const std::string& name, PassFn fn) {
  Registry()[name] = PassInfo{name, std::move(fn)};
  return true;
}

const PassInfo* FindPass(const std::string& name) {
  auto it = Registry().find(name);
  return it == Registry().end() ? nullptr : &it->second;
}

std::vector<std::string> ListPasses() {
  std::vector<std::string> names;
  for (const auto& [name, info] : Registry()) names.push_back(name);
  return names;
}

ir::PrimFunc RunPass(const std::string& name, const ir::PrimFunc& f, PassContext& ctx) {
  const PassInfo* pass = FindPass(name);
  TL_ICHECK(pass) << "unknown pass '" << name << "'";
  ir::PrimFunc out;
  const auto start = std::chrono::steady_clock::now();
  try {
    out = pass->fn(f, ctx);
  } catch (const InternalError& e) {
    // Show the IR the pass was given: the context a compiler bug report needs.
    std::string ir_text = ir::ToString(f);
    if (ir_text.size() > 4000) ir_text = ir_text.substr(0, 4000) + "\n  ...";
    throw InternalError(std::string(e.what()).substr(sizeof("internal compiler error: ") - 1) +
                        "\nin pass '" + name + "' on:\n" + ir_text);
  }
  if (ctx.timings) {
    // The pass alone: printing for ctx.dump below is not counted.
    std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
    ctx.timings->emplace_back(name, ms.count());
  }
  if (ctx.dump) ctx.dump->emplace_back(name, ir::ToString(out));
  return out;
}

bool ConfigTrue(const PassContext& ctx, const std::string& key) {
  auto it = ctx.config.find(key);
  if (it == ctx.config.end()) return false;
  std::string v = it->second;
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

bool ConfigOn(const PassContext& ctx, const std::string& key, bool default_on) {
  return ctx.config.count(key) ? ConfigTrue(ctx, key) : default_on;
}

std::optional<int64_t> ConfigInt(const PassContext& ctx, const std::string& key, int64_t lowest, int64_t highest,
                                 const Span& span, const char* expected) {
  auto it = ctx.config.find(key);
  if (it == ctx.config.end()) return std::nullopt;
  int64_t n = 0;
  bool parsed = false;
  try {
    n = std::stoll(it->second);
    parsed = true;
  } catch (const std::exception&) {
  }
  if (!parsed || n < lowest || n > highest) {
    TL_USER_ERROR(span) << key << " must be " << expected << ", got '" << it->second << "'";
  }
  return n;
}

}  // namespace tl::transform
