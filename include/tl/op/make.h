// SPDX-License-Identifier: Apache-2.0
/// \file Front-end constructors: build IR from what the user wrote, checking it first.
///
/// These are where user mistakes are caught (a gemm whose K does not match, a copy
/// between tiles of different shapes, an operator on a bool and a float) and reported as
/// tl::CompileError at the user's span. The IR node constructors only check invariants.
#pragma once

#include <vector>

#include "tl/ir/stmt.h"

namespace tl::op {

/// A buffer region as the user wrote it. `extents[i]` null means dimension i was given
/// as a single index; when every dimension is a single index (`A[by * 64, k * 32]`) the
/// region is a start corner and its extent is taken from the other operand of the op.
struct RegionSpec {
  ir::Buffer buffer;
  std::vector<ir::Expr> mins;
  std::vector<ir::Expr> extents;
  bool IsPoint() const;
};

/// a <op> b with the usual promotions: int with float gives float, narrower with wider
/// gives wider, float16 with bfloat16 gives float32. Logical ops take bools.
ir::Expr MakeBinary(ir::BinOp op, ir::Expr a, ir::Expr b, const Span& span = {});
/// A math intrinsic (exp, log, sqrt, pow, ...): integer arguments are taken as float32.
ir::Expr MakeMath(const std::string& name, std::vector<ir::Expr> args, const Span& span = {});

ir::Stmt MakeCopy(RegionSpec src, RegionSpec dst, const Span& span, bool disable_tma = false);
/// tf32: A or B was declared T.tfloat32 (see GemmOp::tf32); A, B and C must then be float32.
ir::Stmt MakeGemm(RegionSpec a, RegionSpec b, RegionSpec c, bool trans_a, bool trans_b,
                  int policy, ir::Expr clear_accum, const Span& span, bool tf32 = false,
                  bool async_wgmma = false);
ir::Stmt MakeFill(RegionSpec dst, ir::Expr value, const Span& span);
ir::Stmt MakeReduce(RegionSpec src, RegionSpec dst, ir::ReduceKind kind, int dim, bool clear,
                    const Span& span);
/// `src` may have a null buffer, in which case `value` is the scalar operand.
ir::Stmt MakeAtomic(ir::AtomicKind kind, RegionSpec dst, RegionSpec src, ir::Expr value,
                    const Span& span);

/// dst = inclusive prefix sum of src along `dim` (from the end when `reverse`). dst may be
/// src (in place). Built as loops: parallel over the other dimensions, in order along dim.
ir::Stmt MakeCumsum(RegionSpec src, RegionSpec dst, int dim, bool reverse, const Span& span);

/// Extents of a region with its unit dimensions removed (the "tile shape").
std::vector<ir::Expr> TileShape(const ir::Region& r);
/// Shape as text for messages: "128x64".
std::string ShapeStr(const std::vector<ir::Expr>& shape);

}  // namespace tl::op
