// SPDX-License-Identifier: Apache-2.0
/// \file Small statement helpers of the CUDA passes: pass-config flags, intrinsic call
/// statements, and which buffers a statement names, writes or hands to wgmma.
#pragma once

#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "tl/arith/simplify.h"
#include "tl/ir/stmt.h"
#include "tl/transform/pass.h"

namespace tl::transform::cuda {

// (the pass-config switches, tl/transform/pass.h)
using transform::ConfigOn;
using transform::ConfigTrue;

/// "tl.dynamic_alignment" = "16:k,n": the JIT's promise, for the variant of a kernel it
/// compiles for calls where the dynamic sizes k and n are multiples of 16 elements (it
/// checks them at each call). Vector widths and TMA may rely on it; nothing else does.
struct AlignmentPromise {
  int64_t elems = 1;                      ///< 1: no promise
  std::unordered_set<std::string> vars;   ///< the size variables it covers, by name
  bool Covers(const ir::Var* v) const { return elems > 1 && v && vars.count(v->name) > 0; }
};
AlignmentPromise DynamicAlignment(const PassContext& ctx);
/// `e` with each dynamic size the promise covers read as that multiple (n -> n * 16), so
/// an alignment proof may count on it: a row of n elements then starts on a vector.
ir::Expr PromisedMultiples(const ir::Expr& e, const AlignmentPromise& promise, arith::Analyzer& an);
/// Byte alignment of a buffer's first element, or 0 when unknown: tensors 16 (the runtime
/// checks), a tensor made over a pointer the kernel was given its element size, shared
/// tiles and register arrays as codegen places and declares them.
int64_t BaseAlignment(const ir::Buffer& b, arith::Analyzer& an);


/// The constant ids of the named barriers the program uses itself (T.sync_threads(id, n),
/// T.named_barrier_arrive(id, n), ...): the compiler's own barriers take other ids.
std::set<int64_t> ProgramNamedBarrierIds(const ir::Stmt& body);

/// Evaluate(Call(void, name, args)).
ir::Stmt CallStmt(const std::string& name, std::vector<ir::Expr> args, const Span& span);

/// Buffers a statement names: loads, stores and tile-op regions.
std::unordered_set<const ir::BufferNode*> BuffersOf(const ir::Stmt& s);

/// Adds the buffers `s` writes (stores and tile-op destinations) to `out`.
void AddWrites(const ir::Stmt& s, std::unordered_set<const ir::BufferNode*>* out);

/// Shared tiles in wgmma's panel layout (see WgmmaOperandOffset): what wgmma reads, and what
/// TMA stores read through a swizzling descriptor.
std::unordered_set<const ir::BufferNode*> WgmmaOperands(const ir::Stmt& body);

}  // namespace tl::transform::cuda
