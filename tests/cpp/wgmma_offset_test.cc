// SPDX-License-Identifier: Apache-2.0
/// \file The panel offset of a wgmma operand element computed from its row and column
/// (WgmmaOperandOffsetAt, what the CUDA code generator prints) equals the one computed from
/// the flat offset (WgmmaOperandOffset, the layout's definition), for every element of
/// stacked tiles of both swizzles and every element size the panels take.
#include <gtest/gtest.h>

#include "tl/arith/simplify.h"
#include "tl/layout/shared.h"

namespace {

using namespace tl::ir;  // NOLINT

int64_t Eval(const Expr& e) {
  int64_t v = 0;
  Expr s = tl::arith::Analyzer().Simplify(e);
  EXPECT_TRUE(AsConstInt(s, &v)) << "not constant";
  return v;
}

void CheckEveryElement(int64_t rows, int64_t cols, int elem_bytes, int64_t stages) {
  for (int64_t s = 0; s < stages; ++s) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t flat = (s * rows + r) * cols + c;
        int64_t want = Eval(tl::layout::WgmmaOperandOffset(MakeInt(flat), rows, cols, elem_bytes));
        int64_t got = Eval(tl::layout::WgmmaOperandOffsetAt(MakeInt(s * rows * cols), MakeInt(r), MakeInt(c),
                                                                     rows, cols, elem_bytes));
        ASSERT_EQ(got, want) << rows << "x" << cols << " of " << elem_bytes << " bytes, stage " << s << " (" << r
                             << ", " << c << ")";
      }
    }
  }
}

TEST(WgmmaOffset, RowColumnFormMatchesTheFlatOne128ByteSwizzle) {
  CheckEveryElement(32, 256, 2, 2);  // mHC pre's bfloat16 rows (4 panels)
  CheckEveryElement(16, 64, 2, 3);
  CheckEveryElement(24, 128, 1, 2);  // float8
  CheckEveryElement(8, 96, 4, 2);    // tf32 (3 panels of 32)
}

TEST(WgmmaOffset, RowColumnFormMatchesTheFlatOne64ByteSwizzle) {
  CheckEveryElement(16, 32, 2, 2);  // K = 32 of 16-bit
  CheckEveryElement(24, 64, 1, 2);  // K = 64 of float8
}

}  // namespace
