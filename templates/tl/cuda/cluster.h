// SPDX-License-Identifier: Apache-2.0
/// \file Thread-block clusters (sm_90): the block's rank in its cluster, the cluster-wide
/// barrier, arrivals on another block's mbarrier, and TMA loads multicast to several blocks
/// of the cluster.
///
/// A kernel launched in clusters (`__cluster_dims__`, from T.ClusterKernel or the automatic
/// multicast of warp-specialized loops) may address the shared memory of the other blocks
/// of its cluster: `mapa` turns a shared::cta address into the same offset in block `rank`.
/// A multicast TMA load writes its box at the same offset in every block of its mask, and
/// completes the box's bytes on the mbarrier at the same offset in each of them.
///
/// Every function traps on a device target without clusters, as async_pipeline.h does.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

namespace tl {

/// This block's rank in its cluster (0 when launched without clusters).
TL_DEVICE uint32_t block_rank_in_cluster() {
#if TL_ASYNC_PIPELINE_AVAILABLE
  uint32_t rank = 0;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
#else
  return 0;
#endif
}

/// This thread's arrival on the cluster barrier; its earlier writes are released to the
/// threads that wait (every thread of the warp executes it: .aligned).
TL_DEVICE void cluster_arrive() {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// The same without ordering memory (T.cluster_arrive_relaxed).
TL_DEVICE void cluster_arrive_relaxed() {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// Waits until every (non-exited) thread of the cluster has arrived; acquires their writes.
TL_DEVICE void cluster_wait() {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// Every thread of every block of the cluster meets here.
TL_DEVICE void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

/// `addr` (a shared::cta address of this block) as the shared::cluster address of the same
/// offset in block `rank` of the cluster.
TL_DEVICE uint32_t map_shared_rank(const void* addr, uint32_t rank) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  uint32_t remote = 0;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(addr)), "r"(rank));
  return remote;
#else
  return smem_addr(addr);
#endif
}

/// One arrival, released to the cluster, on the mbarrier at `bar`'s offset in block `rank`.
TL_DEVICE void mbarrier_arrive_remote(uint64_t* bar, uint32_t rank) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(map_shared_rank(bar, rank))
               : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// One arrival on the mbarrier at `bar`'s offset in block `rank`, with mbarrier.arrive's
/// default semantics (release, CTA scope), as CUTLASS's cluster pipelines arrive: enough to
/// tell a producer that a stage's wgmmas, which completed before, are done reading it.
TL_DEVICE void mbarrier_arrive_remote_cta(uint64_t* bar, uint32_t rank) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(map_shared_rank(bar, rank)) : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// One arrival per warp on `bar` in each of the first `Blocks` blocks of the cluster: lane r
/// arrives on block r's barrier once the whole warp has come here (each barrier counts one
/// arrival per warp per block). The warp's threads are converged first, so every lane's
/// reads of the stage the barrier guards are done before any lane arrives. (Arrivals with
/// .release.cluster compile to MEMBAR.ALL.GPU before each one: 40-150% slower GEMMs on the
/// H100, thirty-ninth session.)
template <int Blocks>
TL_DEVICE void mbarrier_arrive_cluster_warp(uint64_t* bar) {
  static_assert(Blocks >= 1 && Blocks <= 16, "a cluster has 1 to 16 blocks");
#if TL_ASYNC_PIPELINE_AVAILABLE
  __syncwarp();
  const uint32_t lane = threadIdx.x & 31;
  if (lane < Blocks) mbarrier_arrive_remote_cta(bar, lane);
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// A TMA load of the box at (c0 innermost, ...) of `desc`'s tensor, written at `smem`'s
/// offset in every block of `mask` (bit r: block rank r) and completing its bytes on the
/// mbarrier at `bar`'s offset in each of them.
template <L2Hint Hint = L2Hint::kNone, typename... Coords>
TL_DEVICE void tma_load_multicast(const TmaDescriptor& desc, void* smem, uint64_t* bar, uint16_t mask,
                                  Coords... coords) {
  static_assert(sizeof...(Coords) >= 1 && sizeof...(Coords) <= 5, "TMA boxes have 1 to 5 dimensions");
#if TL_ASYNC_PIPELINE_AVAILABLE
  const int32_t c[5] = {static_cast<int32_t>(coords)...};
  const uint64_t map = reinterpret_cast<uint64_t>(&desc);
  const uint32_t dst = smem_addr(smem), mb = smem_addr(bar);
  // (one asm per rank: the coordinate list is part of the instruction's text; operand 4 is
  // the L2 policy, unused without a hint, so that the coordinates are %5... in both forms)
#define TL_TMA_MC(DIMS, LIST, ...)                                                                          \
  if constexpr (Hint == L2Hint::kNone) {                                                                    \
    asm volatile("cp.async.bulk.tensor." DIMS ".shared::cluster.global.mbarrier::complete_tx::bytes"        \
                 ".multicast::cluster [%0], [%1, {" LIST "}], [%2], %3;" ::"r"(dst),                        \
                 "l"(map), "r"(mb), "h"(mask), "l"(0ull), __VA_ARGS__                                       \
                 : "memory");                                                                               \
  } else {                                                                                                  \
    asm volatile("cp.async.bulk.tensor." DIMS ".shared::cluster.global.mbarrier::complete_tx::bytes"        \
                 ".multicast::cluster.L2::cache_hint [%0], [%1, {" LIST "}], [%2], %3, %4;" ::"r"(dst),     \
                 "l"(map), "r"(mb), "h"(mask), "l"(static_cast<uint64_t>(Hint)), __VA_ARGS__                \
                 : "memory");                                                                               \
  }
  if constexpr (sizeof...(Coords) == 1) {
    TL_TMA_MC("1d", "%5", "r"(c[0]))
  } else if constexpr (sizeof...(Coords) == 2) {
    TL_TMA_MC("2d", "%5, %6", "r"(c[0]), "r"(c[1]))
  } else if constexpr (sizeof...(Coords) == 3) {
    TL_TMA_MC("3d", "%5, %6, %7", "r"(c[0]), "r"(c[1]), "r"(c[2]))
  } else if constexpr (sizeof...(Coords) == 4) {
    TL_TMA_MC("4d", "%5, %6, %7, %8", "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]))
  } else {
    TL_TMA_MC("5d", "%5, %6, %7, %8, %9", "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]))
  }
#undef TL_TMA_MC
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

}  // namespace tl
