// SPDX-License-Identifier: Apache-2.0
/// \file "lower-buffer-views": T.reshape and T.view make a second buffer over the storage of
/// another (row-major; the same element count, or with another dtype the same bits). The front end marks each with an
/// attribute "tl.buffer_view"(address_of(view[0, ...]), address_of(owner[0, ...])). Here
/// every access to a view becomes an access to its owner at the same row-major position,
/// so no later pass knows about views; a tile op that touches a view is first turned into
/// loop nests (the target-neutral lowering), whose element accesses are then re-indexed,
/// except a copy whose view region is a rectangle of the owner (or a few runs of whole
/// owner rows): that stays a copy (or a few) of the owner, open to TMA and vector copies.
/// A register fragment accessed through a view no longer matches the element pattern
/// layout inference needs, so the CUDA target keeps it in shared memory (and says so).
#include <optional>
#include <unordered_map>
#include <vector>

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"
#include "region_util.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

const BufferNode* MarkedBuffer(const Expr& e) {
  const auto* addr = As<Call>(e);
  const auto* load = addr && HasEffect(addr, kAddress) ? As<BufferLoad>(addr->args[0]) : nullptr;
  return load ? load->buffer.get() : nullptr;
}
Buffer MarkedBufferRef(const Expr& e) { return As<BufferLoad>(As<Call>(e)->args[0])->buffer; }

/// The owner dims each view dim merges, as [first, last) per view dim, when both shapes are
/// static and every view dim is the product of consecutive owner dims (the outermost view
/// dim also taking leading unit dims); nullopt otherwise.
std::optional<std::vector<std::pair<size_t, size_t>>> MergeGroups(const Buffer& view, const Buffer& owner) {
  std::vector<int64_t> v, o;
  for (const Expr& e : view->shape) {
    int64_t x;
    if (!AsConstInt(e, &x) || x < 1) return std::nullopt;
    v.push_back(x);
  }
  for (const Expr& e : owner->shape) {
    int64_t x;
    if (!AsConstInt(e, &x) || x < 1) return std::nullopt;
    o.push_back(x);
  }
  std::vector<std::pair<size_t, size_t>> groups(v.size());
  size_t j = o.size();
  for (size_t i = v.size(); i-- > 0;) {
    if (j == 0) return std::nullopt;
    size_t first = j;
    int64_t product = 1;
    do {
      product *= o[--first];
    } while (first > 0 && (i == 0 || product < v[i]));
    if (product != v[i]) return std::nullopt;
    groups[i] = {first, j};
    j = first;
  }
  return groups;
}

/// Reindex for a view that merges owner dims: each view index splits over its own group
/// only (32-bit where the group has fewer than 2^31 elements). The owner's offset is then
/// the view's, term by term, which the simplifier folds back (`x // c * c + x % c`), and an
/// index past a view dim stays past the owner dims of its group, so the owner's bounds
/// checks and edge guards still see it.
std::optional<std::vector<Expr>> ReindexByGroups(const Buffer& view, const std::vector<Expr>& idx,
                                                 const Buffer& owner) {
  auto groups = MergeGroups(view, owner);
  if (!groups || idx.size() != groups->size()) return std::nullopt;
  std::vector<Expr> out(owner->shape.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    auto [first, last] = (*groups)[i];
    int64_t extent = 1;
    AsConstInt(view->shape[i], &extent);
    DType t = extent < (int64_t{1} << 31) ? idx[i]->dtype : DType::Int(64);
    Expr rest = Cast::Make(t, idx[i]);
    for (size_t k = last; k-- > first;) {
      Expr dim = Cast::Make(t, owner->shape[k]);
      Expr at = k == first ? rest : FloorMod(rest, dim);
      out[k] = Cast::Make(owner->shape[k]->dtype, at);
      rest = FloorDiv(rest, dim);
    }
  }
  return out;
}

class ViewLowerer : public IRMutator {
 public:
  /// view -> owner, chains resolved (a view of a view reads the first owner).
  std::unordered_map<const BufferNode*, Buffer> owner_;

 protected:
  Stmt Mutate_(const AttrStmt* op, const Stmt& self) override {
    if (op->key == "tl.buffer_view") return Seq::Make({}, op->span);
    return IRMutator::Mutate_(op, self);
  }

  Expr Mutate_(const BufferLoad* op, const Expr& self) override {
    auto it = owner_.find(op->buffer.get());
    if (it == owner_.end()) return IRMutator::Mutate_(op, self);
    if (op->buffer->dtype != it->second->dtype) return ReinterpretingLoad(op->buffer, MutateAll(op->indices), it->second);
    return BufferLoad::Make(it->second, Reindex(op->buffer, MutateAll(op->indices), it->second));
  }

  Stmt Mutate_(const BufferStore* op, const Stmt& self) override {
    auto it = owner_.find(op->buffer.get());
    if (it == owner_.end()) return IRMutator::Mutate_(op, self);
    if (op->buffer->dtype != it->second->dtype) {
      return ReinterpretingStore(op->buffer, MutateAll(op->indices), Mutate(op->value), it->second, op->span);
    }
    return BufferStore::Make(it->second, Reindex(op->buffer, MutateAll(op->indices), it->second), Mutate(op->value),
                             op->span);
  }

  // A tile op touching a view: its loop nests, with the view's accesses re-indexed. A copy
  // whose view regions are rectangles of the owner too stays a copy of the owner (TMA,
  // cp.async and vector copies stay open to it): a reshaped global tensor's copies.
  Stmt Mutate_(const CopyOp* op, const Stmt& self) override {
    if (!Touches({op->src, op->dst})) return IRMutator::Mutate_(op, self);
    std::optional<Region> src = OnOwner(op->src), dst = OnOwner(op->dst);
    if (src && dst) return CopyOp::Make(*src, *dst, op->span, op->disable_tma);
    if (Stmt pieces = CopyInOwnerRows(op)) return pieces;
    return Mutate(LowerTileOpToLoops(self));
  }
  Stmt Mutate_(const FillOp* op, const Stmt& self) override {
    return Touches({op->dst}) ? Mutate(LowerTileOpToLoops(self)) : IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const ReduceOp* op, const Stmt& self) override {
    if (!Touches({op->src, op->dst})) return IRMutator::Mutate_(op, self);
    if (Stmt windows = ReduceOfSplitColumns(op)) return windows;
    return Mutate(LowerTileOpToLoops(self));
  }
  Stmt Mutate_(const AtomicOp* op, const Stmt& self) override {
    return Touches({op->dst, op->src}) ? Mutate(LowerTileOpToLoops(self)) : IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const GemmOp* op, const Stmt& self) override {
    for (const Region* r : {&op->a, &op->b, &op->c}) {
      if (owner_.count(r->buffer.get())) {
        TL_USER_ERROR(op->span) << "T.gemm of " << r->buffer->name
                                << ", a T.reshape / T.view, is not supported; copy it into a tile of the shape "
                                   "the GEMM needs";
      }
    }
    return IRMutator::Mutate_(op, self);
  }

 private:
  /// T.reduce_*(V, D, dim=-1) where V = T.reshape(F, (M, B, C)) of a whole 2-D fragment F
  /// (M, B * C) into D (M, B): one reduction along the rows of each column window
  /// F[:, b * C:(b + 1) * C] into column D[:, b] (at most 16 of them). Upstream's fp8
  /// lighting indexer sums its (block_N, block_Q, heads) view of the score tile over the
  /// heads this way; as element loops the tile could not stay in registers. Null otherwise.
  Stmt ReduceOfSplitColumns(const ReduceOp* op) {
    auto it = owner_.find(op->src.buffer.get());
    if (it == owner_.end() || owner_.count(op->dst.buffer.get())) return nullptr;
    const Buffer &view = op->src.buffer, &owner = it->second;
    int64_t m = 0, bc = 0, m2 = 0, b = 0, c = 0, dm = 0, db = 0;
    if (owner->scope != Scope::kFragment || view->dtype != owner->dtype || owner->shape.size() != 2 ||
        view->shape.size() != 3 || op->dst.buffer->shape.size() != 2 || op->dim != 2 ||
        !AsConstInt(owner->shape[0], &m) || !AsConstInt(owner->shape[1], &bc) || !AsConstInt(view->shape[0], &m2) ||
        !AsConstInt(view->shape[1], &b) || !AsConstInt(view->shape[2], &c) ||
        !AsConstInt(op->dst.buffer->shape[0], &dm) || !AsConstInt(op->dst.buffer->shape[1], &db)) {
      return nullptr;
    }
    if (m != m2 || b * c != bc || dm != m || db != b || b > 16 || !CoversWholeBuffer(op->src) ||
        !CoversWholeBuffer(op->dst)) {
      return nullptr;
    }
    std::vector<Stmt> out;
    for (int64_t k = 0; k < b; ++k) {
      Region src{owner, {Range{MakeInt(0), MakeInt(m)}, Range{MakeInt(k * c), MakeInt(c)}}};
      Region dst{op->dst.buffer, {Range{MakeInt(0), MakeInt(m)}, Range{MakeInt(k), MakeInt(1)}}};
      out.push_back(ReduceOp::Make(src, dst, op->reduce_kind, 1, op->clear, op->span));
    }
    return Seq::Make(out, op->span);
  }

  std::vector<Expr> MutateAll(const std::vector<Expr>& v) {
    std::vector<Expr> out;
    for (const Expr& e : v) out.push_back(Mutate(e));
    return out;
  }

  bool Touches(const std::vector<Region>& regions) const {
    for (const Region& r : regions) {
      if (r.buffer && owner_.count(r.buffer.get())) return true;
    }
    return false;
  }

  /// `r` as a region of its owner when `r` is a view's region that is also a rectangle of
  /// the owner, with the same non-unit extents in the same order (so a copy pairs the same
  /// elements); `r` itself when it is no view's; nullopt otherwise. Both shapes must be
  /// static, and each view dimension the product of consecutive owner dimensions (a merge,
  /// as `T.Tensor((KH * KW * C, F), dtype, kernel.data)`). Within a merged dimension the
  /// range [s, s + e) must lie in one row of the innermost owner dimension it reaches: e
  /// divides that dimension and s is provably a multiple of e (or e is the dimension's
  /// full extent from a multiple of it). The outermost dimension of each group takes the
  /// quotient without a modulo, so a range past the view's end is past the owner's too
  /// (and is bounds-checked and guarded as before).
  std::optional<Region> OnOwner(const Region& r) {
    auto it = owner_.find(r.buffer.get());
    if (it == owner_.end()) return r;
    const Buffer& owner = it->second;
    if (owner->dtype != r.buffer->dtype) return std::nullopt;  // element by element, reinterpreted
    auto groups = MergeGroups(r.buffer, owner);
    if (!groups || r.ranges.size() != groups->size()) return std::nullopt;
    std::vector<Range> out(owner->shape.size());
    arith::Analyzer az;
    for (size_t i = 0; i < r.ranges.size(); ++i) {
      auto [first, last] = (*groups)[i];
      Expr s = r.ranges[i].min;
      int64_t e = 0;
      if (!AsConstInt(r.ranges[i].extent, &e) || e < 1) return std::nullopt;
      bool open = true;  // the range still has its non-unit extent to place
      for (size_t k = last; k-- > first;) {
        DType t = owner->shape[k]->dtype;
        int64_t dim_extent = 0;
        AsConstInt(owner->shape[k], &dim_extent);
        Expr dim = MakeInt(dim_extent, s->dtype);
        if (k == first) {  // outermost of the group: the quotient, unreduced
          out[k] = Range{Cast::Make(t, s), open && e != 1 ? r.ranges[i].extent : MakeInt(1, t)};
          break;
        }
        if (!open || e == 1) {
          out[k] = Range{Cast::Make(t, FloorMod(s, dim)), MakeInt(1, t)};
        } else if (dim_extent % e == 0 &&
                   az.CanProve(EQ(FloorMod(s, MakeInt(e, s->dtype)), MakeInt(0, s->dtype)))) {
          out[k] = Range{Cast::Make(t, FloorMod(s, dim)), MakeInt(e, t)};
          open = false;
        } else if (e == dim_extent && az.CanProve(EQ(FloorMod(s, dim), MakeInt(0, s->dtype)))) {
          out[k] = Range{MakeInt(0, t), MakeInt(e, t)};
          open = false;
        } else {
          return std::nullopt;
        }
        s = FloorDiv(s, dim);
      }
    }
    for (Range& rg : out) rg = Range{az.Simplify(rg.min), az.Simplify(rg.extent)};
    return Region{owner, out};
  }

  /// A copy whose view range crosses rows of the owner, as a few copies that each stay in one:
  /// `T.copy(tile, out_flat[by * 128, bx * bn])` with `out_flat` (N * OH * OW, F) over the 4-D
  /// output and OW = 64 is two copies of 64 tile rows, each a rectangle of the owner (so each
  /// can be a TMA box or a vector copy; as element loops every access divides the flat row
  /// index). One view dimension is split, into at most kMaxPieces ranges of the extent of the
  /// innermost owner dimension it merges, and only where its start is provably a multiple
  /// of that extent; the other side's matching dimension is split alike. Null otherwise.
  Stmt CopyInOwnerRows(const CopyOp* op) {
    constexpr int64_t kMaxPieces = 8;
    const bool src_is_view = owner_.count(op->src.buffer.get()) > 0;
    if (src_is_view == (owner_.count(op->dst.buffer.get()) > 0)) return nullptr;  // one side a view
    const Region& view = src_is_view ? op->src : op->dst;
    const Region& other = src_is_view ? op->dst : op->src;
    // (register tiles are copied whole; their element loops handle any view range)
    if (other.buffer->scope != Scope::kShared && other.buffer->scope != Scope::kGlobal) return nullptr;
    const Buffer& owner = owner_.at(view.buffer.get());
    auto groups = MergeGroups(view.buffer, owner);
    if (owner->dtype != view.buffer->dtype || !groups || view.ranges.size() != groups->size()) return nullptr;
    arith::Analyzer az;
    size_t non_unit = 0;  // non-unit view dimensions before the one split
    for (size_t i = 0; i < view.ranges.size(); ++i) {
      int64_t e = 0, inner = 0;
      if (!AsConstInt(view.ranges[i].extent, &e)) return nullptr;
      if (e == 1) continue;
      auto [first, last] = (*groups)[i];
      if (last - first < 2 || !AsConstInt(owner->shape[last - 1], &inner) || e <= inner || e % inner ||
          e / inner > kMaxPieces) {
        ++non_unit;
        continue;
      }
      const Expr& s = view.ranges[i].min;
      if (!az.CanProve(EQ(FloorMod(s, MakeInt(inner, s->dtype)), MakeInt(0, s->dtype)))) return nullptr;
      // the other side's non_unit-th non-unit dimension pairs with this one
      size_t j = 0, seen = 0;
      for (; j < other.ranges.size(); ++j) {
        if (IsOne(other.ranges[j].extent) || seen++ < non_unit) continue;
        break;
      }
      int64_t other_e = 0;
      if (j == other.ranges.size() || !AsConstInt(other.ranges[j].extent, &other_e) || other_e != e) return nullptr;
      std::vector<Stmt> pieces;
      for (int64_t k = 0; k < e / inner; ++k) {
        Region v = view, o = other;
        v.ranges[i] = Range{s + MakeInt(k * inner, s->dtype), MakeInt(inner, view.ranges[i].extent->dtype)};
        const Expr& t = other.ranges[j].min;
        o.ranges[j] = Range{t + MakeInt(k * inner, t->dtype), MakeInt(inner, other.ranges[j].extent->dtype)};
        std::optional<Region> on_owner = OnOwner(v);
        if (!on_owner) return nullptr;
        pieces.push_back(src_is_view ? CopyOp::Make(*on_owner, o, op->span, op->disable_tma)
                                     : CopyOp::Make(o, *on_owner, op->span, op->disable_tma));
      }
      return Seq::Make(pieces, op->span);
    }
    return nullptr;
  }

  /// The row-major position (int64) of the element at `idx` of `buf`.
  static Expr Linear(const Buffer& buf, const std::vector<Expr>& idx) {
    Expr linear;
    for (size_t k = 0; k < idx.size(); ++k) {
      Expr i = Cast::Make(DType::Int(64), idx[k]);
      linear = linear ? linear * Cast::Make(DType::Int(64), buf->shape[k]) + i : i;
    }
    return linear ? linear : MakeInt(0, DType::Int(64));
  }

  // A view with another dtype (T.view(A, shape, dtype=...)) sees the owner's bits, row-major
  // and little-endian as memory holds them: a view element narrower than the owner's is a
  // bit field of owner element p / r (field p % r from the low bits), a wider one joins the
  // r owner elements from p * r up (the first in the low bits). The bits move as unsigned
  // integers of each width (T.reinterpret at both ends).
  static DType Bits(DType t) { return DType::UInt(t.bits); }
  static Expr AsBits(const Expr& v) {
    return v->dtype == Bits(v->dtype) ? v : Call::Make(Bits(v->dtype), "reinterpret", {v});
  }
  static Expr FromBits(const Expr& bits, DType t) { return t == bits->dtype ? bits : Call::Make(t, "reinterpret", {bits}); }

  Expr ReinterpretingLoad(const Buffer& view, const std::vector<Expr>& idx, const Buffer& owner) {
    const DType vt = view->dtype, ot = owner->dtype;
    Expr p = Linear(view, idx);
    if (vt.bits < ot.bits) {
      const int64_t r = ot.bits / vt.bits;
      Expr word = AsBits(BufferLoad::Make(owner, FromLinear(owner, FloorDiv(p, MakeInt(r, p->dtype)))));
      Expr shift = Cast::Make(Bits(ot), FloorMod(p, MakeInt(r, p->dtype)) * MakeInt(vt.bits, p->dtype));
      Expr field = Binary::Make(BinOp::kShr, word, shift);
      return FromBits(Cast::Make(Bits(vt), field), vt);
    }
    const int64_t r = vt.bits / ot.bits;
    Expr joined;
    for (int64_t k = 0; k < r; ++k) {
      Expr part = Cast::Make(Bits(vt), AsBits(BufferLoad::Make(owner, FromLinear(owner, p * MakeInt(r, p->dtype) +
                                                                                           MakeInt(k, p->dtype)))));
      if (k > 0) part = Binary::Make(BinOp::kShl, part, MakeInt(k * ot.bits, Bits(vt)));
      joined = joined ? Binary::Make(BinOp::kBitOr, joined, part) : part;
    }
    return FromBits(joined, vt);
  }

  Stmt ReinterpretingStore(const Buffer& view, const std::vector<Expr>& idx, const Expr& value, const Buffer& owner,
                           const Span& span) {
    const DType vt = view->dtype, ot = owner->dtype;
    if (vt.bits < ot.bits) {
      TL_USER_ERROR(span) << "a write through " << view->name << ", a T.view of " << owner->name << " as "
                          << vt.str() << ", would change part of an element of " << owner->name << " (" << ot.str()
                          << ") that other threads may be writing too; write " << owner->name
                          << " itself, or through a view of a dtype at least as wide";
    }
    const int64_t r = vt.bits / ot.bits;
    // (the value's bits in each store: a pure expression, which the C++ compiler computes once)
    Expr bits = AsBits(value);
    Expr p = Linear(view, idx);
    std::vector<Stmt> parts;
    for (int64_t k = 0; k < r; ++k) {
      Expr field = k == 0 ? bits : Binary::Make(BinOp::kShr, bits, MakeInt(k * ot.bits, Bits(vt)));
      Expr at_k = p * MakeInt(r, p->dtype) + MakeInt(k, p->dtype);
      parts.push_back(BufferStore::Make(owner, FromLinear(owner, at_k), FromBits(Cast::Make(Bits(ot), field), ot), span));
    }
    return Seq::Make(parts, span);
  }

  /// The owner's indices of the element at `idx` of `view` (same row-major position).
  static std::vector<Expr> Reindex(const Buffer& view, const std::vector<Expr>& idx, const Buffer& owner) {
    if (auto grouped = ReindexByGroups(view, idx, owner)) return *grouped;
    return FromLinear(owner, Linear(view, idx));
  }

  /// The indices of `owner`'s element at row-major position `linear` (int64).
  static std::vector<Expr> FromLinear(const Buffer& owner, Expr linear) {
    std::vector<Expr> out(owner->shape.size());
    for (size_t k = owner->shape.size(); k-- > 0;) {
      Expr extent = Cast::Make(DType::Int(64), owner->shape[k]);
      Expr at = k == 0 ? linear : FloorMod(linear, extent);
      out[k] = Cast::Make(owner->shape[k]->dtype, at);
      linear = FloorDiv(linear, extent);
    }
    return out;
  }
};

/// Collects the markers in program order (a view is declared before it is used).
struct MarkerCollector : IRVisitor {
  std::unordered_map<const BufferNode*, Buffer>* owner;
  void Visit_(const AttrStmt* op) override {
    if (op->key != "tl.buffer_view" || op->values.size() != 2) return;
    const BufferNode* view = MarkedBuffer(op->values[0]);
    TL_ICHECK(view && MarkedBuffer(op->values[1])) << "malformed tl.buffer_view marker";
    Buffer target = MarkedBufferRef(op->values[1]);
    auto chained = owner->find(target.get());
    (*owner)[view] = chained == owner->end() ? target : chained->second;
  }
};

}  // namespace

ir::PrimFunc LowerBufferViews(const ir::PrimFunc& f, PassContext& ctx) {
  ViewLowerer lowerer;
  MarkerCollector markers;
  markers.owner = &lowerer.owner_;
  markers.Visit(f->body);
  if (lowerer.owner_.empty()) return f;
  return ir::PrimFuncNode::Make(f->name, f->params, lowerer.Mutate(f->body), f->span);
}

TL_REGISTER_PASS("lower-buffer-views", LowerBufferViews);

}  // namespace tl::transform
