// SPDX-License-Identifier: Apache-2.0
/// \file Warp and block all-reductions (sum / max / min) for generated CUDA kernels.
///
/// Warp level: tl::warp_reduce_sum<W>(v) combines v over aligned groups of W
/// consecutive lanes (W = 1, 2, 4, 8, 16 or 32; default 32, the whole warp)
/// with a butterfly of __shfl_xor_sync, so every lane of a group gets the
/// result. Only the W lanes of a group need to take part together, unless
/// kWholeWarp (the second template argument) promises that every lane of the warp
/// calls it, converged, as in the compiler's tile reductions: the shuffles then name
/// the whole warp, and ptxas drops the convergence checks (a branch per shuffle) that
/// a lane-dependent group mask costs.
///
/// Block level: tl::block_allreduce_sum(v, workspace, num_threads) combines v
/// over the first num_threads (<= block size) threads of the block (linear
/// thread index, x fastest) and returns the result to every thread. Any count
/// works, also non-powers of two and counts that leave the last warp partly
/// empty. Every thread of the block must call it (it uses __syncthreads).
/// workspace is a __shared__ array of at least kBlockReduceWorkspace elements
/// of T; back-to-back calls may reuse it without extra barriers.
///
/// Combination order is fixed, so every participating thread gets the
/// bit-identical result. half / bfloat16 values are combined in float and rounded once per warp
/// (block partials are stored as T). max / min are tl::max / tl::min.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

namespace tl {

/// Elements of T a block_allreduce_* workspace needs (32 warp partials + result).
constexpr int kBlockReduceWorkspace = 33;

namespace detail {

/// Lane index within the warp (%laneid).
TL_DEVICE int lane_id() {
  int l;
  asm("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}

/// Linear thread index within the block (x fastest), the order warps are formed in.
TL_DEVICE int linear_thread_id() {
  return static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

/// The type a reduction combines in: 16-bit floats in float, narrow integers
/// in int (what __shfl_*_sync can move), everything else as is.
template <typename T>
struct reduce_type {
  using type = T;
};
template <>
struct reduce_type<half> {
  using type = float;
};
template <>
struct reduce_type<bfloat16> {
  using type = float;
};
template <typename F>
struct reduce_type<float8<F>> {
  using type = float;
};
template <>
struct reduce_type<bool> {
  using type = int;
};
template <>
struct reduce_type<char> {
  using type = int;
};
template <>
struct reduce_type<signed char> {
  using type = int;
};
template <>
struct reduce_type<unsigned char> {
  using type = unsigned int;
};
template <>
struct reduce_type<short> {
  using type = int;
};
template <>
struct reduce_type<unsigned short> {
  using type = unsigned int;
};

}  // namespace detail

// The combining steps of the reductions (upstream's names: tl::SumOp, tl::MaxOp, ...),
// the Op of tl::AllReduce. kCommutative: op(a, b) is bit-identical to op(b, a). IEEE addition is;
// the compare-selects of max / min are not for +0/-0 and NaN, so butterflies
// order their operands by lane for those to give every lane the same bits.
struct SumOp {
  static constexpr bool kCommutative = true;
  template <typename T>
  TL_DEVICE T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  static constexpr bool kCommutative = false;
  template <typename T>
  TL_DEVICE T operator()(T a, T b) const {
    return tl::max(a, b);
  }
};
struct MinOp {
  static constexpr bool kCommutative = false;
  template <typename T>
  TL_DEVICE T operator()(T a, T b) const {
    return tl::min(a, b);
  }
};
/// max / min that propagate NaN (T.reduce_max(..., nan_propagate=True)): NaN when either
/// operand is (a + b is then NaN); R is float or double here (reduce_type of the value).
struct MaxOpNan {
  static constexpr bool kCommutative = false;
  template <typename T>
  TL_DEVICE T operator()(T a, T b) const {
    return (a != a || b != b) ? a + b : tl::max(a, b);
  }
};
struct MinOpNan {
  static constexpr bool kCommutative = false;
  template <typename T>
  TL_DEVICE T operator()(T a, T b) const {
    return (a != a || b != b) ? a + b : tl::min(a, b);
  }
};
struct BitAndOp {
  static constexpr bool kCommutative = true;
  template <typename T>
  TL_DEVICE T operator()(T a, T b) const {
    return a & b;
  }
};
struct BitOrOp {
  static constexpr bool kCommutative = true;
  template <typename T>
  TL_DEVICE T operator()(T a, T b) const {
    return a | b;
  }
};

namespace detail {

/// Butterfly over aligned groups of W lanes (mask: the lanes taking part).
template <int W, typename R, typename Op>
TL_DEVICE R warp_butterfly(R v, unsigned mask, Op op) {
  const int lane = lane_id();
#pragma unroll
  for (int off = W / 2; off > 0; off /= 2) {
    const R o = __shfl_xor_sync(mask, v, off);
    if constexpr (Op::kCommutative) {
      v = op(v, o);
    } else {
      // Both partners compute op(lower lane, upper lane); selecting the operands (rather
      // than branching between two calls) keeps this one min/max and two selects.
      const bool upper = (lane & off) != 0;
      v = op(upper ? o : v, upper ? v : o);
    }
  }
  return v;
}

/// Combines v over lanes 0..n-1 of the calling lanes (mask), result in lane 0
/// only. Lanes >= n take part in the shuffles but contribute nothing, so no
/// identity value is needed and n may be anything from 1 to 32.
template <typename R, typename Op>
TL_DEVICE R warp_reduce_first_n(R v, int n, unsigned mask, Op op) {
  const int lane = lane_id();
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    const R o = __shfl_down_sync(mask, v, off);
    // Lane i then holds lanes [i, i + 2*off) ∩ [0, n): lane i + off holds only
    // lanes >= i + off, all outside the range when i + off >= n.
    if (lane + off < n) v = op(v, o);
  }
  return v;
}

template <int W, bool kWholeWarp, typename T, typename Op>
TL_DEVICE T warp_reduce(T v, Op op) {
  static_assert(W == 1 || W == 2 || W == 4 || W == 8 || W == 16 || W == 32,
                "warp_reduce: the group width W must be a power of two <= 32");
  using R = typename reduce_type<T>::type;
  unsigned mask = 0xffffffffu;
  if constexpr (W < 32 && !kWholeWarp) mask = ((1u << W) - 1u) << (lane_id() & ~(W - 1));
  return static_cast<T>(warp_butterfly<W>(static_cast<R>(v), mask, op));
}

template <typename T, typename Op>
TL_DEVICE T block_allreduce(T v, T* workspace, int num_threads, Op op) {
  using R = typename reduce_type<T>::type;
  const int tid = linear_thread_id();
  const int block_size = static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  // Lanes that exist in this warp: only those may be named in a shuffle mask.
  const int warp_lanes = block_size - warp * 32 < 32 ? block_size - warp * 32 : 32;
  const unsigned mask = warp_lanes == 32 ? 0xffffffffu : (1u << warp_lanes) - 1u;
  int contributors = num_threads - warp * 32;
  contributors = contributors < 0 ? 0 : (contributors > 32 ? 32 : contributors);

  R r = warp_reduce_first_n(static_cast<R>(v), contributors, mask, op);
  if (block_size <= 32) return static_cast<T>(__shfl_sync(mask, r, 0));  // One warp: no shared memory.

  const int num_warps = (num_threads + 31) / 32;
  if (lane == 0 && contributors > 0) workspace[warp] = static_cast<T>(r);
  __syncthreads();
  // Warp 0 (always full here) combines the partials; the result goes to a slot
  // the partials never use, so the next call's partial writes cannot race
  // with this call's reads of the result.
  if (warp == 0) {
    R p = lane < num_warps ? static_cast<R>(workspace[lane]) : R();
    p = warp_reduce_first_n(p, num_warps, 0xffffffffu, op);
    if (lane == 0) workspace[32] = static_cast<T>(p);
  }
  __syncthreads();
  return workspace[32];
}

}  // namespace detail

/// Sum of v over aligned groups of W lanes (default: the whole warp); every lane gets it.
template <int W = 32, bool kWholeWarp = false, typename T>
TL_DEVICE T warp_reduce_sum(T v) {
  return detail::warp_reduce<W, kWholeWarp>(v, SumOp{});
}
/// Maximum of v over aligned groups of W lanes (default: the whole warp).
template <int W = 32, bool kWholeWarp = false, typename T>
TL_DEVICE T warp_reduce_max(T v) {
  return detail::warp_reduce<W, kWholeWarp>(v, MaxOp{});
}
/// Minimum of v over aligned groups of W lanes (default: the whole warp).
template <int W = 32, bool kWholeWarp = false, typename T>
TL_DEVICE T warp_reduce_min(T v) {
  return detail::warp_reduce<W, kWholeWarp>(v, MinOp{});
}
/// warp_reduce_max / warp_reduce_min, NaN when any lane's value is NaN.
template <int W = 32, bool kWholeWarp = false, typename T>
TL_DEVICE T warp_reduce_max_nan(T v) {
  return detail::warp_reduce<W, kWholeWarp>(v, MaxOpNan{});
}
template <int W = 32, bool kWholeWarp = false, typename T>
TL_DEVICE T warp_reduce_min_nan(T v) {
  return detail::warp_reduce<W, kWholeWarp>(v, MinOpNan{});
}

/// The reduction the compiler's tile reductions print (T.reduce_*, reducers): v combined
/// with Op over aligned groups of W lanes, every lane of a group getting the result
/// (tl::AllReduce<tl::SumOp, 16, true>::run(v)); kWholeWarp as for warp_reduce_sum.
template <typename Op, int W, bool kWholeWarp = false>
struct AllReduce {
  template <typename T>
  static TL_DEVICE T run(T v) {
    return detail::warp_reduce<W, kWholeWarp>(v, Op{});
  }
};

/// Shuffles over the whole warp (T.shfl_*): every lane must call. 16-bit and narrow
/// values travel as the type reductions combine in (exact for every value they hold).
template <typename T>
TL_DEVICE T shfl_xor(T v, int lane_mask, int width = 32) {
  using R = typename detail::reduce_type<T>::type;
  return static_cast<T>(__shfl_xor_sync(0xffffffffu, static_cast<R>(v), lane_mask, width));
}
template <typename T>
TL_DEVICE T shfl_down(T v, int offset, int width = 32) {
  using R = typename detail::reduce_type<T>::type;
  return static_cast<T>(__shfl_down_sync(0xffffffffu, static_cast<R>(v), offset, width));
}
template <typename T>
TL_DEVICE T shfl_up(T v, int offset, int width = 32) {
  using R = typename detail::reduce_type<T>::type;
  return static_cast<T>(__shfl_up_sync(0xffffffffu, static_cast<R>(v), offset, width));
}
template <typename T>
TL_DEVICE T shfl_sync(T v, int src_lane, int width = 32) {
  using R = typename detail::reduce_type<T>::type;
  return static_cast<T>(__shfl_sync(0xffffffffu, static_cast<R>(v), src_lane, width));
}

/// Bitwise and of an integer v over aligned groups of W lanes (default: the whole warp).
template <int W = 32, bool kWholeWarp = false, typename T>
TL_DEVICE T warp_reduce_bitand(T v) {
  return detail::warp_reduce<W, kWholeWarp>(v, BitAndOp{});
}
/// Bitwise or of an integer v over aligned groups of W lanes (default: the whole warp).
template <int W = 32, bool kWholeWarp = false, typename T>
TL_DEVICE T warp_reduce_bitor(T v) {
  return detail::warp_reduce<W, kWholeWarp>(v, BitOrOp{});
}

/// Sum of v over threads 0..num_threads-1 of the block, returned to every
/// thread. All threads of the block must call; workspace: __shared__ T[kBlockReduceWorkspace].
template <typename T>
TL_DEVICE T block_allreduce_sum(T v, T* workspace, int num_threads) {
  return detail::block_allreduce(v, workspace, num_threads, SumOp{});
}
/// Maximum of v over threads 0..num_threads-1 of the block (see block_allreduce_sum).
template <typename T>
TL_DEVICE T block_allreduce_max(T v, T* workspace, int num_threads) {
  return detail::block_allreduce(v, workspace, num_threads, MaxOp{});
}
/// Minimum of v over threads 0..num_threads-1 of the block (see block_allreduce_sum).
template <typename T>
TL_DEVICE T block_allreduce_min(T v, T* workspace, int num_threads) {
  return detail::block_allreduce(v, workspace, num_threads, MinOp{});
}

}  // namespace tl
