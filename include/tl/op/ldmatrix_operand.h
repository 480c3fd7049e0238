// SPDX-License-Identifier: Apache-2.0
/// \file The ldmatrix_operand intrinsic (intrinsics.def) taken apart: where each lane's matrix
/// row starts (the address it gives ldmatrix on CUDA) and which shared element lands in each
/// of its registers (the element loads the CPU runs instead). One description, two targets.
#pragma once

#include <vector>

#include "tl/ir/intrinsics.h"
#include "tl/ir/stmt.h"
#include "tl/support/error.h"

namespace tl::op {

struct LdmatrixOperand {
  ir::Buffer dst;                 ///< the per-thread array
  ir::Expr dst_offset;            ///< its first element written
  ir::Buffer src;                 ///< the shared tile
  std::vector<ir::Expr> origin;   ///< src's indices of matrix 0's first element
  ir::Expr lane;
  int64_t matrices = 4;
  bool trans = false;
  int64_t a1 = 0, a2 = 0, b1 = 0, b2 = 0;

  /// Matrix j's first row and column, relative to the origin.
  ir::Expr RowOf(const ir::Expr& j) const { return Offset(j, a1, a2); }
  ir::Expr ColOf(const ir::Expr& j) const { return Offset(j, b1, b2); }

  /// src's indices of the matrix row this lane gives ldmatrix (lanes 8j .. 8j + 7: rows 0..7
  /// of matrix j; with two matrices, lanes 16-31 repeat lanes 0-15, as they must be valid).
  std::vector<ir::Expr> LaneRow() const {
    using namespace ir;  // NOLINT
    Expr j = FloorMod(FloorDiv(lane, MakeInt(8)), MakeInt(matrices));
    std::vector<Expr> at = origin;
    at[at.size() - 2] = at[at.size() - 2] + RowOf(j) + FloorMod(lane, MakeInt(8));
    at.back() = at.back() + ColOf(j);
    return at;
  }

  /// The loads that give this lane the same registers: a register's two elements are one
  /// vectorized pair where they are neighbours in the tile (row g), else two loads.
  ir::Stmt ElementLoads(const Span& span) const {
    using namespace ir;  // NOLINT
    Expr g = FloorDiv(lane, MakeInt(4)), q = FloorMod(lane, MakeInt(4));
    std::vector<Stmt> loads;
    for (int64_t j = 0; j < matrices; ++j) {
      auto load = [&](const Expr& e) {
        Expr across = MakeInt(2) * q + e;  // the lane's two elements of row g ...
        Expr row = trans ? across : g, col = trans ? g : across;  // ... or of column g
        std::vector<Expr> at = origin;
        at[at.size() - 2] = at[at.size() - 2] + RowOf(MakeInt(j)) + row;
        at.back() = at.back() + ColOf(MakeInt(j)) + col;
        return BufferStore::Make(dst, {dst_offset + MakeInt(2 * j) + e}, BufferLoad::Make(src, at), span);
      };
      if (trans) {
        loads.push_back(load(MakeInt(0)));
        loads.push_back(load(MakeInt(1)));
      } else {
        VarRef e = Var::Make("e");
        loads.push_back(For::Make(e, MakeInt(0), MakeInt(2), ForKind::kVectorized, load(e), {}, span));
      }
    }
    return Seq::Make(std::move(loads), span);
  }

  /// The call's parts, or a user error at `span` (it is built by the emitter, which checks).
  static LdmatrixOperand Of(const ir::Call* call, const Span& span) {
    using namespace ir;  // NOLINT
    auto element = [&](const Expr& address) -> const BufferLoad* {
      const auto* addr = As<Call>(address);
      const auto* load = addr && IsIntrinsic(addr, TL_INTRINSIC_NAME("address_of")) ? As<BufferLoad>(addr->args[0])
                                                                                    : nullptr;
      if (!load) TL_USER_ERROR(span) << "ldmatrix_operand: arguments 0 and 1 must be element addresses";
      return load;
    };
    if (call->args.size() != 9) TL_USER_ERROR(span) << "ldmatrix_operand takes 9 arguments";
    LdmatrixOperand o;
    const BufferLoad* d = element(call->args[0]);
    const BufferLoad* s = element(call->args[1]);
    if (d->indices.size() != 1 || s->indices.size() < 2) {
      TL_USER_ERROR(span) << "ldmatrix_operand: a one-dimensional per-thread array from a tile of two or more dimensions";
    }
    o.dst = d->buffer, o.dst_offset = d->indices[0], o.src = s->buffer, o.origin = s->indices, o.lane = call->args[2];
    int64_t flags[6];
    for (int k = 0; k < 6; ++k) {
      if (!AsConstInt(call->args[3 + k], &flags[k])) TL_USER_ERROR(span) << "ldmatrix_operand: constant shape arguments";
    }
    o.matrices = flags[0], o.trans = flags[1] != 0, o.a1 = flags[2], o.a2 = flags[3], o.b1 = flags[4], o.b2 = flags[5];
    if (o.matrices != 2 && o.matrices != 4) TL_USER_ERROR(span) << "ldmatrix_operand loads 2 or 4 matrices";
    return o;
  }

 private:
  static ir::Expr Offset(const ir::Expr& j, int64_t low, int64_t high) {
    using namespace ir;  // NOLINT
    return MakeInt(8) * (MakeInt(low) * FloorMod(j, MakeInt(2)) + MakeInt(high) * FloorDiv(j, MakeInt(2)));
  }
};

}  // namespace tl::op
