// SPDX-License-Identifier: Apache-2.0
/// \file Vectorized, thread-partitioned copies between global and shared memory.
#include "copy_lowering.h"

#include <algorithm>

#include "../../arith/arith_internal.h"
#include "../region_util.h"
#include "pass_helpers.h"

#include "tl/arith/simplify.h"
#include "tl/codegen/cuda.h"

namespace tl::transform::cuda {
namespace {

using transform::InBounds;
using transform::IsOne;
using transform::TileDims;

using namespace ir;  // NOLINT: implementation file

/// The dtypes a copy converts between in vectors (tl::cast_copy).
bool VectorConvertible(DType t) {
  return t == DType::Float(32) || t == DType::Float(16) || t == DType::BFloat16();
}

}  // namespace

/// Whether v divides a row of `len` elements: provably, or by the promise, when `len` is
/// linear in sizes it covers (each such size s read as promise.elems * s).
static bool RowLengthFits(const Expr& len, int64_t v, arith::Analyzer& an, const AlignmentPromise& promise) {
  int64_t a = 0;
  if (AsConstInt(an.Simplify(FloorMod(len, MakeInt(v, len->dtype))), &a) && a == 0) return true;
  if (promise.elems <= 1) return false;
  arith::detail::LinearForm f = arith::detail::ParseLinear(an.Simplify(len));
  if (f.overflow || f.constant % v) return false;
  for (const auto& [term, coef] : f.terms) {
    if (!promise.Covers(As<Var>(term)) || (coef * promise.elems) % v) return false;
  }
  return true;
}

bool VectorFits(const Region& r, int64_t v, arith::Analyzer& an, const AlignmentPromise& promise) {
  if (v == 1) return true;
  const Buffer& b = r.buffer;
  // Packed 4-bit elements have no addresses of their own: element accesses only.
  if (PackedInMemory(*b)) return false;
  size_t last = r.ranges.size() - 1;
  auto dims = TileDims(r);
  // An address-made tensor (T.make_tensor) is aligned to its element only: no vectors.
  if (dims.empty() || dims.back() != last || !b->strides.empty() || b->data) return false;
  int64_t e;
  if (!AsConstInt(r.ranges[last].extent, &e) || e % v) return false;
  // The row length and the tile's column start must be multiples of v.
  Expr col = an.Simplify(FloorMod(r.ranges[last].min, MakeInt(v, r.ranges[last].min->dtype)));
  int64_t c;
  return RowLengthFits(b->shape[last], v, an, promise) && AsConstInt(col, &c) && c == 0;
}

Stmt PartitionOverThreads(const std::vector<Expr>& extents, const VarRef& tx, int64_t threads, const Span& span,
                          const std::function<Stmt(const std::vector<Expr>&)>& body) {
  Expr total = MakeInt(1);
  for (const Expr& e : extents) total = total * Cast::Make(DType::Int(32), e);
  arith::Analyzer an;
  total = an.Simplify(total);
  VarRef it = Var::Make("it");
  Expr f = Binary::Make(BinOp::kAdd, Binary::Make(BinOp::kMul, it, MakeInt(threads)), tx);
  std::vector<Expr> idx(extents.size());
  Expr rest = f;
  for (size_t k = extents.size(); k-- > 0;) {
    Expr e = Cast::Make(DType::Int(32), extents[k]);
    idx[k] = k == 0 ? rest : FloorMod(rest, e);
    rest = FloorDiv(rest, e);
  }
  Stmt s = body(idx);
  int64_t n;
  bool exact = AsConstInt(total, &n) && n % threads == 0;
  if (!exact) s = IfThenElse::Make(LT(f, total), s, nullptr, span);
  Expr trips = an.Simplify(FloorDiv(total + MakeInt(threads - 1), MakeInt(threads)));
  return For::Make(it, MakeInt(0), trips, ForKind::kUnrolled, s, {{kPartitioned, MakeInt(1)}}, span);
}

Stmt LowerCopyPartitioned(const CopyOp* op, const VarRef& tx, int64_t threads, bool async, PassContext& ctx) {
  const Region& src = op->src;
  const Region& dst = op->dst;
  Scope ss = src.buffer->scope, ds = dst.buffer->scope;
  bool global_shared = (ss == Scope::kGlobal || ss == Scope::kShared) && (ds == Scope::kGlobal || ds == Scope::kShared);
  if (!global_shared) return nullptr;
  // A copy between float32, float16 and bfloat16, or between two types the device library
  // converts in pairs (8-bit floats), converts each vector in registers (tl::cast_copy,
  // whose conversions are the element casts'); other conversions stay element loops.
  const DType sdt = src.buffer->dtype, ddt = dst.buffer->dtype;
  const bool convert = sdt != ddt;
  if (convert && !(VectorConvertible(sdt) && VectorConvertible(ddt)) &&
      codegen::CudaPairConversion(sdt, ddt).empty()) {
    return nullptr;
  }
  // A packed 4-bit tensor and a tile (one value per byte) differ in layout: element loops.
  if (PackedInMemory(*src.buffer) || PackedInMemory(*dst.buffer)) return nullptr;
  auto sd = TileDims(src), dd = TileDims(dst);
  if (sd.size() != dd.size() || sd.empty()) return nullptr;
  // the wider side's vector is at most 16 bytes: a swizzled tile moves 16-byte chunks
  int bytes = std::max(sdt.bytes(), ddt.bytes());
  arith::Analyzer an;
  const AlignmentPromise promise = DynamicAlignment(ctx);
  int64_t vec = 1;
  for (int64_t width : {16, 8, 4}) {
    int64_t v = width / bytes;
    if (v >= 1 && VectorFits(src, v, an, promise) && VectorFits(dst, v, an, promise)) {
      vec = v;
      break;
    }
  }
  if (vec * bytes < 16) {
    ctx.remarks.push_back("T.copy " + src.buffer->name + " -> " + dst.buffer->name + ": " +
                          std::to_string(vec * bytes) + "-byte accesses (16 needs contiguous, aligned rows)");
  }
  bool use_async = async && !convert && ss == Scope::kGlobal && ds == Scope::kShared && vec * bytes >= 4;
  if (async && !use_async) {
    ctx.remarks.push_back("T.copy " + src.buffer->name + " -> " + dst.buffer->name +
                          (convert ? ": synchronous (it converts " + sdt.str() + " to " + ddt.str() +
                                         "; cp.async only moves bytes)"
                                   : std::string(": synchronous (cp.async needs 4-byte vectors)")));
  }
  std::vector<Expr> extents;
  for (size_t k : dd) extents.push_back(dst.ranges[k].extent);
  extents.back() = an.Simplify(FloorDiv(extents.back(), MakeInt(vec, extents.back()->dtype)));
  return PartitionOverThreads(extents, tx, threads, op->span, [&](const std::vector<Expr>& v) {
    std::vector<Expr> tile = v;
    tile.back() = tile.back() * MakeInt(vec);
    auto place = [&](const Region& r, const std::vector<size_t>& dims) {
      std::vector<Expr> idx;
      for (const Range& rg : r.ranges) idx.push_back(rg.min);
      for (size_t k = 0; k < dims.size(); ++k) idx[dims[k]] = idx[dims[k]] + tile[k];
      return idx;
    };
    auto si = place(src, sd), di = place(dst, dd);
    Expr src_ok = InBounds(src.buffer, si), dst_ok = InBounds(dst.buffer, di);
    Expr nbytes = MakeInt(vec * bytes);
    if (use_async) {
      Expr pred = src_ok ? src_ok : MakeBool(true);
      Stmt s = Evaluate::Make(Call::Make(DType::Void(), "cp_async", {AddressOf(dst.buffer, di), AddressOf(src.buffer, si), nbytes, pred}),
                              op->span);
      return dst_ok ? IfThenElse::Make(dst_ok, s, nullptr, op->span) : s;
    }
    if (vec == 1) {
      Expr value = BufferLoad::Make(src.buffer, si);
      if (convert) value = Cast::Make(ddt, value);
      if (src_ok) {
        Expr zero = value->dtype.IsFloat() ? MakeFloat(0, value->dtype) : MakeInt(0, value->dtype);
        value = Select::Make(src_ok, value, zero);
      }
      Stmt s = BufferStore::Make(dst.buffer, di, value, op->span);
      return dst_ok ? IfThenElse::Make(dst_ok, s, nullptr, op->span) : s;
    }
    Stmt copy =
        convert ? Evaluate::Make(Call::Make(DType::Void(), "cast_copy",
                                            {AddressOf(dst.buffer, di), AddressOf(src.buffer, si), MakeInt(vec)}),
                                 op->span)
                : Evaluate::Make(Call::Make(DType::Void(), "vec_copy",
                                            {AddressOf(dst.buffer, di), AddressOf(src.buffer, si), nbytes}),
                                 op->span);
    if (src_ok) {
      Expr dst_bytes = MakeInt(vec * ddt.bytes());
      Stmt zero = Evaluate::Make(Call::Make(DType::Void(), "vec_zero", {AddressOf(dst.buffer, di), dst_bytes}), op->span);
      copy = IfThenElse::Make(src_ok, copy, zero, op->span);
    }
    return dst_ok ? IfThenElse::Make(dst_ok, copy, nullptr, op->span) : copy;
  });
}

}  // namespace tl::transform::cuda
