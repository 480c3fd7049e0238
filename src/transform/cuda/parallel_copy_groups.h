// SPDX-License-Identifier: Apache-2.0
/// \file Element copies of a T.Parallel nest done a group of consecutive elements at a time
/// (cuda-partition-parallel, cuda-vectorize-loops): `Out[q0 + i, h, d] = O_shared[i, d]`
/// over (i, d), under guards that do not use d (upstream's attention epilogues), spread over
/// the threads as groups of k elements along d, each group one thread's T.vectorized loop,
/// which cuda-vectorize-loops makes one 16-byte access. Element by element, each thread moved
/// 2 bytes per access; upstream's code moves 16.
#pragma once

#include <cstdint>
#include <vector>

#include "tl/ir/stmt.h"

namespace tl::transform::cuda {

/// The group size k for the T.Parallel nest whose innermost loop is `inner` and whose body
/// is `body`: 16 bytes of elements, when the body copies one element into a tensor from a
/// memory buffer (global or shared; one type, whole bytes, contiguous rows), both indexed last by
/// the innermost variable plus terms without it, the other indices and the guards around the
/// copy do not use it (or, over each group of k along it, the same holds of the group's lane:
/// a tile of 16 x 16 blocks `C_s[i // 16, j // 16, i % 16, j % 16]`), and the loop's extent
/// and both buffers' rows are multiples of k.
/// 0: not such a nest.
int64_t ElementCopyGroup(const ir::For* inner, const ir::Stmt& body);

/// `body` for group `g` of k elements: `for j in T.vectorized(k): body[d := g * k + j]`
/// (d the innermost variable, starting at 0).
ir::Stmt GroupedCopy(const ir::For* inner, const ir::Stmt& body, int64_t k, const ir::Expr& g);

/// An element-wise T.Parallel nest done k elements per thread at a time (ElementwiseGroup).
struct ElementwiseGroups {
  int64_t k = 0;                               ///< 0: not such a nest
  ir::Stmt body;                               ///< the nest's body, its lets inlined
  const ir::BufferStore* store = nullptr;      ///< the store under body's guards
  std::vector<const ir::BufferLoad*> windows;  ///< the loads that use d, each once
};

/// The groups of an element-wise T.Parallel nest (tl.vectorize_parallel_elementwise):
/// its body, under guards that do not use the innermost variable d or have one value over
/// each group of k along it (a ragged edge `c < N`, N a multiple of k), stores into a tensor
/// or a shared tile a value computed from loads of memory buffers (global or shared) and
/// values without d, through pure operations; the store and every load that uses d are
/// indexed as in ElementCopyGroup. k: 16 bytes of the widest element among them.
/// (`Z[r, c] = X[r, c] * 2 + Y[r, c]` over (r, c): each thread's 2-byte loads and stores,
/// where upstream's code loads and stores 16 bytes at a time.)
ElementwiseGroups ElementwiseGroup(const ir::For* inner, const ir::Stmt& body);

/// The nest's body for group `g`, through registers: each window of k elements copied into a
/// register array (a T.vectorized copy, which cuda-vectorize-loops makes one access), the
/// values computed element by element (T.unroll), and stored the same way.
ir::Stmt GroupedElementwise(const ir::For* inner, const ElementwiseGroups& groups, const ir::Expr& g);

}  // namespace tl::transform::cuda
