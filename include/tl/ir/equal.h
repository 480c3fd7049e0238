// SPDX-License-Identifier: Apache-2.0
/// \file Structural equality: same shape of tree, same constants, and variables/buffers
/// that correspond one-to-one where they are defined (loops, lets, allocations, params).
/// Spans are ignored.
#pragma once

#include "tl/ir/stmt.h"

namespace tl::ir {

/// Free variables (not defined inside) must be the same object on both sides.
bool StructuralEqual(const Expr& a, const Expr& b);
bool StructuralEqual(const Stmt& a, const Stmt& b);
/// Parameters are mapped positionally.
bool StructuralEqual(const PrimFunc& a, const PrimFunc& b);

}  // namespace tl::ir
