// SPDX-License-Identifier: Apache-2.0
/// \file Umbrella header of the CUDA device library: the only header that
/// generated CUDA kernels include.
///
/// Generated code is compiled by NVRTC with no include path but this folder,
/// so no header here includes a system or toolkit header. The only things
/// used from outside are NVRTC built-ins (threadIdx, __syncthreads,
/// __shfl_*_sync, atomicAdd/atomicCAS on built-in types, the CUDA math
/// functions such as expf) and inline PTX.
///
/// This file first defines what every part needs (TL_DEVICE and the
/// fixed-width integer typedefs), then includes the parts:
///   types.h    tl::half, tl::bfloat16, 16-bit pair packing
///   math.h     tl::exp ... tl::max, floordiv / floormod, infinity<T>()
///   memory.h   vector copies, cp.async, shared-address conversion
///   ldmatrix.h tl::ldmatrix_x1/x2/x4(_trans)
///   mma.h      tl::mma_m16n8k16_*, mma_m16n8k32_*, mma_m16n8k8_tf32f32
///   wgmma.h    Hopper warpgroup MMA (gemm_ss_wgmma, gemm_rs_wgmma)
///   async_pipeline.h  mbarriers, TMA loads, named barriers, setmaxnreg (sm_90)
///   reduce.h   warp and block all-reductions
///   atomic.h   tl::atomic_add / atomic_max / atomic_min
/// The parts are not meant to be included on their own.
#pragma once

#define TL_CUDA_H_INCLUDED 1

/// Qualifiers of every library function: device code, always inlined (the
/// functions are tiny and often take register arrays by reference).
#ifndef TL_DEVICE
#define TL_DEVICE __device__ __forceinline__
#endif

// Fixed-width integers in the global namespace, as <cstdint> would give them.
// Under nvcc the host compiler's predefined __INTn_TYPE__ macros name exactly
// the types its <stdint.h> uses, so a repeated typedef (legal when it names
// the same type) cannot clash with one the toolkit headers already made.
// NVRTC predefines neither those macros nor the typedefs; there the LP64 rule
// (64-bit long) picks the same types as Linux's <stdint.h>.
// Define TL_NO_INT_TYPEDEFS to skip this block entirely.
#ifndef TL_NO_INT_TYPEDEFS
#if defined(__INT8_TYPE__) && defined(__INT64_TYPE__) && defined(__UINT64_TYPE__)
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
#else
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
#if defined(__LP64__) || defined(_LP64)
typedef long int64_t;
typedef unsigned long uint64_t;
#else
typedef long long int64_t;
typedef unsigned long long uint64_t;
#endif
#endif
#endif  // TL_NO_INT_TYPEDEFS

static_assert(sizeof(int8_t) == 1 && sizeof(int16_t) == 2 && sizeof(int32_t) == 4 && sizeof(int64_t) == 8,
              "signed fixed-width typedefs have the wrong size");
static_assert(sizeof(uint8_t) == 1 && sizeof(uint16_t) == 2 && sizeof(uint32_t) == 4 && sizeof(uint64_t) == 8,
              "unsigned fixed-width typedefs have the wrong size");

// Order matters: each part uses the ones before it.
// clang-format off
#include "types.h"
#include "pair_convert.h"
#include "math.h"
#include "memory.h"
#include "ldmatrix.h"
#include "mma.h"
#include "wgmma.h"
#include "async_pipeline.h"
#include "cluster.h"
#include "reduce.h"
#include "atomic.h"
// clang-format on
