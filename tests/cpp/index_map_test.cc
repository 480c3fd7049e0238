// SPDX-License-Identifier: Apache-2.0
/// \file Tests of the layout algebra on index maps (layout/index_map.h).
#include <gtest/gtest.h>

#include <stdexcept>

#include "tl/ir/printer.h"
#include "tl/layout/index_map.h"

namespace {

using namespace tl::ir;  // NOLINT
using tl::layout::IndexMap;

Expr I(int64_t v) { return IntImm::Make(DType::Int(32), v); }
Expr In(size_t d) { return tl::layout::InputVar(d); }

/// [8, 64] -> i0 * 64 + i1
IndexMap RowMajor() { return {{tl::layout::InputVar(0), tl::layout::InputVar(1)}, {8, 64}, {In(0) * I(64) + In(1)}}; }

TEST(IndexMap, OutputExtentsAndLinearizedIndex) {
  EXPECT_EQ(tl::layout::OutputExtents(RowMajor()), std::vector<int64_t>({512}));
  IndexMap t{{tl::layout::InputVar(0), tl::layout::InputVar(1)}, {2, 32}, {In(1), In(0)}};
  EXPECT_EQ(tl::layout::OutputExtents(t), std::vector<int64_t>({32, 2}));
  IndexMap want{{tl::layout::InputVar(0), tl::layout::InputVar(1)}, {2, 32}, {In(1) * I(2) + In(0)}};
  IndexMap got{t.vars, t.extents, {tl::layout::LinearizedIndex(t)}};
  EXPECT_TRUE(tl::layout::Equal(got, want)) << ToString(got.outputs[0]);
  IndexMap negative{{tl::layout::InputVar(0)}, {4}, {In(0) - I(2)}};
  EXPECT_THROW(tl::layout::OutputExtents(negative), std::invalid_argument);
}

TEST(IndexMap, RepeatAddsALeadingCopyIndex) {
  IndexMap r = tl::layout::Repeat(RowMajor(), 0, 2);
  EXPECT_EQ(r.extents, std::vector<int64_t>({16, 64}));
  IndexMap want{r.vars, {16, 64}, {FloorDiv(In(0), I(8)), FloorMod(In(0), I(8)) * I(64) + In(1)}};
  EXPECT_TRUE(tl::layout::Equal(r, want));
  EXPECT_EQ(tl::layout::OutputExtents(r), std::vector<int64_t>({2, 512}));
  EXPECT_THROW(tl::layout::Repeat(RowMajor(), 2, 2), std::invalid_argument);
  EXPECT_THROW(tl::layout::Repeat(RowMajor(), -3, 2), std::invalid_argument);
  EXPECT_THROW(tl::layout::Repeat(RowMajor(), 0, 0), std::invalid_argument);
}

TEST(IndexMap, ExpandForwardsLeadingDimensions) {
  IndexMap e = tl::layout::Expand(RowMajor(), {4});
  EXPECT_EQ(e.extents, std::vector<int64_t>({4, 8, 64}));
  IndexMap want{e.vars, {4, 8, 64}, {In(0), In(1) * I(64) + In(2)}};
  EXPECT_TRUE(tl::layout::Equal(e, want));
  EXPECT_THROW(tl::layout::Expand(RowMajor(), {0}), std::invalid_argument);
}

TEST(IndexMap, EqualityFallsBackToEveryPoint) {
  auto x = [](Expr a, Expr b) { return Binary::Make(BinOp::kBitXor, a, b); };
  IndexMap a{{tl::layout::InputVar(0), tl::layout::InputVar(1)}, {8, 8}, {x(In(0), In(1))}};
  IndexMap b{{tl::layout::InputVar(0), tl::layout::InputVar(1)}, {8, 8}, {x(In(1), In(0))}};
  IndexMap c{{tl::layout::InputVar(0), tl::layout::InputVar(1)}, {8, 8}, {In(0) + In(1)}};
  EXPECT_TRUE(tl::layout::Equal(a, b));
  EXPECT_FALSE(tl::layout::Equal(a, c));
  EXPECT_FALSE(tl::layout::Equal(a, b, /*max_points=*/16));  // too many points to check, not proved
}

}  // namespace
