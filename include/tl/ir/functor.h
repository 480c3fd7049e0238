// SPDX-License-Identifier: Apache-2.0
/// \file IRVisitor (read-only walk) and IRMutator (rebuilding walk), generated from
/// node_kinds.def. Override the Visit_/Mutate_ overload of the nodes you care about.
#pragma once

#include <functional>

#include "tl/ir/stmt.h"

namespace tl::ir {

/// Walks every expression and statement; the default visits children in order.
class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void Visit(const Expr& e);
  virtual void Visit(const Stmt& s);
  /// Called for each region of a tile op (visits the range expressions).
  virtual void VisitRegion(const Region& r);

 protected:
#define TL_EXPR_NODE(Name) virtual void Visit_(const Name* op);
#define TL_STMT_NODE(Name) virtual void Visit_(const Name* op);
#include "tl/ir/node_kinds.def"
};

/// Rebuilds the tree bottom-up. A node whose children are unchanged is returned as is,
/// and a rebuilt statement keeps its span.
class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr Mutate(const Expr& e);
  virtual Stmt Mutate(const Stmt& s);
  virtual Region MutateRegion(const Region& r);
  /// Hook to substitute buffers; the default keeps them.
  virtual Buffer MutateBuffer(const Buffer& b) { return b; }

 protected:
#define TL_EXPR_NODE(Name) virtual Expr Mutate_(const Name* op, const Expr& self);
#define TL_STMT_NODE(Name) virtual Stmt Mutate_(const Name* op, const Stmt& self);
#include "tl/ir/node_kinds.def"
  std::vector<Expr> MutateAll(const std::vector<Expr>& v, bool* changed);
};

/// Replaces variables by expressions (by identity).
Expr Substitute(const Expr& e, const std::function<Expr(const Var*)>& f);
Stmt Substitute(const Stmt& s, const std::function<Expr(const Var*)>& f);

/// Calls `f` on every expression node (pre-order), including those inside statements.
void ForEachExpr(const Stmt& s, const std::function<void(const Expr&)>& f);
/// The same over one expression and its operands.
void ForEachExpr(const Expr& e, const std::function<void(const Expr&)>& f);

/// The statements of a sequence, nested sequences flattened (null statements dropped), or
/// `s` alone.
std::vector<Stmt> FlattenSeq(const Stmt& s);

/// Whether `e` mentions a variable for which `pred` holds.
bool UsesVar(const Expr& e, const std::function<bool(const Var*)>& pred);
/// Whether `e` mentions `v`.
bool UsesVar(const Expr& e, const Var* v);

}  // namespace tl::ir
