// SPDX-License-Identifier: Apache-2.0
/// \file CudaTarget (src/target/cuda_target.cc): parsing arch names, what each arch has, the
/// arch a device compiles for, and the device headers' switches from pass configs.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "tl/target/cuda_target.h"

namespace tl::target {
namespace {

TEST(CudaTarget, ParsesNamesWithAndWithoutPrefix) {
  CudaTarget h = CudaTarget::Parse("sm_90a");
  EXPECT_EQ(h.arch, "sm_90a");
  EXPECT_EQ(h.sm, 90);
  EXPECT_EQ(h.suffix, 'a');
  EXPECT_EQ(CudaTarget::Parse("90a").arch, "sm_90a");
  EXPECT_EQ(CudaTarget::Parse("sm_80").suffix, 0);
  EXPECT_EQ(CudaTarget::Parse("sm_100f").suffix, 'f');
  for (const char* bad : {"", "sm_", "sm_90b", "sm_9x", "hopper", "sm_90aa", "sm_-90"}) {
    EXPECT_THROW(CudaTarget::Parse(bad), std::invalid_argument) << bad;
    EXPECT_FALSE(CudaTarget::Named(bad).Known()) << bad;
  }
  try {
    CudaTarget::Parse("sm_9x");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sm_<number>[a|f]"), std::string::npos) << e.what();
  }
}

TEST(CudaTarget, InstructionsByArch) {
  EXPECT_TRUE(CudaTarget::Parse("sm_90a").HasWgmma());
  EXPECT_FALSE(CudaTarget::Parse("sm_90").HasWgmma());   // arch-specific: needs the suffix
  EXPECT_FALSE(CudaTarget::Parse("sm_100a").HasWgmma());  // Blackwell has no wgmma
  EXPECT_TRUE(CudaTarget::Parse("sm_90").HasTma());
  EXPECT_FALSE(CudaTarget::Parse("sm_89").HasTma());
  EXPECT_TRUE(CudaTarget::Parse("sm_80").HasCpAsync());
  EXPECT_FALSE(CudaTarget::Parse("sm_75").HasCpAsync());
  EXPECT_TRUE(CudaTarget::Parse("sm_86").HasMmaSync());
  EXPECT_FALSE(CudaTarget::Parse("sm_75").HasMmaSync());
  EXPECT_TRUE(CudaTarget::Parse("sm_100a").HasSm100aFeatures());
  EXPECT_TRUE(CudaTarget::Parse("sm_120a").HasSm100aFeatures());
  EXPECT_FALSE(CudaTarget::Parse("sm_100").HasSm100aFeatures());
  EXPECT_FALSE(CudaTarget::Parse("sm_90a").HasSm100aFeatures());
}

TEST(CudaTarget, SharedMemoryLimits) {
  EXPECT_EQ(CudaTarget::Parse("sm_90a").MaxSharedBytesPerBlock(), 232448);
  EXPECT_EQ(CudaTarget::Parse("sm_80").MaxSharedBytesPerBlock(), 166912);
  EXPECT_EQ(CudaTarget::Parse("sm_86").MaxSharedBytesPerBlock(), 101376);
  EXPECT_EQ(CudaTarget::Parse("sm_75").MaxSharedBytesPerBlock(), 0);  // not in the table: unchecked
}

TEST(CudaTarget, FromConfigAndDeviceArch) {
  EXPECT_EQ(CudaTarget::FromConfig({{"tl.target_arch", "sm_90a"}}).sm, 90);
  EXPECT_FALSE(CudaTarget::FromConfig({}).Known());  // the CPU pipeline sets no arch
  EXPECT_EQ(CudaTarget::CompileArchForDevice("sm_90"), "sm_90a");
  EXPECT_EQ(CudaTarget::CompileArchForDevice("sm_80"), "sm_80");
  EXPECT_EQ(CudaTarget::CompileArchForDevice("sm_100"), "sm_100");
}

TEST(CudaTarget, CompileDefinesFollowTheirKeys) {
  const std::vector<std::string> all = {"-DTL_FLOAT8_HW_CVT=1", "-DTL_TF32_MMA=1", "-DTL_NATIVE_HALF_ARITH=1",
                                        "-DTL_MMA_F16_ACC=1"};
  EXPECT_EQ(CudaCompileDefines({}), all);
  EXPECT_EQ(CudaCompileDefines({{"tl.enable_tf32_mma", "False"}}),
            (std::vector<std::string>{"-DTL_FLOAT8_HW_CVT=1", "-DTL_NATIVE_HALF_ARITH=1", "-DTL_MMA_F16_ACC=1"}));
  EXPECT_EQ(CudaCompileDefines({{"tl.enable_float8_hw_convert", "0"}, {"tl.enable_native_half_arith", "no"},
                                {"tl.enable_tf32_mma", "True"}, {"tl.mma_f16_accumulators", "0"}}),
            (std::vector<std::string>{"-DTL_TF32_MMA=1"}));
}

}  // namespace
}  // namespace tl::target
