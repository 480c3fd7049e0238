// SPDX-License-Identifier: Apache-2.0
/// \file Checked constructors for expressions and tile ops written by users.
#include "tl/op/make.h"

#include "tl/arith/simplify.h"
#include "tl/ir/printer.h"

namespace tl::op {

using namespace ir;  // NOLINT: implementation file

bool RegionSpec::IsPoint() const {
  for (const Expr& e : extents) {
    if (e) return false;
  }
  return !mins.empty();
}

namespace {

bool IsOne(const Expr& e) {
  int64_t v;
  return AsConstInt(e, &v) && v == 1;
}

/// Proves a == b, or reports that it cannot.
enum class Eq { kYes, kNo, kUnknown };
Eq ProveEqual(const Expr& a, const Expr& b) {
  arith::Analyzer an;
  Expr d = an.Simplify(Cast::Make(DType::Int(64), a) - Cast::Make(DType::Int(64), b));
  int64_t v;
  if (AsConstInt(d, &v)) return v == 0 ? Eq::kYes : Eq::kNo;
  return Eq::kUnknown;
}

/// Proves a <= b (kYes), or a > b (kNo), or neither (kUnknown).
Eq ProveLE(const Expr& a, const Expr& b) {
  arith::Analyzer an;
  Expr a64 = Cast::Make(DType::Int(64), a), b64 = Cast::Make(DType::Int(64), b);
  if (an.CanProve(LE(a64, b64))) return Eq::kYes;
  return an.CanProve(LT(b64, a64)) ? Eq::kNo : Eq::kUnknown;
}

DType PromoteTypes(DType a, DType b) {
  if (a == b) return a;
  if (a.IsBool()) return b;
  if (b.IsBool()) return a;
  if (a.IsFloat() && b.IsFloat()) {
    if (a.bits == b.bits) return DType::Float(32);  // float16 with bfloat16
    return a.bits > b.bits ? a : b;
  }
  if (a.IsFloat()) return a;
  if (b.IsFloat()) return b;
  if (a.bits != b.bits) return a.bits > b.bits ? a : b;
  return a.IsSigned() ? a : b;
}

Expr ToBool(Expr e) {
  if (e->dtype.IsBool()) return e;
  Expr zero = e->dtype.IsFloat() ? MakeFloat(0, e->dtype) : MakeInt(0, e->dtype);
  return Binary::Make(BinOp::kNE, e, zero);
}

/// Completes a region spec: full extents for slices; for a start corner, the other
/// operand's extents dimension by dimension when both have the same rank (so a (8, 1)
/// tile lands as 8 rows of one column), else its tile shape aligned to the trailing
/// dimensions.
Region Resolve(const RegionSpec& spec, const std::vector<Expr>* other_tile, const char* op,
               const char* role, const Span& span, const Region* other = nullptr) {
  const Buffer& b = spec.buffer;
  Region r{b, {}};
  size_t nd = b->shape.size();
  if (spec.mins.empty()) return Region::Full(b);
  if (spec.mins.size() != nd) {
    TL_USER_ERROR(span) << op << ": " << role << " " << b->name << " has " << nd
                        << " dimensions but is indexed with " << spec.mins.size();
  }
  if (!spec.IsPoint()) {
    // A slice's extent is stop - start as written: `(by + 1) * 1 - by * 1` must count as
    // the unit extent it is (unit dimensions drop out of the tile shape).
    arith::Analyzer an;
    for (size_t i = 0; i < nd; ++i) {
      r.ranges.push_back({spec.mins[i], spec.extents[i] ? an.Simplify(spec.extents[i]) : MakeInt(1)});
    }
    return r;
  }
  if (!other_tile) {
    TL_USER_ERROR(span) << op << ": cannot tell the extent of " << b->name
                        << "[...]: both operands are single elements; use slices";
  }
  if (other_tile->size() > nd) {
    TL_USER_ERROR(span) << op << ": " << role << " " << b->name << " has " << nd
                        << " dimensions but the other operand's tile is "
                        << ShapeStr(*other_tile);
  }
  if (other && other->ranges.size() == nd) {
    for (size_t i = 0; i < nd; ++i) r.ranges.push_back({spec.mins[i], other->ranges[i].extent});
    return r;
  }
  size_t lead = nd - other_tile->size();
  for (size_t i = 0; i < nd; ++i) {
    r.ranges.push_back({spec.mins[i], i < lead ? MakeInt(1) : (*other_tile)[i - lead]});
  }
  return r;
}

Region Whole(const RegionSpec& spec, const char* op, const char* role, const Span& span) {
  return Resolve(spec, nullptr, op, role, span);
}

}  // namespace

std::vector<Expr> TileShape(const Region& r) {
  std::vector<Expr> out;
  for (const Range& rg : r.ranges) {
    if (!IsOne(rg.extent)) out.push_back(rg.extent);
  }
  return out;
}

std::string ShapeStr(const std::vector<Expr>& shape) {
  if (shape.empty()) return "1";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + ToString(shape[i]);
  return s;
}

Expr MakeBinary(BinOp op, Expr a, Expr b, const Span& span) {
  if (IsLogical(op)) return Binary::Make(op, ToBool(a), ToBool(b));
  DType t = PromoteTypes(a->dtype, b->dtype);
  if (op == BinOp::kFloorDiv || op == BinOp::kFloorMod || op == BinOp::kMod ||
      op == BinOp::kBitAnd || op == BinOp::kBitOr || op == BinOp::kBitXor ||
      op == BinOp::kShl || op == BinOp::kShr) {
    if (!t.IsInt() && !(op == BinOp::kFloorMod || op == BinOp::kFloorDiv)) {
      TL_USER_ERROR(span) << "operator " << BinOpName(op) << " needs integer operands, got "
                          << a->dtype.str() << " and " << b->dtype.str();
    }
  }
  if (t.IsBool() && !IsComparison(op)) t = DType::Int(32);
  return Binary::Make(op, Cast::Make(t, a), Cast::Make(t, b));
}

Expr MakeMath(const std::string& name, std::vector<Expr> args, const Span& span) {
  static const char* kIntOk[] = {"abs", "min", "max"};
  bool int_ok = false;
  for (const char* n : kIntOk) int_ok |= name == n;
  DType t = args.empty() ? DType::Float(32) : args[0]->dtype;
  for (const Expr& a : args) t = PromoteTypes(t, a->dtype);
  if (!t.IsFloat() && !(int_ok && t.IsInt())) t = DType::Float(32);
  for (Expr& a : args) a = Cast::Make(t, a);
  return Call::Make(t, name, std::move(args));
}

namespace {

int ScopeDepth(Scope s) {
  switch (s) {
    case Scope::kFragment:
    case Scope::kLocal:
    case Scope::kVar: return 2;
    case Scope::kShared: return 1;
    default: return 0;
  }
}

/// A copy between regions of different extents, run over the region in the more local
/// memory (`base`, the source on a tie) with the other's non-unit extents set to base's in
/// order, when those are provably no smaller; nullopt otherwise.
std::optional<Stmt> NarrowedCopy(const Region& s, const Region& d, const std::vector<Expr>& ts,
                                 const std::vector<Expr>& td, const Span& span, bool disable_tma) {
  if (ts.size() != td.size()) return std::nullopt;
  const bool base_is_src = ScopeDepth(s.buffer->scope) >= ScopeDepth(d.buffer->scope);
  const std::vector<Expr>& base = base_is_src ? ts : td;
  const std::vector<Expr>& other = base_is_src ? td : ts;
  // An extent that cannot be compared (a dynamic slice `A[0:len]` against a static tile)
  // is taken as large enough when that side is a global tensor: its accesses are guarded
  // by the tensor's own shape, so the copy never leaves it (upstream builds this too).
  const bool other_guarded = (base_is_src ? d : s).buffer->scope == Scope::kGlobal;
  bool unknown = false;
  for (size_t i = 0; i < base.size(); ++i) {
    Eq le = ProveLE(base[i], other[i]);
    if (!(le == Eq::kYes || (le == Eq::kUnknown && other_guarded))) return std::nullopt;
    unknown = unknown || le == Eq::kUnknown;
  }
  Region narrowed = base_is_src ? d : s;
  size_t k = 0;
  for (Range& rg : narrowed.ranges) {
    if (!IsOne(rg.extent)) rg.extent = base[k++];
  }
  const Region& other_region = base_is_src ? d : s;
  Stmt note = AttrStmt::Make("tl.remark:T.copy: " + s.buffer->name +
                                 " is " + ShapeStr(ts) + " and " + d.buffer->name + " is " + ShapeStr(td) +
                                 "; copied over " + (base_is_src ? s : d).buffer->name + "'s " + ShapeStr(base) +
                                 " (upstream's rule), the rest of " + other_region.buffer->name + " untouched" +
                                 (!unknown ? std::string()
                                  : base_is_src ? "; writes past its end are skipped"
                                                : "; reads past its end give 0"),
                             {}, span);
  Stmt copy = base_is_src ? CopyOp::Make(s, narrowed, span, disable_tma) : CopyOp::Make(narrowed, d, span, disable_tma);
  return Seq::Make({note, copy}, span);
}

}  // namespace

Stmt MakeCopy(RegionSpec src, RegionSpec dst, const Span& span, bool disable_tma) {
  if (src.IsPoint() && dst.IsPoint()) {
    TL_USER_ERROR(span) << "T.copy: both source and destination are single elements; give one "
                           "of them as a whole buffer or a slice";
  }
  Region s, d;
  if (src.IsPoint()) {
    d = Whole(dst, "T.copy", "destination", span);
    auto tile = TileShape(d);
    s = Resolve(src, &tile, "T.copy", "source", span, &d);
  } else {
    s = Whole(src, "T.copy", "source", span);
    auto tile = TileShape(s);
    d = Resolve(dst, &tile, "T.copy", "destination", span, &s);
  }
  auto ts = TileShape(s), td = TileShape(d);
  bool ok = ts.size() == td.size();
  for (size_t i = 0; ok && i < ts.size(); ++i) {
    Eq eq = ProveEqual(ts[i], td[i]);
    if (eq == Eq::kUnknown && !NarrowedCopy(s, d, ts, td, span, disable_tma)) {
      TL_USER_ERROR(span) << "T.copy: cannot prove that the source extent " << ToString(ts[i])
                          << " equals the destination extent " << ToString(td[i]);
    }
    ok = eq == Eq::kYes;
  }
  if (!ok) {
    // Upstream's rule: the copy runs over the region in the more local memory (the source
    // when both are alike), provided the other one is at least as large in each dimension
    // (`T.copy(A[:, :2], B[:, :3])` copies two columns). Said in a remark.
    if (std::optional<Stmt> narrowed = NarrowedCopy(s, d, ts, td, span, disable_tma)) return *narrowed;
    TL_USER_ERROR(span) << "T.copy: shape mismatch: source " << s.buffer->name << " tile is "
                        << ShapeStr(ts) << " but destination " << d.buffer->name << " tile is "
                        << ShapeStr(td);
  }
  return CopyOp::Make(s, d, span, disable_tma);
}

Stmt MakeGemm(RegionSpec a, RegionSpec b, RegionSpec c, bool trans_a, bool trans_b, int policy,
              Expr clear_accum, const Span& span, bool tf32, bool async_wgmma) {
  Region ra = Whole(a, "T.gemm", "A", span), rb = Whole(b, "T.gemm", "B", span),
         rc = Whole(c, "T.gemm", "C", span);
  auto two_d = [&](const Region& r, const char* role) {
    auto t = TileShape(r);
    // Keep genuine 2-D shapes even when one side is 1 (e.g. a 1xN row).
    if (t.size() < 2 && r.ranges.size() >= 2) {
      t = {r.ranges[r.ranges.size() - 2].extent, r.ranges.back().extent};
    }
    if (t.size() != 2) {
      TL_USER_ERROR(span) << "T.gemm: " << role << " (" << r.buffer->name
                          << ") must be a 2-D tile, got " << ShapeStr(t);
    }
    return t;
  };
  auto sa = two_d(ra, "A"), sb = two_d(rb, "B"), sc = two_d(rc, "C");
  Expr m = trans_a ? sa[1] : sa[0], ka = trans_a ? sa[0] : sa[1];
  Expr kb = trans_b ? sb[1] : sb[0], n = trans_b ? sb[0] : sb[1];
  auto dims = [&](const std::vector<Expr>& s) { return ShapeStr(s); };
  if (ProveEqual(ka, kb) != Eq::kYes) {
    TL_USER_ERROR(span) << "T.gemm: K mismatch: A is " << dims(sa) << (trans_a ? " (transposed)" : "")
                        << " but B is " << dims(sb) << (trans_b ? " (transposed)" : "");
  }
  if (ProveEqual(m, sc[0]) != Eq::kYes || ProveEqual(n, sc[1]) != Eq::kYes) {
    TL_USER_ERROR(span) << "T.gemm: C is " << dims(sc) << " but A x B is " << ToString(m) << "x"
                        << ToString(n);
  }
  DType ta = ra.buffer->dtype, tb = rb.buffer->dtype, tc = rc.buffer->dtype;
  for (DType t : {ta, tb, tc}) {
    if (t.IsSubByte() || t.IsMxFloat()) {
      // The MX GEMMs (block-scaled fp4 with e8m0 scales) are sm_100 instructions; here the
      // operands are converted first (T.copy into a float16/bfloat16 tile).
      TL_USER_ERROR(span) << "T.gemm: " << t.str() << " operands are not supported (copy them into a float16, "
                          << "bfloat16 or int8 tile first)";
    }
  }
  bool float_in = ta.IsFloat() && tb.IsFloat(), int_in = ta.IsInt() && tb.IsInt();
  if (!(float_in && tc.IsFloat()) && !(int_in && tc.IsInt())) {
    TL_USER_ERROR(span) << "T.gemm: unsupported types: A " << ta.str() << ", B " << tb.str()
                        << ", C " << tc.str()
                        << " (float operands accumulate in a float type, int8 in int32)";
  }
  if (rc.buffer->scope == Scope::kGlobal) {
    TL_USER_ERROR(span) << "T.gemm: the accumulator C (" << rc.buffer->name
                        << ") must be a fragment or shared buffer, not a global tensor";
  }
  // A TF32 GEMM (an operand declared T.tfloat32) rounds float32 operands into a float32
  // accumulator; mixing in another type would leave the rounding ill-defined.
  const DType f32 = DType::Float(32);
  if (tf32 && (ta != f32 || tb != f32 || tc != f32)) {
    TL_USER_ERROR(span) << "T.gemm: a tfloat32 GEMM takes tfloat32/float32 A and B into a float32 accumulator, got A "
                        << ta.str() << ", B " << tb.str() << ", C " << tc.str();
  }
  if (!clear_accum) clear_accum = MakeBool(false);
  return GemmOp::Make(ra, rb, rc, trans_a, trans_b, static_cast<GemmPolicy>(policy),
                      ToBool(clear_accum), span, tf32, async_wgmma);
}

Stmt MakeFill(RegionSpec dst, Expr value, const Span& span) {
  // T.fill(s[0], v): a single element is a region of extent 1 in every dimension.
  Region r = dst.IsPoint() && dst.mins.size() == dst.buffer->shape.size()
                 ? Region{dst.buffer, [&] {
                     std::vector<Range> rs;
                     for (const Expr& m : dst.mins) rs.push_back({m, MakeInt(1)});
                     return rs;
                   }()}
                 : Whole(dst, "T.fill", "destination", span);
  return FillOp::Make(r, Cast::Make(r.buffer->dtype, value), span);
}

Stmt MakeReduce(RegionSpec src, RegionSpec dst, ReduceKind kind, int dim, bool clear,
                const Span& span) {
  Region s = Whole(src, "T.reduce", "source", span), d = Whole(dst, "T.reduce", "destination", span);
  int nd = static_cast<int>(s.ranges.size());
  if (dim < 0) dim += nd;
  if (dim < 0 || dim >= nd) {
    TL_USER_ERROR(span) << "T.reduce_" << ReduceKindName(kind) << ": dim out of range for a "
                        << nd << "-D source";
  }
  std::vector<Expr> kept;
  for (int i = 0; i < nd; ++i) {
    if (i != dim) kept.push_back(s.ranges[i].extent);
  }
  std::vector<Expr> got;
  for (const Range& rg : d.ranges) got.push_back(rg.extent);
  auto strip = [](std::vector<Expr> v) {
    std::vector<Expr> out;
    for (auto& e : v) {
      if (!IsOne(e)) out.push_back(e);
    }
    return out;
  };
  auto k = strip(kept), g = strip(got);
  bool ok = k.size() == g.size();
  for (size_t i = 0; ok && i < k.size(); ++i) ok = ProveEqual(k[i], g[i]) == Eq::kYes;
  if (!ok) {
    TL_USER_ERROR(span) << "T.reduce_" << ReduceKindName(kind) << ": reducing " << src.buffer->name
                        << " (" << ShapeStr(TileShape(s)) << ") over dim " << dim << " gives "
                        << ShapeStr(k) << ", but the destination " << d.buffer->name << " is "
                        << ShapeStr(g);
  }
  return ReduceOp::Make(s, d, kind, dim, clear, span);
}

Stmt MakeAtomic(AtomicKind kind, RegionSpec dst, RegionSpec src, Expr value, const Span& span) {
  const char* name = kind == AtomicKind::kAdd ? "T.atomic_add"
                     : kind == AtomicKind::kMax ? "T.atomic_max" : "T.atomic_min";
  const DType dt = dst.buffer->dtype;
  if (dt.IsFloat8() || dt.IsMxFloat() || dt.IsSubByte()) {
    // No GPU has 8-bit float (or 4-bit) atomics, and a compare-and-swap loop on a byte would
    // need the neighbouring bytes' word: refused rather than emulated.
    TL_USER_ERROR(span) << name << ": " << dst.buffer->name << " is " << dt.str() << "; atomics on "
                        << (dt.IsSubByte() ? "4-bit types" : "8-bit floats") << " are not supported (accumulate in "
                        << (dt.IsInt() ? "int32" : "float32") << " and cast)";
  }
  if (!src.buffer) {
    // Element form: dst[i, j] op= value (or a region op= a broadcast value).
    Region d{dst.buffer, {}};
    if (dst.mins.empty()) d = Region::Full(dst.buffer);
    for (size_t i = 0; i < dst.mins.size(); ++i) {
      d.ranges.push_back({dst.mins[i], dst.extents[i] ? dst.extents[i] : MakeInt(1)});
    }
    return AtomicOp::Make(kind, d, Region{}, Cast::Make(dst.buffer->dtype, value), span);
  }
  Region s = Whole(src, name, "source", span);
  auto tile = TileShape(s);
  Region d = Resolve(dst, &tile, name, "destination", span, &s);
  auto td = TileShape(d);
  bool ok = td.size() == tile.size();
  for (size_t i = 0; ok && i < td.size(); ++i) ok = ProveEqual(td[i], tile[i]) == Eq::kYes;
  if (!ok) {
    TL_USER_ERROR(span) << name << ": shape mismatch: destination is " << ShapeStr(td)
                        << " but source is " << ShapeStr(tile);
  }
  return AtomicOp::Make(kind, d, s, nullptr, span);
}

Stmt MakeCumsum(RegionSpec src, RegionSpec dst, int dim, bool reverse, const Span& span) {
  Region s = Whole(src, "T.cumsum", "source", span);
  Region d = dst.buffer ? Whole(dst, "T.cumsum", "destination", span) : s;
  int nd = static_cast<int>(s.ranges.size());
  if (dim < 0) dim += nd;
  if (dim < 0 || dim >= nd) {
    TL_USER_ERROR(span) << "T.cumsum: dim out of range for a " << nd << "-D source";
  }
  if (d.ranges.size() != s.ranges.size()) {
    TL_USER_ERROR(span) << "T.cumsum: source and destination differ in rank";
  }
  for (size_t i = 0; i < s.ranges.size(); ++i) {
    if (ProveEqual(s.ranges[i].extent, d.ranges[i].extent) != Eq::kYes) {
      TL_USER_ERROR(span) << "T.cumsum: shape mismatch: source " << ShapeStr(TileShape(s)) << ", destination "
                          << ShapeStr(TileShape(d));
    }
  }
  DType t = d.buffer->dtype;
  // acc = 0; for k in order along dim: acc += src[..k..]; dst[..k..] = acc
  std::vector<VarRef> vars;
  for (int i = 0; i < nd; ++i) vars.push_back(Var::Make(i == dim ? "k" : "i" + std::to_string(i)));
  auto at = [&](const Region& r) {
    std::vector<Expr> idx;
    for (int i = 0; i < nd; ++i) {
      Expr v = vars[i];
      if (i == dim && reverse) v = r.ranges[i].extent - MakeInt(1) - v;
      idx.push_back(r.ranges[i].min + v);
    }
    return idx;
  };
  Buffer acc = BufferNode::Make("cumsum_acc", t, {MakeInt(1)}, Scope::kVar);
  Expr zero = t.IsFloat() ? MakeFloat(0, t) : MakeInt(0, t);
  Stmt step = Seq::Make(
      {BufferStore::Make(acc, {MakeInt(0)},
                         MakeBinary(BinOp::kAdd, BufferLoad::Make(acc, {MakeInt(0)}),
                                    Cast::Make(t, BufferLoad::Make(s.buffer, at(s)))),
                         span),
       BufferStore::Make(d.buffer, at(d), BufferLoad::Make(acc, {MakeInt(0)}), span)},
      span);
  Stmt body = Seq::Make({Allocate::Make(acc, zero, span),
                         For::Make(vars[dim], MakeInt(0), s.ranges[dim].extent, ForKind::kSerial, step, {}, span)},
                        span);
  for (int i = nd - 1; i >= 0; --i) {
    if (i == dim) continue;
    body = For::Make(vars[i], MakeInt(0), s.ranges[i].extent, ForKind::kParallel, body, {}, span);
  }
  return body;
}

}  // namespace tl::op
