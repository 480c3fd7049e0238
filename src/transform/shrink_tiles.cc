// SPDX-License-Identifier: Apache-2.0
/// \file "shrink-tiles-to-tensors": a GEMM's M or N dimension whose tiles are wider than
/// the tensors they are loaded from and stored to, for every block, is cut to the part that
/// can lie inside them. Upstream's convolution example on Hopper takes 256-column tiles over
/// 128 output channels: half of every tile is loaded as zeros, multiplied, and stored past
/// the tensor's edge, where the store drops it. With the tiles cut to 128 columns the
/// kernel is the one a 128-column tile would give (half the registers and shared memory).
///
/// The dimensions that must shrink together are found by following tile ops: a copy pairs
/// its two sides' tile dimensions in order, a GEMM pairs C's N with B's N (and M with A's M,
/// K of A with K of B). A group containing a GEMM's M or N is cut when
///  - every tile in it is used only by T.copy, T.gemm and T.fill over the whole group
///    dimension (no element access, reduction, atomic or intrinsic sees the tile, so no
///    element past the cut is read or written except by those ops);
///  - every copy between such a tile and a global tensor starts, along that dimension, at
///    a place proven non-negative (block indices and loops bound), in a tensor of constant
///    extent E: tile position j >= E - start is then outside the tensor, where loads give
///    zero (guard-global-access has turned copies with another safe value into loops) and
///    stores are dropped.
/// The tiles keep the positions below the largest such E - start, rounded up to 64 (whole
/// 128-byte panels of 16-bit tiles, and one warpgroup's wgmma rows), so every block still
/// computes everything it stores (a decode step's 16 rows in 128-row tiles: 64).
/// A GEMM past the cut added A x 0 to accumulators that only reach tensor elements past
/// the edge: no stored value changes. `tl.shrink_tiles=False` keeps the tiles.
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ranged_visitor.h"
#include "region_util.h"
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

constexpr int64_t kGranule = 64;

bool IsTile(const Buffer& b) { return b && (b->scope == Scope::kShared || b->scope == Scope::kFragment); }

/// A tile dimension: (buffer, axis).
using Axis = std::pair<const BufferNode*, size_t>;

struct AxisHash {
  size_t operator()(const Axis& a) const { return std::hash<const void*>()(a.first) * 31 + a.second; }
};

/// The tile dimensions a tile op touches, grouped, and what each group meets in global memory.
class GroupScan : public RangedVisitor {
 public:
  std::unordered_set<const BufferNode*> refused;  ///< tiles seen other than by copies, GEMMs, fills
  std::unordered_map<Axis, Axis, AxisHash> parent;
  std::unordered_map<const BufferNode*, Buffer> tiles;
  std::vector<std::pair<Axis, char>> gemm_axes;  ///< the M and N axes of the GEMMs' C
  std::vector<std::pair<Axis, int64_t>> reach;  ///< per tile-global copy axis: E - least start, or -1
  std::vector<std::pair<Axis, std::string>> reach_tensor;
  std::vector<const Region*> regions;  ///< every tile region of the ops

  Axis Find(Axis a) {
    auto it = parent.find(a);
    if (it == parent.end()) return parent[a] = a;
    if (it->second == a) return a;
    Axis root = Find(it->second);
    parent[a] = root;
    return root;
  }
  void Union(Axis a, Axis b) { parent[Find(a)] = Find(b); }

 protected:
  void Visit_(const Allocate* op) override {
    if (IsTile(op->buffer)) {
      tiles[op->buffer.get()] = op->buffer;
      if (op->init) refused.insert(op->buffer.get());
    }
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferLoad* op) override {
    Refuse(op->buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferStore* op) override {
    Refuse(op->buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const ReduceOp* op) override {
    Refuse(op->src.buffer), Refuse(op->dst.buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const AtomicOp* op) override {
    Refuse(op->src.buffer), Refuse(op->dst.buffer);
    IRVisitor::Visit_(op);
  }
  void Visit_(const FillOp* op) override {
    Note(op->dst);
    IRVisitor::Visit_(op);
  }
  void Visit_(const CopyOp* op) override {
    Note(op->src), Note(op->dst);
    const bool src_tile = IsTile(op->src.buffer), dst_tile = IsTile(op->dst.buffer);
    std::vector<size_t> s = TileDims(op->src), d = TileDims(op->dst);
    if (s.size() != d.size()) {
      Refuse(op->src.buffer), Refuse(op->dst.buffer);
    } else if (src_tile && dst_tile) {
      for (size_t i = 0; i < s.size(); ++i) Union({op->src.buffer.get(), s[i]}, {op->dst.buffer.get(), d[i]});
    } else if (src_tile || dst_tile) {
      const Region& tile = src_tile ? op->src : op->dst;
      const Region& global = src_tile ? op->dst : op->src;
      const std::vector<size_t>& td = src_tile ? s : d;
      const std::vector<size_t>& gd = src_tile ? d : s;
      for (size_t i = 0; i < td.size(); ++i) {
        int64_t extent = 0;
        arith::IntBound start = an_.Bound(global.ranges[gd[i]].min);
        const bool known = global.buffer->scope == Scope::kGlobal && AsConstInt(global.buffer->shape[gd[i]], &extent) &&
                           start.min && *start.min >= 0;
        Axis axis{tile.buffer.get(), td[i]};
        reach.push_back({axis, known ? std::max<int64_t>(0, extent - *start.min) : -1});
        reach_tensor.push_back({axis, global.buffer->name});
      }
    }
    IRVisitor::Visit_(op);
  }
  void Visit_(const GemmOp* op) override {
    Note(op->a), Note(op->b), Note(op->c);
    std::vector<size_t> a = TileDims(op->a), b = TileDims(op->b), c = TileDims(op->c);
    if (a.size() != 2 || b.size() != 2 || c.size() != 2) {
      Refuse(op->a.buffer), Refuse(op->b.buffer), Refuse(op->c.buffer);
    } else {
      const BufferNode *ab = op->a.buffer.get(), *bb = op->b.buffer.get(), *cb = op->c.buffer.get();
      const size_t am = op->trans_a ? a[1] : a[0], ak = op->trans_a ? a[0] : a[1];
      const size_t bn = op->trans_b ? b[0] : b[1], bk = op->trans_b ? b[1] : b[0];
      Union({cb, c[0]}, {ab, am});
      Union({cb, c[1]}, {bb, bn});
      Union({ab, ak}, {bb, bk});
      gemm_axes.push_back({{cb, c[0]}, 'M'});
      gemm_axes.push_back({{cb, c[1]}, 'N'});
    }
    IRVisitor::Visit_(op);
  }

 private:
  void Refuse(const Buffer& b) {
    if (IsTile(b)) refused.insert(b.get());
  }
  void Note(const Region& r) {
    if (IsTile(r.buffer)) regions.push_back(&r);
  }
};

/// The cut: each shrunk tile with its new shape; regions over them (and the global sides of
/// their copies) take the new extents.
class Shrinker : public IRMutator {
 public:
  explicit Shrinker(std::unordered_map<Axis, int64_t, AxisHash> cut) : cut_(std::move(cut)) {}

  Buffer MutateBuffer(const Buffer& b) override {
    auto it = made_.find(b.get());
    if (it != made_.end()) return it->second;
    std::vector<Expr> shape = b->shape;
    bool changed = false;
    for (size_t i = 0; i < shape.size(); ++i) {
      auto c = cut_.find({b.get(), i});
      if (c != cut_.end()) shape[i] = MakeInt(c->second, shape[i]->dtype), changed = true;
    }
    Buffer out = changed ? BufferNode::Make(b->name, b->dtype, shape, b->scope, b->strides, b->data) : b;
    return made_[b.get()] = out;
  }

  Region MutateRegion(const Region& r) override {
    Region out = IRMutator::MutateRegion(r);
    for (size_t i = 0; i < r.ranges.size(); ++i) {
      auto c = cut_.find({r.buffer.get(), i});
      if (c != cut_.end()) out.ranges[i] = Range{out.ranges[i].min, MakeInt(c->second, out.ranges[i].extent->dtype)};
    }
    return out;
  }

 protected:
  Stmt Mutate_(const CopyOp* op, const Stmt& self) override {
    const bool src_tile = IsTile(op->src.buffer), dst_tile = IsTile(op->dst.buffer);
    if (src_tile == dst_tile) return IRMutator::Mutate_(op, self);
    // the global side's dimension paired with a cut tile dimension takes its extent
    const Region& tile = src_tile ? op->src : op->dst;
    Region global = MutateRegion(src_tile ? op->dst : op->src);
    std::vector<size_t> td = TileDims(tile), gd = TileDims(src_tile ? op->dst : op->src);
    for (size_t i = 0; i < td.size() && i < gd.size(); ++i) {
      auto c = cut_.find({tile.buffer.get(), td[i]});
      if (c != cut_.end()) {
        global.ranges[gd[i]] = Range{global.ranges[gd[i]].min, MakeInt(c->second, global.ranges[gd[i]].extent->dtype)};
      }
    }
    Region t = MutateRegion(tile);
    return src_tile ? CopyOp::Make(t, global, op->span, op->disable_tma)
                    : CopyOp::Make(global, t, op->span, op->disable_tma);
  }

 private:
  std::unordered_map<Axis, int64_t, AxisHash> cut_;
  std::unordered_map<const BufferNode*, Buffer> made_;
};

PrimFunc ShrinkTilesToTensors(const PrimFunc& f, PassContext& ctx) {
  if (!ConfigOn(ctx, "tl.shrink_tiles", /*default_on=*/true)) return f;
  GroupScan scan;
  scan.Visit(f->body);
  // per group: its axes, the most positions any copy can reach inside a tensor, and whether
  // it may be cut at all
  std::map<Axis, std::vector<Axis>> members;
  for (const auto& [axis, _] : scan.parent) members[scan.Find(axis)].push_back(axis);
  std::unordered_map<Axis, int64_t, AxisHash> cut;
  std::vector<std::string> said;
  std::unordered_set<Axis, AxisHash> done;
  for (const auto& [n, which] : scan.gemm_axes) {
    const Axis root = scan.Find(n);
    if (!done.insert(root).second) continue;
    const std::vector<Axis>& group = members[root];
    int64_t full = -1, reach = -1;
    bool ok = true;
    for (const Axis& a : group) {
      int64_t e = 0;
      auto tile = scan.tiles.find(a.first);
      ok = ok && !scan.refused.count(a.first) && tile != scan.tiles.end() &&
           AsConstInt(tile->second->shape[a.second], &e) && (full < 0 || e == full);
      full = e;
    }
    std::string tensors;
    std::vector<std::string> seen;
    for (size_t i = 0; ok && i < scan.reach.size(); ++i) {
      if (scan.Find(scan.reach[i].first) != root) continue;
      ok = scan.reach[i].second >= 0;
      reach = std::max(reach, scan.reach[i].second);
      const std::string& name = scan.reach_tensor[i].second;
      if (std::find(seen.begin(), seen.end(), name) == seen.end()) {
        seen.push_back(name);
        tensors += (tensors.empty() ? "" : ", ") + name;
      }
    }
    // every region over the group's axes covers the whole dimension
    for (const Region* r : scan.regions) {
      for (size_t i = 0; ok && i < r->ranges.size(); ++i) {
        if (scan.parent.count({r->buffer.get(), i}) && scan.Find({r->buffer.get(), i}) == root) {
          int64_t lo = -1, e = -1;
          ok = AsConstInt(r->ranges[i].min, &lo) && AsConstInt(r->ranges[i].extent, &e) && lo == 0 && e == full;
        }
      }
    }
    const int64_t keep = (reach + kGranule - 1) / kGranule * kGranule;
    if (!ok || reach <= 0 || keep >= full) continue;
    std::vector<std::string> tiles;
    for (const Axis& a : group) {
      cut[a] = keep;
      tiles.push_back(a.first->name);
    }
    std::sort(tiles.begin(), tiles.end());
    tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
    std::string names;
    for (const std::string& t : tiles) names += (names.empty() ? "" : ", ") + t;
    said.push_back("tiles " + names + " cut from " + std::to_string(full) + " to " + std::to_string(keep) +
                   " along a GEMM's " + std::string(1, which) + ": positions from " + std::to_string(reach) +
                   " on lie outside " + tensors + " for every block (loaded as zeros, stored nowhere; tl.shrink_tiles)");
  }
  if (cut.empty()) return f;
  for (std::string& s : said) ctx.remarks.push_back(std::move(s));
  Shrinker shrink(std::move(cut));
  return PrimFuncNode::Make(f->name, f->params, shrink.Mutate(f->body), f->span);
}

}  // namespace

TL_REGISTER_PASS("shrink-tiles-to-tensors", ShrinkTilesToTensors);

}  // namespace tl::transform
