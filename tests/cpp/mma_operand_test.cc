// SPDX-License-Identifier: Apache-2.0
/// \file Tests of the split ldmatrix addresses of mma.sync GEMMs (templates/tl/cuda/mma_operand.h):
/// wherever split_reads takes the split, every read of every lane, warp and step lands on the
/// byte tl::swizzle gives; and the split is taken for the shapes it was made for.
#include <gtest/gtest.h>

#include <string>

#include "tl/cuda/mma_operand.h"

namespace {

struct Outcome {
  bool a_split, b_split;
  int mismatches;
  std::string first;
};

/// Every read of gemm_ss_mma<M, N, K, WM, WN, TransA, TransB, LdA, LdB, SwzA, SwzB,
/// MFastest, InterleaveM> for 16-bit operands: the split offset against tl::swizzle.
template <int M, int N, int K, int WM, int WN, bool TransA, bool TransB, int LdA, int LdB, int SwzA, int SwzB,
          bool MFastest = false, bool InterleaveM = false>
Outcome Check() {
  constexpr int kE = 2, kK = 16, kChunk = 8;
  using Grid = tl::mma_warp_grid<M, N, WM, WN, MFastest, InterleaveM>;
  using PartsA = tl::layout_parts<kE, SwzA, LdA>;
  using PartsB = tl::layout_parts<kE, SwzB, LdB>;
  using ReadsA = tl::mma_a_reads<Grid, K, kK, kChunk, TransA>;
  using ReadsB = tl::mma_b_reads<Grid, K, kK, kChunk, TransB>;
  constexpr bool kSplitA = tl::split_reads<PartsA, ReadsA, Grid::kWarps>();
  constexpr bool kSplitB = tl::split_reads<PartsB, ReadsB, Grid::kWarps>();
  Outcome out{kSplitA, kSplitB, 0, ""};
  auto record = [&](const char* what, int warp, int lane, int step, unsigned got, unsigned want) {
    if (got == want) return;
    if (out.mismatches++ == 0) {
      out.first = std::string(what) + " warp " + std::to_string(warp) + " lane " + std::to_string(lane) + " step " +
                  std::to_string(step) + ": " + std::to_string(got) + " != " + std::to_string(want);
    }
  };
  for (int warp = 0; warp < Grid::kWarps; ++warp) {
    for (int lane = 0; lane < 32; ++lane) {
      if (kSplitA) {
        const tl::RowCol t = ReadsA::thread(lane, warp);
        const unsigned base = tl::split_thread_offset<PartsA>(t);
        for (int i = 0; i < ReadsA::kSteps; ++i) {
          const tl::RowCol s = ReadsA::step(i);
          const unsigned want = tl::swizzle<kE, SwzA, LdA>((t.row + s.row) * LdA + t.col + s.col) * kE;
          record("A", warp, lane, i, tl::split_offset<PartsA>(base, s), want);
        }
      }
      if (kSplitB) {
        const tl::RowCol t = ReadsB::thread(lane, warp);
        const unsigned base = tl::split_thread_offset<PartsB>(t);
        for (int i = 0; i < ReadsB::kSteps; ++i) {
          const tl::RowCol s = ReadsB::step(i);
          const unsigned want = tl::swizzle<kE, SwzB, LdB>((t.row + s.row) * LdB + t.col + s.col) * kE;
          record("B", warp, lane, i, tl::split_offset<PartsB>(base, s), want);
        }
      }
    }
  }
  return out;
}

constexpr int kPanels = tl::kWgmmaPanels;

TEST(MmaOperand, SplitReadsLandWhereTheSwizzleSays) {
  const Outcome cases[] = {
      // sparse MLA backward's dKV GEMMs: A = dP^T (64 x 32, 64-byte panels), B = Q / dO (64 x 576 panels)
      Check<32, 512, 64, 1, 8, true, false, 32, 576, kPanels + 64, kPanels + 64>(),
      Check<32, 512, 64, 1, 8, true, false, 32, 512, tl::kXorRows, kPanels + 64>(),
      Check<32, 64, 64, 1, 8, true, false, 32, 576, kPanels + 64, kPanels + 64>(),
      Check<64, 64, 32, 1, 8, false, false, 32, 64, kPanels + 64, kPanels + 32>(),
      // plain and XOR-row tiles, both transposes, several warp grids
      Check<128, 128, 32, 2, 2, false, true, 32, 32, tl::kXorRows, tl::kXorRows>(),
      Check<128, 128, 64, 2, 2, false, false, 64, 128, tl::kXorRows, tl::kXorRows>(),
      Check<64, 128, 64, 2, 2, true, true, 64, 64, tl::kXorRows, tl::kXorRows>(),
      Check<128, 256, 32, 2, 4, false, true, 32, 32, tl::kRowMajor, tl::kRowMajor>(),
      Check<64, 64, 64, 4, 1, false, false, 72, 72, tl::kRowMajor, tl::kRowMajor>(),
      Check<128, 128, 32, 4, 2, false, true, 32, 32, tl::kXorRows, tl::kXorRows, true>(),
      Check<256, 128, 32, 2, 2, false, true, 32, 32, kPanels + 256, kPanels + 128, true, true>(),
      Check<128, 128, 64, 2, 2, false, false, 64, 128, kPanels + 128, kPanels + 64>(),
      Check<64, 96, 32, 1, 2, false, false, 32, 96, tl::kXorRows, tl::kXorRows>(),
      Check<64, 48, 32, 2, 2, false, true, 32, 32, tl::kXorRows, tl::kXorRows>(),
      Check<128, 64, 64, 4, 2, false, true, 64, 64, kPanels + 128, kPanels + 64>(),
      Check<64, 256, 64, 1, 4, false, false, 64, 256, kPanels + 64, kPanels + 64, true>(),
  };
  int i = 0;
  for (const Outcome& c : cases) {
    EXPECT_EQ(c.mismatches, 0) << "case " << i << ": " << c.first;
    ++i;
  }
  // The shapes the split was made for take it.
  EXPECT_TRUE(cases[0].a_split && cases[0].b_split);
  EXPECT_TRUE(cases[1].a_split && cases[1].b_split);
  EXPECT_TRUE(cases[4].a_split && cases[4].b_split);
  EXPECT_TRUE(cases[5].a_split && cases[5].b_split);
  EXPECT_TRUE(cases[7].a_split && cases[7].b_split);
  EXPECT_TRUE(cases[11].a_split && cases[11].b_split);
}

TEST(MmaOperand, RowsOfNoPowerOfTwoBytesKeepTheSwizzle) {
  // XOR rows of 144 bytes: the XOR is not a function of the row alone.
  using P = tl::layout_parts<2, tl::kXorRows, 72>;
  EXPECT_FALSE(P::kSplittable);
  using Grid = tl::mma_warp_grid<64, 64, 4, 1, false, false>;
  EXPECT_FALSE((tl::split_reads<P, tl::mma_a_reads<Grid, 64, 16, 8, false>, 4>()));
}

TEST(MmaOperand, LayoutPartsRebuildTheSwizzle) {
  // linear XOR row_xor equals tl::swizzle for every element of a few tiles.
  auto check = [](auto parts, auto swz, unsigned rows, unsigned cols) {
    using P = decltype(parts);
    int bad = 0;
    for (unsigned r = 0; r < rows; ++r)
      for (unsigned c = 0; c < cols; ++c)
        if ((P::linear(r, c) ^ P::row_xor(r)) != static_cast<unsigned>(swz(r * cols + c)) * 2) ++bad;
    return bad;
  };
  EXPECT_EQ(check(tl::layout_parts<2, kPanels + 64, 576>{}, [](int o) { return tl::swizzle<2, kPanels + 64, 576>(o); }, 64, 576), 0);
  EXPECT_EQ(check(tl::layout_parts<2, kPanels + 64, 32>{}, [](int o) { return tl::swizzle<2, kPanels + 64, 32>(o); }, 64, 32), 0);
  EXPECT_EQ(check(tl::layout_parts<2, kPanels + 16, 128>{}, [](int o) { return tl::swizzle<2, kPanels + 16, 128>(o); }, 64, 128), 0);
  EXPECT_EQ(check(tl::layout_parts<2, tl::kXorRows, 32>{}, [](int o) { return tl::swizzle<2, tl::kXorRows, 32>(o); }, 64, 32), 0);
  EXPECT_EQ(check(tl::layout_parts<2, tl::kXorRows, 256>{}, [](int o) { return tl::swizzle<2, tl::kXorRows, 256>(o); }, 32, 256), 0);
  EXPECT_EQ(check(tl::layout_parts<2, tl::kXorRows, 1024>{}, [](int o) { return tl::swizzle<2, tl::kXorRows, 1024>(o); }, 16, 1024), 0);
  // Rows longer than 2048 bytes: the XOR reads column bits; not split.
  EXPECT_FALSE((tl::layout_parts<2, tl::kXorRows, 4096>::kSplittable));
}

}  // namespace
