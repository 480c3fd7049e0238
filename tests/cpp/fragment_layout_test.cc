// SPDX-License-Identifier: Apache-2.0
/// \file Fragment layouts: every element has exactly one owner register, and the row
/// structure that row reductions rely on (FragmentLayout's contract) holds.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

#include "tl/arith/simplify.h"
#include "tl/layout/fragment.h"

namespace {

using namespace tl::ir;  // NOLINT
using tl::layout::FragmentLayout;
using tl::layout::MmaAccumulatorLayout;
using tl::layout::RowStripLayout;

int64_t Eval(const Expr& e) {
  int64_t v = 0;
  Expr s = tl::arith::Analyzer().Simplify(e);
  EXPECT_TRUE(AsConstInt(s, &v)) << "not constant";
  return v;
}

/// Checks the contract for layout `lay` of an m x n tile.
void CheckContract(const FragmentLayout& lay) {
  const int64_t m = lay.m(), n = lay.n(), threads = lay.num_threads();
  std::map<std::pair<int64_t, int64_t>, int> seen;
  auto rows = lay.Rows();
  for (int64_t t = 0; t < threads; ++t) {
    for (int64_t l = 0; l < lay.num_local(); ++l) {
      auto [ei, ej] = lay.Inverse(MakeInt(t), MakeInt(l));
      int64_t i = Eval(ei), j = Eval(ej);
      ASSERT_TRUE(i >= 0 && i < m && j >= 0 && j < n) << lay.ToString() << " t=" << t << " l=" << l;
      ++seen[{i, j}];
      // The row of register l is the row that register RowLocal(l) of Rows() holds.
      int64_t lr = Eval(lay.RowLocal(MakeInt(l)));
      ASSERT_EQ(Eval(rows->Inverse(MakeInt(t), MakeInt(lr)).first), i);
      // Runs of vec() registers hold consecutive columns of one row.
      if (l % lay.vec()) {
        auto [pi, pj] = lay.Inverse(MakeInt(t), MakeInt(l - 1));
        ASSERT_EQ(Eval(pi), i);
        ASSERT_EQ(Eval(pj) + 1, j);
      }
    }
    // RowReg enumerates exactly the registers of each of the thread's rows.
    std::set<int64_t> regs;
    for (int64_t lr = 0; lr < rows->num_local(); ++lr) {
      for (int64_t q = 0; q < lay.regs_per_row(); ++q) {
        int64_t l = Eval(lay.RowReg(MakeInt(lr), MakeInt(q)));
        ASSERT_EQ(Eval(lay.RowLocal(MakeInt(l))), lr);
        regs.insert(l);
      }
    }
    ASSERT_EQ(static_cast<int64_t>(regs.size()), lay.num_local());
  }
  ASSERT_EQ(static_cast<int64_t>(seen.size()), m * n) << lay.ToString();
  for (auto& [ij, count] : seen) ASSERT_EQ(count, 1) << lay.ToString();
  // The threads holding row i: row_lanes() consecutive aligned lanes in each of
  // row_warps() warps, whose index along the row is (t / 32) % row_warps().
  for (int64_t t = 0; t < threads; ++t) {
    int64_t row_of_t = Eval(rows->Inverse(MakeInt(t), MakeInt(0)).first);
    int64_t group_start = t / lay.row_lanes() * lay.row_lanes();
    ASSERT_EQ(Eval(rows->Inverse(MakeInt(group_start), MakeInt(0)).first), row_of_t);
  }
}

TEST(FragmentLayout, RowStripChoosesWidestVectorThenMostLanes) {
  auto a = RowStripLayout::Choose(4, 256, 128);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->vec(), 8);
  EXPECT_EQ(a->row_lanes(), 32);
  EXPECT_EQ(a->row_warps(), 1);
  EXPECT_EQ(a->num_local(), 8);
  auto b = RowStripLayout::Choose(1, 8192, 256);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->row_warps(), 8);
  EXPECT_EQ(b->num_local(), 32);
  // 3 rows cannot be dealt evenly to 128 threads in groups of any power-of-two size
  // that also split 24 columns.
  EXPECT_FALSE(RowStripLayout::Choose(3, 24, 128));
}

TEST(FragmentLayout, RowStripContract) {
  for (auto [m, n, threads] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {4, 256, 128}, {2, 512, 128}, {1, 2048, 256}, {64, 64, 128}, {8, 12, 32}, {48, 8, 96}}) {
    auto lay = RowStripLayout::Choose(m, n, threads);
    ASSERT_TRUE(lay) << m << "x" << n << " over " << threads;
    CheckContract(*lay);
  }
}

TEST(FragmentLayout, MmaAccumulatorContract) {
  CheckContract(MmaAccumulatorLayout(64, 64, {2, 2}));
  CheckContract(MmaAccumulatorLayout(128, 32, {4, 1}));
  CheckContract(MmaAccumulatorLayout(32, 128, {1, 4}));
}

/// stmatrix.x4 stores lane l's register 8g + 2i + h at the row start lane 8i + l/4 gives
/// (StmatrixRowStart) plus 2 (l % 4) + h columns: that must be where the layout holds it.
void CheckStmatrix(const MmaAccumulatorLayout& lay) {
  ASSERT_TRUE(lay.stmatrix_groups()) << lay.ToString();
  for (int64_t t = 0; t < lay.num_threads(); ++t) {
    const int64_t warp_base = t - t % 32, l = t % 32;
    for (int64_t g = 0; g < lay.num_local() / 8; ++g) {
      for (int64_t k = 0; k < 8; ++k) {
        auto [i, j] = lay.Inverse(MakeInt(t), MakeInt(8 * g + k));
        auto [ri, rj] = lay.StmatrixRowStart(MakeInt(warp_base + 8 * (k / 2) + l / 4), MakeInt(g));
        ASSERT_EQ(Eval(ri), Eval(i)) << lay.ToString() << " t=" << t << " g=" << g << " k=" << k;
        ASSERT_EQ(Eval(rj) + 2 * (l % 4) + k % 2, Eval(j)) << lay.ToString() << " t=" << t << " g=" << g << " k=" << k;
      }
    }
  }
}

TEST(FragmentLayout, StmatrixGroupsLandWhereTheRegistersBelong) {
  CheckStmatrix(MmaAccumulatorLayout(64, 64, {2, 2}));
  CheckStmatrix(MmaAccumulatorLayout(64, 32, {4, 2, true}));          // wgmma's m-fastest order
  CheckStmatrix(MmaAccumulatorLayout(128, 64, {2, 2, false, true}));  // interleaved 64-row blocks
  CheckStmatrix(MmaAccumulatorLayout(32, 128, {1, 4}));
  EXPECT_FALSE(MmaAccumulatorLayout(64, 32, {1, 4}).stmatrix_groups());  // 8 columns per warp
}

}  // namespace

namespace {

/// The tf32 A-operand layout: each element held by every warp along N (warps_n copies), each
/// k-step's four registers the PTX fragment (g, t), (g+8, t), (g, t+4), (g+8, t+4) of their
/// slice, rows as Rows() says, and the folded layout's registers found by FoldedLocal.
void CheckTf32A(int64_t m, int64_t k, tl::layout::WarpPartition w) {
  tl::layout::MmaTf32ALayout lay(m, k, w);
  const int64_t threads = lay.num_threads();
  std::map<std::pair<int64_t, int64_t>, int> seen;
  auto rows = lay.Rows();
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t g = (t % 32) / 4, q = t % 4;
    for (int64_t l = 0; l < lay.num_local(); ++l) {
      auto [ei, ej] = lay.Inverse(MakeInt(t), MakeInt(l));
      int64_t i = Eval(ei), j = Eval(ej);
      ASSERT_TRUE(i >= 0 && i < m && j >= 0 && j < k) << lay.ToString();
      ++seen[{i, j}];
      // register (mt * k/4 + 2 s) * 2 + r of k-step s: a0..a3 of m16n8k8's tf32 A
      const int64_t r = l % 4;
      ASSERT_EQ(i % 16, g + (r % 2) * 8) << lay.ToString() << " l=" << l;
      ASSERT_EQ(j % 8, q + (r / 2) * 4) << lay.ToString() << " l=" << l;
      ASSERT_EQ(Eval(rows->Inverse(MakeInt(t), lay.RowLocal(MakeInt(l))).first), i);
      // folded to 4 columns: the register holding (i, j % 4) there maps back to this one
      auto folded = lay.FoldedColumns(4);
      ASSERT_TRUE(folded);
      for (int64_t fl = 0; fl < folded->num_local(); ++fl) {
        auto [fi, fj] = folded->Inverse(MakeInt(t), MakeInt(fl));
        if (Eval(fi) != i || Eval(fj) != j % 4) continue;
        ASSERT_EQ(Eval(lay.FoldedLocal(4, MakeInt(fl), MakeInt(j / 4))), l) << lay.ToString();
      }
    }
    std::set<int64_t> regs;
    for (int64_t lr = 0; lr < rows->num_local(); ++lr) {
      for (int64_t qq = 0; qq < lay.regs_per_row(); ++qq) {
        int64_t l = Eval(lay.RowReg(MakeInt(lr), MakeInt(qq)));
        ASSERT_EQ(Eval(lay.RowLocal(MakeInt(l))), lr);
        regs.insert(l);
      }
    }
    ASSERT_EQ(static_cast<int64_t>(regs.size()), lay.num_local());
  }
  ASSERT_EQ(static_cast<int64_t>(seen.size()), m * k) << lay.ToString();
  for (auto& [ij, count] : seen) ASSERT_EQ(count, w.warps_n) << lay.ToString();
}

}  // namespace

TEST(FragmentLayout, MmaTf32AOperandContract) {
  CheckTf32A(32, 64, {2, 2});
  CheckTf32A(64, 32, {4, 1});
  CheckTf32A(32, 16, {1, 2});
  CheckTf32A(64, 16, {2, 2, true});
  EXPECT_EQ(tl::layout::MmaTf32ALayout(32, 64, {2, 2}).FoldedColumns(6), nullptr);
}

namespace {

/// A vector of per-column values next to an mma accumulator (MmaColumnsLayout): each of a
/// thread's tile registers finds its column at ColumnLocal in the vector, the vector's
/// registers are exactly the columns the thread holds in the tile, and every column has one
/// first copy (FirstCopy) among the threads holding it.
void CheckColumns(const MmaAccumulatorLayout& tile) {
  auto columns = tile.Columns();
  ASSERT_TRUE(columns);
  ASSERT_TRUE(columns->is_rows());
  ASSERT_EQ(columns->m(), tile.n());
  ASSERT_EQ(tile.Rows()->Columns(), nullptr);
  std::map<int64_t, int> first_copies;
  std::set<int64_t> covered;
  for (int64_t t = 0; t < tile.num_threads(); ++t) {
    std::set<int64_t> in_tile, in_vector;
    for (int64_t l = 0; l < tile.num_local(); ++l) {
      const int64_t j = Eval(tile.Inverse(MakeInt(t), MakeInt(l)).second);
      in_tile.insert(j);
      const int64_t q = Eval(tile.ColumnLocal(MakeInt(l)));
      ASSERT_TRUE(q >= 0 && q < columns->num_local()) << tile.ToString();
      ASSERT_EQ(Eval(columns->Inverse(MakeInt(t), MakeInt(q)).first), j) << tile.ToString() << " t=" << t;
    }
    for (int64_t q = 0; q < columns->num_local(); ++q) {
      const int64_t j = Eval(columns->Inverse(MakeInt(t), MakeInt(q)).first);
      in_vector.insert(j);
      covered.insert(j);
      if (Eval(columns->FirstCopy(MakeInt(t)))) ++first_copies[j];
      if (q % columns->vec()) {  // runs of vec() registers: consecutive columns
        ASSERT_EQ(Eval(columns->Inverse(MakeInt(t), MakeInt(q - 1)).first) + 1, j);
      }
    }
    ASSERT_EQ(in_tile, in_vector) << tile.ToString() << " t=" << t;
    ASSERT_EQ(static_cast<int64_t>(in_vector.size()), columns->num_local());
  }
  ASSERT_EQ(static_cast<int64_t>(covered.size()), tile.n());
  ASSERT_EQ(static_cast<int64_t>(first_copies.size()), tile.n());
  for (auto& [j, count] : first_copies) ASSERT_EQ(count, 1) << tile.ToString() << " column " << j;
}

}  // namespace

TEST(FragmentLayout, MmaColumnsContract) {
  CheckColumns(MmaAccumulatorLayout(64, 64, {2, 2}));
  CheckColumns(MmaAccumulatorLayout(64, 64, {4, 2, true}));          // two warpgroups split N (wgmma)
  CheckColumns(MmaAccumulatorLayout(128, 64, {2, 2, false, true}));  // interleaved 64-row blocks
  CheckColumns(MmaAccumulatorLayout(32, 128, {1, 4}));
  CheckColumns(MmaAccumulatorLayout(64, 16, {4, 1}));
}
