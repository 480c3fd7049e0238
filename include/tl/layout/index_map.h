// SPDX-License-Identifier: Apache-2.0
/// \file Layout algebra on index maps: a function from a tile's logical indices (one
/// variable per input dimension, each in [0, extent)) to a list of physical indices. This is
/// what a user's `T.Layout(shape, fn)` and `T.Fragment(...)` denote in the language; these
/// functions answer the questions TileLang programs and tests ask of them (output extents,
/// the row-major linear offset, equality) and build the derived maps (repeat, expand).
///
/// The compiler itself does not lower through these maps: it chooses tile layouts on its own
/// (layout/shared.h, layout/fragment.h). Invalid requests throw std::invalid_argument (a
/// ValueError in Python), naming the argument.
#pragma once

#include <cstdint>
#include <vector>

#include "tl/ir/expr.h"

namespace tl::layout {

/// The variable of input dimension `d` (named i<d>), one per dimension for the whole process,
/// as upstream's layouts share placeholders: two maps built apart name the same variables,
/// so their expressions compare directly.
const ir::VarRef& InputVar(size_t d);
/// The replica number of a replicated fragment (named rep), likewise shared.
const ir::VarRef& ReplicaVar();

struct IndexMap {
  std::vector<ir::VarRef> vars;   ///< one per input dimension
  std::vector<int64_t> extents;   ///< the input shape: vars[d] in [0, extents[d])
  std::vector<ir::Expr> outputs;  ///< the physical indices, in terms of vars
};

/// Each output's extent: one more than its largest value over the input domain. Throws when
/// an output is unbounded there or takes negative values.
std::vector<int64_t> OutputExtents(const IndexMap& m);

/// The row-major linear offset of the outputs in an array of the output extents, simplified.
ir::Expr LinearizedIndex(const IndexMap& m);

/// The outputs at the given input indices (one per input dimension).
std::vector<ir::Expr> Apply(const IndexMap& m, const std::vector<ir::Expr>& indices);

/// `m` tiled `factor` times along input dimension `dim` (negative counts from the end): the
/// extent of `dim` grows by `factor`, and a new leading output says which copy an index is in:
/// (..., i, ...) -> [i // extent] + m(..., i % extent, ...).
IndexMap Repeat(const IndexMap& m, int dim, int64_t factor);

/// `m` lifted over new leading input dimensions, forwarded unchanged as leading outputs:
/// (l..., i...) -> [l..., m(i...)].
IndexMap Expand(const IndexMap& m, const std::vector<int64_t>& leading);

/// Whether two maps have the same input shape and give the same outputs at every input:
/// proved symbolically where the simplifier can, otherwise checked at every point of
/// domains of at most `max_points` points (false beyond).
bool Equal(const IndexMap& a, const IndexMap& b, int64_t max_points = int64_t{1} << 18);

}  // namespace tl::layout
