// SPDX-License-Identifier: Apache-2.0
/// \file Statements, tile operations and functions.
///
/// Allocations and let-bindings are declarations: they are in scope from the statement
/// that declares them to the end of the enclosing Seq (as in C), which keeps the front
/// end and code generation simple. Every statement carries the user's source span.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tl/ir/expr.h"
#include "tl/support/error.h"

namespace tl::ir {

/// Base of all statements.
struct StmtNode {
  const NodeKind kind;
  const Span span;
  virtual ~StmtNode() = default;

 protected:
  StmtNode(NodeKind k, Span s) : kind(k), span(std::move(s)) {}
};
using Stmt = std::shared_ptr<const StmtNode>;

template <typename T>
const T* As(const Stmt& s) {
  return s && s->kind == T::kKind ? static_cast<const T*>(s.get()) : nullptr;
}

/// [min, min + extent)
struct Range {
  Expr min, extent;
};

/// A rectangular part of a buffer: one range per dimension.
struct Region {
  Buffer buffer;
  std::vector<Range> ranges;
  /// The whole buffer.
  static Region Full(const Buffer& b);
};

/// kThreadBinding: not a loop; binds `var` to the thread index in [0, extent) (GPU targets).
enum class ForKind : uint8_t { kSerial, kParallel, kPipelined, kUnrolled, kVectorized, kThreadBinding };
const char* ForKindName(ForKind k);

/// for var in [min, min + extent). Annotations carry e.g. num_stages for pipelined loops.
struct For final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kFor;
  const VarRef var;
  const Expr min, extent;
  const ForKind for_kind;
  const Stmt body;
  const std::map<std::string, Expr> annotations;
  static Stmt Make(VarRef var, Expr min, Expr extent, ForKind kind, Stmt body,
                   std::map<std::string, Expr> annotations = {}, Span span = {});
  For(VarRef v, Expr mn, Expr ex, ForKind k, Stmt b, std::map<std::string, Expr> an, Span s)
      : StmtNode(kKind, std::move(s)), var(std::move(v)), min(std::move(mn)),
        extent(std::move(ex)), for_kind(k), body(std::move(b)), annotations(std::move(an)) {}
};

/// while (cond) body
struct While final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kWhile;
  const Expr cond;
  const Stmt body;
  static Stmt Make(Expr cond, Stmt body, Span span = {});
  While(Expr c, Stmt b, Span s) : StmtNode(kKind, std::move(s)), cond(std::move(c)), body(std::move(b)) {}
};

/// if (cond) then_case else else_case; else_case may be null.
struct IfThenElse final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kIfThenElse;
  const Expr cond;
  const Stmt then_case, else_case;
  static Stmt Make(Expr cond, Stmt then_case, Stmt else_case = nullptr, Span span = {});
  IfThenElse(Expr c, Stmt t, Stmt e, Span s)
      : StmtNode(kKind, std::move(s)), cond(std::move(c)), then_case(std::move(t)),
        else_case(std::move(e)) {}
};

/// Statements in order; also the scope of the declarations it contains.
struct Seq final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kSeq;
  const std::vector<Stmt> stmts;
  /// Flattens nested Seqs of no declarations; a single statement is returned as is.
  static Stmt Make(std::vector<Stmt> stmts, Span span = {});
  Seq(std::vector<Stmt> v, Span s) : StmtNode(kKind, std::move(s)), stmts(std::move(v)) {}
};

/// Declares an immutable scalar `var = value`, in scope until the end of the enclosing Seq.
struct LetStmt final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kLetStmt;
  const VarRef var;
  const Expr value;
  static Stmt Make(VarRef var, Expr value, Span span = {});
  LetStmt(VarRef v, Expr x, Span s) : StmtNode(kKind, std::move(s)), var(std::move(v)), value(std::move(x)) {}
};

/// buffer[indices] = value
struct BufferStore final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kBufferStore;
  const Buffer buffer;
  const std::vector<Expr> indices;
  const Expr value;
  static Stmt Make(Buffer buffer, std::vector<Expr> indices, Expr value, Span span = {});
  BufferStore(Buffer b, std::vector<Expr> i, Expr v, Span s)
      : StmtNode(kKind, std::move(s)), buffer(std::move(b)), indices(std::move(i)), value(std::move(v)) {}
};

/// Declares a non-global buffer, in scope until the end of the enclosing Seq.
/// `init` (optional) initialises every element (used by T.alloc_var(dtype, init)).
struct Allocate final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kAllocate;
  const Buffer buffer;
  const Expr init;
  static Stmt Make(Buffer buffer, Expr init = nullptr, Span span = {});
  Allocate(Buffer b, Expr i, Span s) : StmtNode(kKind, std::move(s)), buffer(std::move(b)), init(std::move(i)) {}
};

/// Evaluates an expression for its side effects.
struct Evaluate final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kEvaluate;
  const Expr value;
  static Stmt Make(Expr value, Span span = {});
  Evaluate(Expr v, Span s) : StmtNode(kKind, std::move(s)), value(std::move(v)) {}
};

/// A key/value annotation on the enclosing kernel or function (e.g. "threadblock_swizzle").
struct AttrStmt final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kAttrStmt;
  const std::string key;
  const std::vector<Expr> values;
  static Stmt Make(std::string key, std::vector<Expr> values, Span span = {});
  AttrStmt(std::string k, std::vector<Expr> v, Span s)
      : StmtNode(kKind, std::move(s)), key(std::move(k)), values(std::move(v)) {}
};

/// Leaves the innermost serial or while loop.
struct Break final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kBreak;
  static Stmt Make(Span span = {});
  explicit Break(Span s) : StmtNode(kKind, std::move(s)) {}
};

/// Skips to the next iteration of the innermost serial or while loop.
struct Continue final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kContinue;
  static Stmt Make(Span span = {});
  explicit Continue(Span s) : StmtNode(kKind, std::move(s)) {}
};

/// A grid of blocks; each block runs `body` with `threads` threads.
/// block_vars[i] ranges over [0, grid[i]); thread extents are 1 to 3 values.
struct KernelLaunch final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kKernelLaunch;
  const std::vector<Expr> grid;
  const std::vector<VarRef> block_vars;
  const std::vector<int64_t> threads;
  const Stmt body;
  static Stmt Make(std::vector<Expr> grid, std::vector<VarRef> block_vars,
                   std::vector<int64_t> threads, Stmt body, Span span = {});
  KernelLaunch(std::vector<Expr> g, std::vector<VarRef> bv, std::vector<int64_t> t, Stmt b, Span s)
      : StmtNode(kKind, std::move(s)), grid(std::move(g)), block_vars(std::move(bv)),
        threads(std::move(t)), body(std::move(b)) {}
};

// ---------------------------------------------------------------------------------------
// Tile operations: first-class nodes over regions, lowered per target.

/// dst = src (elementwise, with a cast when dtypes differ). Both regions have the same
/// number of elements per non-unit dimension. Parts of either region outside its
/// buffer's shape are clipped: out-of-range reads give zero, out-of-range writes are skipped.
struct CopyOp final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kCopyOp;
  const Region src, dst;
  /// T.copy(..., disable_tma=True): the copy is done by the threads, never by TMA (a TMA
  /// load in a warp-specialized loop or before it, a TMA store).
  const bool disable_tma;
  static Stmt Make(Region src, Region dst, Span span = {}, bool disable_tma = false);
  CopyOp(Region a, Region b, Span s, bool no_tma)
      : StmtNode(kKind, std::move(s)), src(std::move(a)), dst(std::move(b)), disable_tma(no_tma) {}
};

/// Warp partitioning policy for T.gemm (used by GPU targets).
enum class GemmPolicy : uint8_t { kSquare = 0, kFullRow = 1, kFullCol = 2 };

/// C += op(A) @ op(B) over 2-D regions; C is cleared first when clear_accum is true.
struct GemmOp final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kGemmOp;
  const Region a, b, c;
  const bool trans_a, trans_b;
  const GemmPolicy policy;
  const Expr clear_accum;  ///< bool expression
  /// A or B was declared T.tfloat32 (stored as float32): every element of A and B is
  /// rounded to TF32 (10-bit mantissa, round to nearest, ties away from zero: cvt.rna)
  /// before the products, which are summed in float32. A, B and C are float32.
  const bool tf32;
  /// T.wgmma_gemm: it must lower to Hopper's wgmma (an error where it cannot), whose
  /// instructions are issued and committed without a wait; the accumulator is final only
  /// after a later T.wait_wgmma (the wait_wgmma intrinsic). On the CPU an ordinary GEMM.
  const bool async_wgmma;
  static Stmt Make(Region a, Region b, Region c, bool trans_a, bool trans_b, GemmPolicy policy,
                   Expr clear_accum, Span span = {}, bool tf32 = false, bool async_wgmma = false);
  GemmOp(Region a_, Region b_, Region c_, bool ta, bool tb, GemmPolicy p, Expr clr, Span s, bool t32, bool aw)
      : StmtNode(kKind, std::move(s)), a(std::move(a_)), b(std::move(b_)), c(std::move(c_)),
        trans_a(ta), trans_b(tb), policy(p), clear_accum(std::move(clr)), tf32(t32), async_wgmma(aw) {}
};

/// Every element of `dst` = value (cast to the buffer's dtype).
struct FillOp final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kFillOp;
  const Region dst;
  const Expr value;
  static Stmt Make(Region dst, Expr value, Span span = {});
  FillOp(Region d, Expr v, Span s) : StmtNode(kKind, std::move(s)), dst(std::move(d)), value(std::move(v)) {}
};

/// k*Nan: max / min / absmax that propagate NaN (T.reduce_max(..., nan_propagate=True)):
/// a NaN anywhere in the reduced elements (or in dst, with clear=False) gives NaN.
enum class ReduceKind : uint8_t { kSum, kAbsSum, kMax, kMin, kAbsMax, kMaxNan, kMinNan, kAbsMaxNan };
/// "sum", "max", ...; the NaN-propagating kinds print as their plain name.
const char* ReduceKindName(ReduceKind k);
bool PropagatesNan(ReduceKind k);
/// The kind with NaN propagation removed (kMaxNan -> kMax); others unchanged.
ReduceKind WithoutNan(ReduceKind k);

/// dst = reduce(src, dim); dst has src's shape without `dim` (or with it as 1).
/// With clear=false the reduction folds into dst's existing values.
struct ReduceOp final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kReduceOp;
  const Region src, dst;
  const ReduceKind reduce_kind;
  const int dim;
  const bool clear;
  static Stmt Make(Region src, Region dst, ReduceKind kind, int dim, bool clear, Span span = {});
  ReduceOp(Region a, Region b, ReduceKind k, int d, bool c, Span s)
      : StmtNode(kKind, std::move(s)), src(std::move(a)), dst(std::move(b)), reduce_kind(k),
        dim(d), clear(c) {}
};

enum class AtomicKind : uint8_t { kAdd, kMax, kMin };
const char* AtomicKindName(AtomicKind k);

/// dst op= src elementwise and atomically. Either `src` (a region, same extents as dst)
/// or `value` (a scalar) is given.
struct AtomicOp final : StmtNode {
  static constexpr NodeKind kKind = NodeKind::kAtomicOp;
  const AtomicKind atomic_kind;
  const Region dst;
  const Region src;  ///< src.buffer is null when `value` is used
  const Expr value;
  static Stmt Make(AtomicKind kind, Region dst, Region src, Expr value, Span span = {});
  AtomicOp(AtomicKind k, Region d, Region sr, Expr v, Span s)
      : StmtNode(kKind, std::move(s)), atomic_kind(k), dst(std::move(d)), src(std::move(sr)),
        value(std::move(v)) {}
};

// ---------------------------------------------------------------------------------------

/// A kernel parameter: a global buffer, or a scalar variable.
struct Param {
  Buffer buffer;  ///< set for tensor parameters
  VarRef var;     ///< set for scalar parameters
  std::string name() const { return buffer ? buffer->name : var->name; }
};

/// A function: parameters and a body holding one KernelLaunch.
struct PrimFuncNode {
  const std::string name;
  const std::vector<Param> params;
  const Stmt body;
  const Span span;
  static std::shared_ptr<const PrimFuncNode> Make(std::string name, std::vector<Param> params,
                                                  Stmt body, Span span = {});
  PrimFuncNode(std::string n, std::vector<Param> p, Stmt b, Span s)
      : name(std::move(n)), params(std::move(p)), body(std::move(b)), span(std::move(s)) {}
};
using PrimFunc = std::shared_ptr<const PrimFuncNode>;

}  // namespace tl::ir
