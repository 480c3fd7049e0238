// SPDX-License-Identifier: Apache-2.0
/// \file The thread binding that cuda-bind-threads puts around a kernel body, as the later
/// CUDA passes read it.
#pragma once

#include "tl/ir/stmt.h"

namespace tl::transform::cuda {

struct ThreadBinding {
  ir::VarRef tx;        ///< the flat thread index
  int64_t threads = 0;  ///< the block's thread count
};

/// The first thread binding in `body`; an internal error naming `pass` when there is none
/// (the pass ran before cuda-bind-threads).
ThreadBinding GetThreadBinding(const ir::Stmt& body, const char* pass);

}  // namespace tl::transform::cuda
