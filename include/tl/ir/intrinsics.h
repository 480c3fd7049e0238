// SPDX-License-Identifier: Apache-2.0
/// \file Declared intrinsics: each ir::Call name the compiler knows, with what it does to
/// memory and threads (intrinsics.def). Passes and code generators ask for effects
/// (`HasEffect(call, kBarrier)`) instead of comparing names; a call that is not declared
/// (T.call_extern) has no declared effect.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tl/ir/expr.h"

namespace tl::ir {

enum IntrinsicEffect : uint32_t {
  kNone = 0,
  kAddress = 1u << 0,           ///< address_of: the address of its element argument
  kThreadIndex = 1u << 1,       ///< the thread's index (T.get_thread_binding)
  kRoleTest = 1u << 2,          ///< true in the producer of a warp-specialized kernel
  kTlFunction = 1u << 3,        ///< printed tl::<name>(args) by both code generators
  kAtomicUpdate = 1u << 4,      ///< an update that happens once: narrowed to one thread outside T.Parallel
  kWritesArg0 = 1u << 5,        ///< writes the element addressed by argument 0 (an address_of)
  kReadsArg0 = 1u << 6,         ///< ... and reads it first
  kAsyncWritesArg0 = 1u << 7,   ///< writes it later (cp.async: after a wait, then a barrier)
  kBlockLevel = 1u << 8,        ///< all threads of the block take part: not inside thread-dependent code
  kBarrier = 1u << 9,           ///< orders the memory accesses of the threads it joins
  kPinsArg0 = 1u << 10,         ///< its buffer must keep its own shared bytes (an mbarrier)
  kGemm = 1u << 11,             ///< a tile GEMM: arguments 0 and 1 address A and B in shared memory
  kRegisterA = 1u << 12,        ///< ... but A comes from registers (only B is in shared memory)
  kWgmmaPanels = 1u << 13,      ///< reads its shared operands in the wgmma panel layout
  kWarpCollective = 1u << 14,   ///< every lane of the warp takes part (or of the block, with kBarrier)
  kVote = 1u << 15,             ///< a vote over the lanes' operands (T.any_sync, T.syncthreads_count, ...)
  kPerThread = 1u << 16,        ///< each thread that reaches it does it once (mbarrier arrivals and waits)
  kSm100aOnly = 1u << 17,       ///< on CUDA, only for sm_100a and newer "a" targets (upstream's rule)
  kWgmmaWait = 1u << 18,        ///< T.wait_wgmma: where the in-flight accumulators of T.wgmma_gemm are written
  kWgmmaInFlight = 1u << 19,    ///< returns with its wgmmas in flight: they read A and B until a later wait
  kPanelOperands = 1u << 20,    ///< its shared operands are in wgmma's panel layout (TMA writes it; ldmatrix reads it too)
  kFence = 1u << 21,            ///< orders this thread's memory accesses before it against those after (not pure)
  kCudaOnly = 1u << 22,         ///< the CPU target refuses it at the user's line (check-target-features)
  kProgramGroupCopy = 1u << 23, ///< T.ptx_cp_async: writes argument 0's element later, in the program's own cp.async groups
  kProgramGroupWait = 1u << 24, ///< T.ptx_wait_group: where the program's own cp.async copies land
  kProgramGroupCommit = 1u << 25,  ///< T.ptx_commit_group: closes a group of the program's own cp.async copies
  kRandomDraw = 1u << 26,       ///< a random draw (a Philox round or more): code generators weigh it as much work
};

struct IntrinsicInfo {
  const char* name;
  uint32_t effects;
};

/// The declared intrinsic `name`, or null.
const IntrinsicInfo* LookupIntrinsic(const std::string& name);

/// Whether the intrinsic `name` declares every bit of `effects`.
bool HasEffect(const std::string& name, uint32_t effects);
inline bool HasEffect(const Call* call, uint32_t effects) { return call && HasEffect(call->op, effects); }
/// Whether `call` is a declared intrinsic that only computes a value (math, the thread index,
/// an address): evaluating it again or earlier changes nothing.
bool IsPureCall(const Call* call);

/// The declared intrinsics' names (intrinsics.def), for TL_INTRINSIC_NAME's compile-time check.
inline constexpr std::string_view kIntrinsicNames[] = {
#define TL_INTRINSIC(Name, Effects) #Name,
#include "tl/ir/intrinsics.def"
};
constexpr bool IsDeclaredIntrinsic(std::string_view name) {
  for (std::string_view n : kIntrinsicNames) {
    if (n == name) return true;
  }
  return false;
}
/// A pass that needs one intrinsic in particular (not an effect: the CPU emulation of
/// shfl_down, a wait for all cp.async groups) names it with TL_INTRINSIC_NAME("shfl_down"):
/// a name intrinsics.def does not declare fails to compile, where a string compared by hand
/// would silently never match.
#define TL_INTRINSIC_NAME(name)                                                               \
  ([] {                                                                                        \
    static_assert(::tl::ir::IsDeclaredIntrinsic(name), "not an intrinsic of intrinsics.def: " name); \
    return std::string_view(name);                                                             \
  }())
/// Whether `call` is the intrinsic `name` (TL_INTRINSIC_NAME).
inline bool IsIntrinsic(const Call* call, std::string_view name) { return call && call->op == name; }

/// T.call_extern: a call of a function the compiler does not know, its op this prefix and
/// the function's name. It is assumed to read and write every tile whose address it gets.
inline const std::string kExternCallPrefix = "call_extern:";
inline bool IsExternCall(const Call* call) { return call && call->op.rfind(kExternCallPrefix, 0) == 0; }
/// The function name of an extern call.
inline std::string ExternCallee(const Call* call) { return call->op.substr(kExternCallPrefix.size()); }

}  // namespace tl::ir
