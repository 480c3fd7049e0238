// SPDX-License-Identifier: Apache-2.0
/// \file The table of declared intrinsics (include/tl/ir/intrinsics.def).
#include "tl/ir/intrinsics.h"

#include <unordered_map>

namespace tl::ir {
namespace {

const std::unordered_map<std::string, IntrinsicInfo>& Table() {
  static const std::unordered_map<std::string, IntrinsicInfo> table = [] {
    std::unordered_map<std::string, IntrinsicInfo> t;
#define TL_INTRINSIC(Name, Effects) t.emplace(#Name, IntrinsicInfo{#Name, static_cast<uint32_t>(Effects)});
#include "tl/ir/intrinsics.def"
    return t;
  }();
  return table;
}

}  // namespace

const IntrinsicInfo* LookupIntrinsic(const std::string& name) {
  const auto& t = Table();
  auto it = t.find(name);
  return it == t.end() ? nullptr : &it->second;
}

bool HasEffect(const std::string& name, uint32_t effects) {
  const IntrinsicInfo* info = LookupIntrinsic(name);
  return info && (info->effects & effects) == effects;
}

bool IsPureCall(const Call* call) {
  const IntrinsicInfo* info = call ? LookupIntrinsic(call->op) : nullptr;
  // A call without a value (a fence, an mbarrier's init fence) is there for what it does.
  return info && !call->dtype.IsVoid() && (info->effects & ~(kTlFunction | kThreadIndex | kAddress)) == 0;
}

}  // namespace tl::ir
