// SPDX-License-Identifier: Apache-2.0
/// \file The declared intrinsics (intrinsics.def): lookups, and the consistency of the
/// effects the passes rely on.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tl/ir/intrinsics.h"

namespace tl::ir {
namespace {

std::vector<IntrinsicInfo> All() {
  std::vector<IntrinsicInfo> out;
#define TL_INTRINSIC(Name, Effects) out.push_back(IntrinsicInfo{#Name, static_cast<uint32_t>(Effects)});
#include "tl/ir/intrinsics.def"
  return out;
}

TEST(Intrinsics, LookupAndEffects) {
  ASSERT_NE(LookupIntrinsic("syncthreads"), nullptr);
  EXPECT_TRUE(HasEffect("syncthreads", kBarrier | kBlockLevel));
  EXPECT_TRUE(HasEffect("named_barrier_sync", kBarrier));
  EXPECT_FALSE(HasEffect("named_barrier_sync", kBlockLevel));  // joins a subset of the block
  EXPECT_TRUE(HasEffect("cp_async", kAsyncWritesArg0));
  EXPECT_TRUE(HasEffect("gemm_rs_wgmma", kGemm | kRegisterA | kWgmmaPanels));
  EXPECT_FALSE(HasEffect("gemm_ss", kRegisterA));
  EXPECT_TRUE(HasEffect("atomic_or", kAtomicUpdate | kWritesArg0 | kReadsArg0));
  EXPECT_FALSE(HasEffect("atomic_load", kWritesArg0));
  EXPECT_EQ(LookupIntrinsic("my_extern_function"), nullptr);
  EXPECT_FALSE(HasEffect("my_extern_function", kNone));
}

TEST(Intrinsics, DeclaredEffectsAreConsistent) {
  std::vector<IntrinsicInfo> all = All();
  EXPECT_GT(all.size(), 50u);
  for (const IntrinsicInfo& i : all) {
    SCOPED_TRACE(i.name);
    EXPECT_EQ(LookupIntrinsic(i.name)->effects, i.effects) << "declared twice";
    if (i.effects & kReadsArg0) EXPECT_TRUE(i.effects & kWritesArg0);  // only read-modify-writes
    if (i.effects & kAtomicUpdate) EXPECT_TRUE(i.effects & kWritesArg0);
    if (i.effects & (kRegisterA | kWgmmaPanels)) EXPECT_TRUE(i.effects & kGemm);
    if (i.effects & kGemm) EXPECT_TRUE(i.effects & kBlockLevel);  // all threads issue a tile GEMM
    if (std::string(i.name).rfind("cp_async", 0) == 0) EXPECT_TRUE(i.effects & kBlockLevel);
  }
}

}  // namespace
}  // namespace tl::ir
