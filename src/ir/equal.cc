// SPDX-License-Identifier: Apache-2.0
/// \file Structural equality of expressions, statements and functions.
///
/// Two trees are equal when they have the same shape, the same constants and operators,
/// and their variables and buffers correspond. A variable or buffer *defined* inside the
/// compared trees (loop variable, let, block index, allocation, parameter) is mapped to
/// its counterpart at the definition, one-to-one; one that is free on both sides must be
/// the very same object. Names and spans do not matter: they are for display only.
#include "tl/ir/equal.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace tl::ir {
namespace {

class EqualChecker {
 public:
  bool Eq(const Expr& a, const Expr& b) {
    // A shared subtree is equal to itself unless a variable inside it is mapped to a
    // different one, which can only happen once definitions have been recorded.
    if (a == b && var_map_.empty() && buf_map_.empty()) return true;
    if (!a || !b) return !a && !b;
    if (a->kind != b->kind || a->dtype != b->dtype) return false;
    // Expressions may share subtrees (DAGs); remembering the pairs found equal keeps the
    // comparison linear in the number of distinct nodes. Only valid while no mapping is
    // recorded, as a later redefinition could change the answer.
    const bool cacheable = var_map_.empty() && buf_map_.empty() &&
                           a->kind != NodeKind::kIntImm && a->kind != NodeKind::kFloatImm &&
                           a->kind != NodeKind::kVar;
    if (cacheable && equal_pairs_.count({a.get(), b.get()})) return true;
    bool eq = false;
    switch (a->kind) {
#define TL_EXPR_NODE(Name)                                                                 \
  case NodeKind::k##Name:                                                                  \
    eq = Eq_(static_cast<const Name*>(a.get()), static_cast<const Name*>(b.get())); \
    break;
#include "tl/ir/node_kinds.def"
      default:
        break;
    }
    if (eq && cacheable) equal_pairs_.insert({a.get(), b.get()});
    return eq;
  }

  bool Eq(const Stmt& a, const Stmt& b) {
    if (!a || !b) return !a && !b;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
#define TL_STMT_NODE(Name) \
  case NodeKind::k##Name:  \
    return Eq_(static_cast<const Name*>(a.get()), static_cast<const Name*>(b.get()));
#include "tl/ir/node_kinds.def"
      default:
        return false;
    }
  }

  bool Eq(const PrimFunc& a, const PrimFunc& b) {
    if (!a || !b) return !a && !b;
    if (a->params.size() != b->params.size()) return false;
    for (size_t i = 0; i < a->params.size(); ++i) {
      const Param& pa = a->params[i];
      const Param& pb = b->params[i];
      if (static_cast<bool>(pa.buffer) != static_cast<bool>(pb.buffer)) return false;
      if (pa.buffer) {
        if (!DefineBuffer(pa.buffer, pb.buffer)) return false;
      } else if (!DefineVar(pa.var.get(), pb.var.get())) {
        return false;
      }
    }
    return Eq(a->body, b->body);
  }

 private:
  // Definitions. A redefinition (the same Var object bound twice, e.g. by two sibling
  // loops) simply replaces the earlier correspondence.
  bool DefineVar(const Var* a, const Var* b) {
    if (!a || !b) return !a && !b;
    if (a->dtype != b->dtype) return false;
    var_map_[a] = b;
    var_rmap_[b] = a;
    return true;
  }

  bool DefineBuffer(const Buffer& a, const Buffer& b) {
    if (!a || !b) return !a && !b;
    // Shapes may mention variables (dynamic dims), so compare them before mapping.
    if (a->dtype != b->dtype || a->scope != b->scope) return false;
    if (!EqAll(a->shape, b->shape) || !EqAll(a->strides, b->strides)) return false;
    buf_map_[a.get()] = b.get();
    buf_rmap_[b.get()] = a.get();
    return true;
  }

  // Uses: a mapped variable must map to its counterpart; an unmapped one must be free on
  // both sides (i.e. not defined on the right either) and identical.
  bool VarEq(const Var* a, const Var* b) {
    auto it = var_map_.find(a);
    if (it != var_map_.end()) return it->second == b;
    if (var_rmap_.count(b)) return false;
    return a == b;
  }

  bool BufEq(const Buffer& a, const Buffer& b) {
    if (!a || !b) return !a && !b;
    auto it = buf_map_.find(a.get());
    if (it != buf_map_.end()) return it->second == b.get();
    if (buf_rmap_.count(b.get())) return false;
    return a == b;
  }

  bool EqAll(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!Eq(a[i], b[i])) return false;
    }
    return true;
  }

  bool RegionEq(const Region& a, const Region& b) {
    if (!BufEq(a.buffer, b.buffer) || a.ranges.size() != b.ranges.size()) return false;
    for (size_t i = 0; i < a.ranges.size(); ++i) {
      if (!Eq(a.ranges[i].min, b.ranges[i].min) || !Eq(a.ranges[i].extent, b.ranges[i].extent)) {
        return false;
      }
    }
    return true;
  }

  // ---- expressions (kind and dtype already match) ----
  bool Eq_(const IntImm* a, const IntImm* b) { return a->value == b->value; }
  bool Eq_(const FloatImm* a, const FloatImm* b) {
    // NaN constants compare equal to each other so that a tree equals itself.
    return a->value == b->value || (a->value != a->value && b->value != b->value);
  }
  bool Eq_(const Var* a, const Var* b) { return VarEq(a, b); }
  bool Eq_(const Binary* a, const Binary* b) {
    return a->op == b->op && Eq(a->a, b->a) && Eq(a->b, b->b);
  }
  bool Eq_(const Not* a, const Not* b) { return Eq(a->a, b->a); }
  bool Eq_(const Select* a, const Select* b) {
    return Eq(a->cond, b->cond) && Eq(a->t, b->t) && Eq(a->f, b->f);
  }
  bool Eq_(const Cast* a, const Cast* b) { return Eq(a->value, b->value); }
  bool Eq_(const Call* a, const Call* b) { return a->op == b->op && EqAll(a->args, b->args); }
  bool Eq_(const BufferLoad* a, const BufferLoad* b) {
    return BufEq(a->buffer, b->buffer) && EqAll(a->indices, b->indices);
  }

  // ---- statements (kind already matches) ----
  bool Eq_(const For* a, const For* b) {
    if (a->for_kind != b->for_kind || !Eq(a->min, b->min) || !Eq(a->extent, b->extent)) {
      return false;
    }
    if (a->annotations.size() != b->annotations.size()) return false;
    for (auto ia = a->annotations.begin(), ib = b->annotations.begin();
         ia != a->annotations.end(); ++ia, ++ib) {
      if (ia->first != ib->first || !Eq(ia->second, ib->second)) return false;
    }
    return DefineVar(a->var.get(), b->var.get()) && Eq(a->body, b->body);
  }
  bool Eq_(const While* a, const While* b) { return Eq(a->cond, b->cond) && Eq(a->body, b->body); }
  bool Eq_(const IfThenElse* a, const IfThenElse* b) {
    return Eq(a->cond, b->cond) && Eq(a->then_case, b->then_case) &&
           Eq(a->else_case, b->else_case);
  }
  bool Eq_(const Seq* a, const Seq* b) {
    if (a->stmts.size() != b->stmts.size()) return false;
    for (size_t i = 0; i < a->stmts.size(); ++i) {
      if (!Eq(a->stmts[i], b->stmts[i])) return false;
    }
    return true;
  }
  bool Eq_(const LetStmt* a, const LetStmt* b) {
    return Eq(a->value, b->value) && DefineVar(a->var.get(), b->var.get());
  }
  bool Eq_(const BufferStore* a, const BufferStore* b) {
    return BufEq(a->buffer, b->buffer) && EqAll(a->indices, b->indices) && Eq(a->value, b->value);
  }
  bool Eq_(const Allocate* a, const Allocate* b) {
    return Eq(a->init, b->init) && DefineBuffer(a->buffer, b->buffer);
  }
  bool Eq_(const Evaluate* a, const Evaluate* b) { return Eq(a->value, b->value); }
  bool Eq_(const AttrStmt* a, const AttrStmt* b) {
    return a->key == b->key && EqAll(a->values, b->values);
  }
  bool Eq_(const Break*, const Break*) { return true; }
  bool Eq_(const Continue*, const Continue*) { return true; }
  bool Eq_(const KernelLaunch* a, const KernelLaunch* b) {
    if (a->threads != b->threads || !EqAll(a->grid, b->grid)) return false;
    if (a->block_vars.size() != b->block_vars.size()) return false;
    for (size_t i = 0; i < a->block_vars.size(); ++i) {
      if (!DefineVar(a->block_vars[i].get(), b->block_vars[i].get())) return false;
    }
    return Eq(a->body, b->body);
  }
  bool Eq_(const CopyOp* a, const CopyOp* b) {
    return a->disable_tma == b->disable_tma && RegionEq(a->src, b->src) && RegionEq(a->dst, b->dst);
  }
  bool Eq_(const GemmOp* a, const GemmOp* b) {
    return a->trans_a == b->trans_a && a->trans_b == b->trans_b && a->policy == b->policy && a->tf32 == b->tf32 &&
           a->async_wgmma == b->async_wgmma &&
           RegionEq(a->a, b->a) && RegionEq(a->b, b->b) && RegionEq(a->c, b->c) &&
           Eq(a->clear_accum, b->clear_accum);
  }
  bool Eq_(const FillOp* a, const FillOp* b) {
    return RegionEq(a->dst, b->dst) && Eq(a->value, b->value);
  }
  bool Eq_(const ReduceOp* a, const ReduceOp* b) {
    return a->reduce_kind == b->reduce_kind && a->dim == b->dim && a->clear == b->clear &&
           RegionEq(a->src, b->src) && RegionEq(a->dst, b->dst);
  }
  bool Eq_(const AtomicOp* a, const AtomicOp* b) {
    return a->atomic_kind == b->atomic_kind && RegionEq(a->dst, b->dst) &&
           RegionEq(a->src, b->src) && Eq(a->value, b->value);
  }

  std::unordered_map<const Var*, const Var*> var_map_, var_rmap_;
  std::unordered_map<const BufferNode*, const BufferNode*> buf_map_, buf_rmap_;

  struct PairHash {
    size_t operator()(const std::pair<const ExprNode*, const ExprNode*>& p) const {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  std::unordered_set<std::pair<const ExprNode*, const ExprNode*>, PairHash> equal_pairs_;
};

}  // namespace

bool StructuralEqual(const Expr& a, const Expr& b) { return EqualChecker().Eq(a, b); }

bool StructuralEqual(const Stmt& a, const Stmt& b) { return EqualChecker().Eq(a, b); }

bool StructuralEqual(const PrimFunc& a, const PrimFunc& b) { return EqualChecker().Eq(a, b); }

}  // namespace tl::ir
