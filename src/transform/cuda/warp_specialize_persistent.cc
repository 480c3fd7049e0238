// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, a persistent launch (tl.auto_persistent): a kernel whose grid
/// has more blocks than the GPU has SMs becomes one block per SM, each walking the original
/// blocks a grid apart,
///
///   for tile_wave in T.serial(ceildiv(blocks, SMs)):
///     tile_index = tile_wave * SMs + block_id
///     if tile_index < blocks:
///       bx, by, ... = the original block indices of tile_index (in panels, as the code
///                     generator would order the original launch)
///       the original body
///
/// which the warp specialization then takes as a tile loop (warp_specialize_tiles.cc): the
/// producer loads the next tile while the consumers store the last one, and no block's
/// start-up (barrier set-up, descriptor prefetch, the pipeline's first loads) falls between
/// tiles. A warp-specialized block takes the whole register file of its SM (setmaxnreg), so
/// one block per SM is all the original launch had running anyway.
#include <string>
#include <vector>

#include "pipeline_schedule.h"
#include "warp_specialize.h"
#include "tl/target/cuda_attrs.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

Stmt PersistentLaunch(const KernelLaunch* op, int64_t sms, int64_t panel, std::string* why) {
  const auto* binding = As<For>(op->body);
  std::vector<int64_t> grid;
  int64_t blocks = 1;
  for (const Expr& e : op->grid) {
    int64_t n = 0;
    if (!AsConstInt(e, &n) || n < 1) {
      *why = "the grid's size is not known at compile time";
      return nullptr;
    }
    grid.push_back(n);
    blocks *= n;
  }
  if (blocks <= sms) {
    *why = "the grid's " + std::to_string(blocks) + " blocks fit in one wave on " + std::to_string(sms) + " SMs";
    return nullptr;
  }
  const std::array<int64_t, 3> cluster = target::ClusterDims(binding->body);
  if (cluster[0] * cluster[1] * cluster[2] > 1) {
    *why = "the kernel is launched in clusters";
    return nullptr;
  }
  // the allocations and markers at the top stay outside the tile loop
  std::vector<Stmt> stmts = Flatten(binding->body);
  size_t first = 0;
  while (first < stmts.size() && (As<Allocate>(stmts[first]) || As<AttrStmt>(stmts[first]))) ++first;
  std::vector<Stmt> outside(stmts.begin(), stmts.begin() + first);
  std::vector<Stmt> body(stmts.begin() + first, stmts.end());
  const Span& span = op->span;
  const DType i32 = DType::Int(32);
  VarRef block_id = Var::Make("block_id", i32), wave = Var::Make("tile_wave", i32);
  VarRef index = Var::Make("tile_index", i32);
  // the original block indices: x fastest, then y, then z (blockIdx's order), within panels
  // of `panel` columns of x when asked (codegen_cuda.cc's formula, on the linear index);
  // computed where the tile exists, each clamped to its grid extent, which it never passes
  // there, so that later passes know its range as they knew blockIdx's
  std::vector<Stmt> decode;
  auto bind = [&](size_t axis, const Expr& value) {
    decode.push_back(LetStmt::Make(op->block_vars[axis], Min(value, MakeInt(grid[axis] - 1)), span));
  };
  const int64_t gx = grid[0], gy = grid.size() > 1 ? grid[1] : 1;
  Expr in_plane = Expr(index);
  if (grid.size() > 2) {
    in_plane = FloorMod(index, MakeInt(gx * gy));
    bind(2, FloorDiv(index, MakeInt(gx * gy)));
  }
  if (grid.size() > 1 && panel > 0) {
    const int64_t columns = panel;
    VarRef first_col = Var::Make("tile_first", i32), width = Var::Make("tile_width", i32),
           within = Var::Make("tile_in_panel", i32);
    decode.push_back(LetStmt::Make(first_col, FloorDiv(in_plane, MakeInt(columns * gy)) * MakeInt(columns), span));
    decode.push_back(LetStmt::Make(width, Min(MakeInt(columns), MakeInt(gx) - first_col), span));
    decode.push_back(LetStmt::Make(within, FloorMod(in_plane, MakeInt(columns * gy)), span));
    bind(0, first_col + FloorMod(within, width));
    bind(1, FloorDiv(within, width));
  } else {
    bind(0, FloorMod(in_plane, MakeInt(gx)));
    if (grid.size() > 1) bind(1, FloorDiv(in_plane, MakeInt(gx)));
  }
  decode.insert(decode.end(), body.begin(), body.end());
  std::vector<Stmt> head{LetStmt::Make(index, wave * MakeInt(sms) + block_id, span),
                         IfThenElse::Make(LT(index, MakeInt(blocks)), Seq::Make(decode, span), nullptr, span)};
  const int64_t waves = (blocks + sms - 1) / sms;
  outside.push_back(For::Make(wave, MakeInt(0), MakeInt(waves), ForKind::kSerial, Seq::Make(head, span), {}, span));
  Stmt threads = For::Make(binding->var, binding->min, binding->extent, binding->for_kind, Seq::Make(outside, span),
                           binding->annotations, binding->span);
  return KernelLaunch::Make({MakeInt(sms)}, {block_id}, op->threads, threads, span);
}

}  // namespace tl::transform::cuda
