// SPDX-License-Identifier: Apache-2.0
/// \file Readable text form of the IR, used by errors, IR dumps and tests.
///
/// The form looks like the Python users wrote: `for i in T.Parallel(128):`,
/// `T.copy(A[by * 128:by * 128 + 128, 0:32], A_shared)`. Variables with the same name
/// are told apart by a numeric suffix (display only; identity is what counts).
#pragma once

#include <ostream>
#include <string>

#include "tl/ir/stmt.h"

namespace tl::ir {

std::string ToString(const Expr& e);
std::string ToString(const Stmt& s);
std::string ToString(const PrimFunc& f);
std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);

}  // namespace tl::ir
