// SPDX-License-Identifier: Apache-2.0
/// \file Hopper's asynchronous pipeline primitives (sm_90): mbarriers, TMA tiled loads,
/// named barriers and warpgroup register reallocation. Warp-specialized kernels use them:
/// a producer warpgroup loads tiles with TMA into stages guarded by "full" mbarriers
/// (completed by the transferred byte count) and waits on "empty" mbarriers that the
/// consumer threads arrive on once they are done with a stage.
///
/// Phases: an mbarrier starts in phase 0. Waiting with parity p returns once the phase
/// with parity p has completed; on a fresh barrier, waiting with parity 1 returns at once
/// (the "previous" phase counts as complete), which is how a producer's first wait on an
/// empty stage passes.
///
/// Every function traps on a device target without the feature, as wgmma.h does.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TL_ASYNC_PIPELINE_AVAILABLE 1
#else
#define TL_ASYNC_PIPELINE_AVAILABLE 0
#endif
// mbarriers themselves (init, arrive, a parity wait by polling test_wait) exist from sm_80;
// transaction counts, try_wait and TMA are sm_90's.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TL_MBARRIER_AVAILABLE 1
#else
#define TL_MBARRIER_AVAILABLE 0
#endif

namespace tl {

/// A CUtensorMap as the driver encodes it on the host: 128 opaque bytes, passed to the
/// kernel by value as a `const __grid_constant__` parameter (TMA needs the address of the
/// parameter itself, not of a local copy).
struct alignas(128) TmaDescriptor {
  uint64_t opaque[16];
};

// ---------------------------------------------------------------------------------------
// mbarriers (64-bit, in shared memory)

/// Initializes `bar` to expect `count` arrivals per phase. One thread does it; the
/// initialization is made visible with mbarrier_init_fence() and a block barrier.
TL_DEVICE void mbarrier_init(uint64_t* bar, uint32_t count) {
#if TL_MBARRIER_AVAILABLE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// Makes earlier mbarrier initializations visible to the async proxy (TMA).
/// Below sm_90 there is no async proxy to publish to: the block barrier that follows the
/// initialization suffices.
TL_DEVICE void mbarrier_init_fence() {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

/// One arrival on `bar`.
TL_DEVICE void mbarrier_arrive(uint64_t* bar) {
#if TL_MBARRIER_AVAILABLE
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// T.cp_async_barrier_noinc: one arrival on `bar` once this thread's earlier cp.async copies
/// have landed, counted in the barrier's arrivals (.noinc: the pending count is not raised).
TL_DEVICE void mbarrier_cp_async_arrive(uint64_t* bar) {
#if TL_MBARRIER_AVAILABLE
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(bar)) : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// One arrival on `bar` that also raises the bytes the current phase waits for by
/// `bytes` (the TMA loads issued next complete them).
TL_DEVICE void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// Raises the bytes the current phase of `bar` waits for by `bytes`, without an arrival
/// (T.tma_copy: the program arrives itself).
TL_DEVICE void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// Waits until the phase of `bar` with parity `parity` has completed.
TL_DEVICE void mbarrier_wait_parity(uint64_t* bar, uint32_t parity) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  // With a suspend-time hint the waiting warp sleeps inside try_wait until the phase
  // completes (or the hint, in ns, expires) instead of re-polling at the default limit:
  // under ncu on the H200 the re-polls of a warp-specialized attention kernel cost 10x
  // upstream's branch-resolving stalls, in issue slots its consumer warps needed.
  constexpr uint32_t kSuspendNs = 10000000;
  asm volatile(
      "{\n\t.reg .pred tl_done;\n"
      "tl_wait_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 tl_done, [%0], %1, %2;\n\t"
      "@!tl_done bra tl_wait_%=;\n\t}" ::"r"(smem_addr(bar)),
      "r"(parity), "r"(kSuspendNs)
      : "memory");
#elif TL_MBARRIER_AVAILABLE
  asm volatile(
      "{\n\t.reg .pred tl_done;\n"
      "tl_wait_%=:\n\t"
      "mbarrier.test_wait.parity.shared.b64 tl_done, [%0], %1;\n\t"
      "@!tl_done bra tl_wait_%=;\n\t}" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// Whether the phase with this parity has completed; never waits (test_wait).
TL_DEVICE bool mbarrier_test_wait_parity(uint64_t* bar, uint32_t parity) {
#if TL_MBARRIER_AVAILABLE
  uint32_t done = 0;
  asm volatile(
      "{\n\t.reg .pred tl_done;\n\t"
      "mbarrier.test_wait.parity.shared::cta.b64 tl_done, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, tl_done;\n\t}"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
  return false;
#else
  return true;
#endif
}

// ---------------------------------------------------------------------------------------
/// True in one lane of the calling warp, which must be converged (elect.sync). A producer
/// warp runs its loop with all lanes and issues under this test, so the TMA coordinates it
/// computes stay warp-uniform: from one thread (`threadIdx.x == t`) ptxas cannot prove
/// that, and wraps each TMA instruction in a loop over the active lanes.
TL_DEVICE bool elect_one_sync() {
#if TL_ASYNC_PIPELINE_AVAILABLE
  uint32_t elected = 0;
  asm volatile(
      "{\n .reg .pred P;\n elect.sync _|P, 0xffffffff;\n selp.u32 %0, 1, 0, P;\n}"
      : "=r"(elected));
  return elected != 0;
#elif defined(__CUDA_ARCH__)
  return (threadIdx.x & 31) == 0;
#else
  return true;
#endif
}

// TMA (cp.async.bulk.tensor), tiled mode, completion on an mbarrier

/// Brings the tensor map into the cache ahead of its first use.
TL_DEVICE void tma_prefetch_descriptor(const TmaDescriptor& desc) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&desc)) : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// The L2 cache policy a TMA load carries (`.L2::cache_hint`): kNone issues the load
/// without one. The values are the 64-bit policy encodings CUTLASS's CacheHintSm90 passes
/// and upstream TileLang's loads carry (evict-normal on every load of its GEMMs).
enum class L2Hint : uint64_t {
  kNone = 0,
  kEvictNormal = 0x1000000000000000ull,
  kEvictFirst = 0x12F0000000000000ull,
  kEvictLast = 0x14F0000000000000ull,
};

/// Loads the box at coordinates (c0 innermost, ...) of `desc`'s tensor into shared memory
/// at `smem`; the bytes complete a transaction on `bar`. Parts of the box outside the
/// tensor are filled with zeros (and still counted). `Hint`: the L2 policy of the load.
template <L2Hint Hint = L2Hint::kNone>
TL_DEVICE void tma_load_1d(const TmaDescriptor& desc, void* smem, uint64_t* bar, int32_t c0) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  if constexpr (Hint == L2Hint::kNone) {
    asm volatile(
        "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];" ::"r"(
            smem_addr(smem)),
        "l"(reinterpret_cast<uint64_t>(&desc)), "r"(smem_addr(bar)), "r"(c0)
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
        "[%0], [%1, {%3}], [%2], %4;" ::"r"(
            smem_addr(smem)),
        "l"(reinterpret_cast<uint64_t>(&desc)), "r"(smem_addr(bar)), "r"(c0), "l"(static_cast<uint64_t>(Hint))
        : "memory");
  }
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

template <L2Hint Hint = L2Hint::kNone>
TL_DEVICE void tma_load_2d(const TmaDescriptor& desc, void* smem, uint64_t* bar, int32_t c0, int32_t c1) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  if constexpr (Hint == L2Hint::kNone) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
            smem_addr(smem)),
        "l"(reinterpret_cast<uint64_t>(&desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
        "[%0], [%1, {%3, %4}], [%2], %5;" ::"r"(
            smem_addr(smem)),
        "l"(reinterpret_cast<uint64_t>(&desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "l"(static_cast<uint64_t>(Hint))
        : "memory");
  }
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

template <L2Hint Hint = L2Hint::kNone>
TL_DEVICE void tma_load_3d(const TmaDescriptor& desc, void* smem, uint64_t* bar, int32_t c0, int32_t c1,
                           int32_t c2) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  if constexpr (Hint == L2Hint::kNone) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
        "[%2];" ::"r"(smem_addr(smem)),
        "l"(reinterpret_cast<uint64_t>(&desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
        "[%0], [%1, {%3, %4, %5}], "
        "[%2], %6;" ::"r"(smem_addr(smem)),
        "l"(reinterpret_cast<uint64_t>(&desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2),
        "l"(static_cast<uint64_t>(Hint))
        : "memory");
  }
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

template <L2Hint Hint = L2Hint::kNone>
TL_DEVICE void tma_load_4d(const TmaDescriptor& desc, void* smem, uint64_t* bar, int32_t c0, int32_t c1,
                           int32_t c2, int32_t c3) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  if constexpr (Hint == L2Hint::kNone) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
        "[%2];" ::"r"(smem_addr(smem)),
        "l"(reinterpret_cast<uint64_t>(&desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
        "[%0], [%1, {%3, %4, %5, %6}], "
        "[%2], %7;" ::"r"(smem_addr(smem)),
        "l"(reinterpret_cast<uint64_t>(&desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
        "l"(static_cast<uint64_t>(Hint))
        : "memory");
  }
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// An im2col box of a 4-D NHWC tensor (a tensor map from cuTensorMapEncodeIm2col):
/// channelsPerPixel channels from c of pixelsPerColumn consecutive output pixels, the
/// first at input pixel (w, h) of image n, each read at its filter tap (off_w, off_h);
/// pixels in the padding read zeros. One row per pixel in shared memory.
TL_DEVICE void tma_load_im2col_4d(const TmaDescriptor& desc, void* smem, uint64_t* bar, int32_t c, int32_t w,
                                  int32_t h, int32_t n, uint16_t off_w, uint16_t off_h) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%3, %4, %5, %6}], [%2], {%7, %8};" ::"r"(smem_addr(smem)),
      "l"(reinterpret_cast<uint64_t>(&desc)), "r"(smem_addr(bar)), "r"(c), "r"(w), "r"(h), "r"(n), "h"(off_w),
      "h"(off_h)
      : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

template <L2Hint Hint = L2Hint::kNone>
TL_DEVICE void tma_load_5d(const TmaDescriptor& desc, void* smem, uint64_t* bar, int32_t c0, int32_t c1,
                           int32_t c2, int32_t c3, int32_t c4) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  if constexpr (Hint == L2Hint::kNone) {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, "
        "%7}], [%2];" ::"r"(smem_addr(smem)),
        "l"(reinterpret_cast<uint64_t>(&desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
        "[%0], [%1, {%3, %4, %5, %6, "
        "%7}], [%2], %8;" ::"r"(smem_addr(smem)),
        "l"(reinterpret_cast<uint64_t>(&desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4),
        "l"(static_cast<uint64_t>(Hint))
        : "memory");
  }
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

// ---------------------------------------------------------------------------------------
// TMA stores (cp.async.bulk.tensor, shared -> global, bulk-group completion)
//
// The issuing thread stores a box of shared memory to coordinates (c0 innermost, ...) of
// `desc`'s tensor (parts outside the tensor are not written), closes its outstanding stores
// into a group with tma_store_arrive, and waits with tma_store_wait. The shared writes the
// box holds must be ordered before the store by fence_proxy_async_shared (wgmma.h) in the writing threads
// and a barrier.

TL_DEVICE void tma_store_1d(const TmaDescriptor& desc, const void* smem, int32_t c0) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(&desc)),
               "r"(smem_addr(smem)), "r"(c0)
               : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

TL_DEVICE void tma_store_2d(const TmaDescriptor& desc, const void* smem, int32_t c0, int32_t c1) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(&desc)),
               "r"(smem_addr(smem)), "r"(c0), "r"(c1)
               : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

TL_DEVICE void tma_store_3d(const TmaDescriptor& desc, const void* smem, int32_t c0, int32_t c1, int32_t c2) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(&desc)),
               "r"(smem_addr(smem)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

TL_DEVICE void tma_store_4d(const TmaDescriptor& desc, const void* smem, int32_t c0, int32_t c1, int32_t c2, int32_t c3) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(&desc)),
               "r"(smem_addr(smem)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

TL_DEVICE void tma_store_5d(const TmaDescriptor& desc, const void* smem, int32_t c0, int32_t c1, int32_t c2, int32_t c3, int32_t c4) {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(&desc)),
               "r"(smem_addr(smem)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
#elif defined(__CUDA_ARCH__)
  asm volatile("trap;");
#endif
}

/// Closes this thread's outstanding TMA stores into a bulk group.
TL_DEVICE void tma_store_arrive() {
#if TL_ASYNC_PIPELINE_AVAILABLE
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}

/// Waits until at most N of this thread's bulk groups are outstanding; with Read, only
/// until they have read their shared memory (which may then be overwritten), not until
/// their global writes are done.
template <int N = 0, bool Read = true>
TL_DEVICE void tma_store_wait() {
#if TL_ASYNC_PIPELINE_AVAILABLE
  if constexpr (Read) {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
  } else {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
  }
#endif
}

// ---------------------------------------------------------------------------------------
// Programmatic dependent launch (sm_90), under the CUDA runtime's names, which NVRTC lacks

/// Waits until the grids this one depends on have completed and their writes are visible
/// (returns at once when the kernel was not launched as a programmatic dependent).
TL_DEVICE void cudaGridDependencySynchronize() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Lets the grids that depend on this one start (each block's call counts; a block that
/// exits counts too).
TL_DEVICE void cudaTriggerProgrammaticLaunchCompletion() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// ---------------------------------------------------------------------------------------
// Named barriers and register reallocation

/// bar.sync on barrier `id` (1..15; 0 is __syncthreads') for `count` threads, a multiple
/// of 32: the consumers of a warp-specialized kernel synchronize among themselves.
TL_DEVICE void named_barrier_sync(uint32_t id, uint32_t count) {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
#endif
}

/// bar.arrive on barrier `id` for `count` threads: this thread counts itself in and goes on
/// (T.named_barrier_arrive); the threads that bar.sync on the barrier wait for the count.
/// (Upstream TileLang's name for it, which its users' tests look for in the source.)
TL_DEVICE void __named_barrier_arrive(uint32_t id, uint32_t count) {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
#endif
}

/// Hardware barrier `id` for all the block's threads (bar.sync without a count).
TL_DEVICE void named_barrier_sync_all(uint32_t id) {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.sync %0;" ::"r"(id) : "memory");
#endif
}

/// Lowers this warpgroup's register budget to N per thread (all its warps execute it).
template <int N>
TL_DEVICE void warpgroup_reg_dealloc() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
#if TL_WGMMA_AVAILABLE
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
#endif
}

/// Raises this warpgroup's register budget to N per thread (all its warps execute it).
template <int N>
TL_DEVICE void warpgroup_reg_alloc() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
#if TL_WGMMA_AVAILABLE
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
#endif
}

}  // namespace tl
