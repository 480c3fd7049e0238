// SPDX-License-Identifier: Apache-2.0
/// \file A sum's terms, and splitting them into the terms that are constants once loops
/// unroll and the others: how tl.loop_terms_apart keeps an address's loop terms apart
/// (legalize-index-width when it widens an offset, the CUDA code generator when it prints
/// an address).
#pragma once

#include <unordered_set>
#include <utility>
#include <vector>

#include "tl/ir/expr.h"
#include "tl/ir/stmt.h"

namespace tl::arith {

/// The terms of a sum of + and -, in order, each with its sign (true: subtracted).
std::vector<std::pair<bool, ir::Expr>> SumTerms(const ir::Expr& e);

/// The sum of signed terms (SumTerms' form), a left chain in their order; 0 of `dtype` for none.
ir::Expr SumOfTerms(const std::vector<std::pair<bool, ir::Expr>>& terms, ir::DType dtype);

/// Whether `e` is + - * arithmetic of constants and `loop_vars` alone (no thread index, no
/// loaded value): a constant once the loops unroll.
bool LoopArithmetic(const ir::Expr& e, const std::unordered_set<const ir::Var*>& loop_vars);

/// A sum split in two, (others, loop terms): the loop terms are its non-constant terms
/// that are LoopArithmetic, the others the rest, each part a sum in the original order.
/// Both null unless both parts have terms.
std::pair<ir::Expr, ir::Expr> SplitLoopTerms(const ir::Expr& e, const std::unordered_set<const ir::Var*>& loop_vars);

/// SplitLoopTerms over the innermost loops only: `loops` are the enclosing loops, outermost
/// first; the split is over the longest run of innermost loops that the other terms no longer
/// mention. A loop's terms go apart only when every loop inside it has gone apart too: the
/// address the loops start from is then the same for the whole nest (one register, the steps
/// immediate offsets). Taking an outer loop's terms out of an address whose base still
/// varies with an inner loop (`&dQ[f(l)] + k * 196608`, l unrolled inside serial k) makes nvcc
/// hoist one base per inner step out of the outer loop: registers, spilled in upstream's
/// gqa backward (248 bytes against 36). A null entry in `loops` is a loop that stays rolled
/// (UnrolledLoop false): neither it nor a loop outside it goes apart, since its steps are no
/// immediate offsets (a pipelined GEMM's k loop: 6% slower with its term apart on the H200).
/// Both null when no loop goes apart.
std::pair<ir::Expr, ir::Expr> SplitInnerLoopTerms(const ir::Expr& e, const std::vector<const ir::Var*>& loops);

/// Whether nvcc unrolls `loop` whole, as far as the compiler can tell: T.unroll and
/// T.vectorized loops, and loops of at most kUnrolledTrips iterations, a constant (what
/// nvcc unrolls by itself: upstream's sparse MLA producers' T.serial(4) and T.serial(9)).
constexpr int64_t kUnrolledTrips = 16;
bool UnrolledLoop(const ir::For& loop);

}  // namespace tl::arith
