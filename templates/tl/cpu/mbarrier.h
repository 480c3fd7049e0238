// SPDX-License-Identifier: Apache-2.0
/// \file mbarriers for the CPU target's lockstep emulation of a block's threads
/// (src/transform/cpu/emulate_mbarriers.cc). The emulation runs statements in program
/// order, so a barrier is plain counters in its 64 bits:
///   bits  0..19  arrivals the current phase still needs
///   bits 20..39  arrivals per phase (the init count)
///   bits 40..62  transaction bytes the current phase still expects
///   bit  63      the current phase's parity
/// A phase completes when it needs no more arrivals and no more bytes. A wait on a phase
/// that has not completed can never be released in program order: it records its line,
/// the kernel returns kMbarrierStatus | line, and the caller raises an error naming it.
/// Inside warpgroup roles that run at the same time (roles.h) every operation holds the
/// block's lock, and a wait sleeps until another role completes its phase.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "roles.h"

namespace tl::cpu {

/// The status a kernel returns (ORed with the line) after a wait that could not pass.
inline constexpr int32_t kMbarrierStatus = 0x7B000000;

/// The line of the first wait that could not pass in this call (0: none).
inline std::atomic<int32_t>& mbarrier_failed_line() {
  static std::atomic<int32_t> line{0};
  return line;
}

inline constexpr uint64_t kMbarArrivals = (1ull << 20) - 1;
inline constexpr uint64_t kMbarTxMask = (1ull << 23) - 1;

inline void mbarrier_init(uint64_t* bar, uint32_t count) { *bar = (count & kMbarArrivals) | (uint64_t(count) << 20); }

/// Completes the phase if it needs nothing more: flips the parity, rearms the arrivals.
inline void mbarrier_complete_if_done(uint64_t* bar) {
  uint64_t v = *bar;
  uint64_t count = (v >> 20) & kMbarArrivals;
  if ((v & kMbarArrivals) == 0 && ((v >> 40) & kMbarTxMask) == 0) *bar = ((v ^ (1ull << 63)) & (1ull << 63)) | count | (count << 20);
}

/// Runs `update` on the barrier under the roles' lock when roles run (waking their waiters).
template <typename F>
inline void mbarrier_update(F update) {
  RoleSync* roles = current_roles();
  if (!roles) return update();
  std::lock_guard<std::mutex> lock(roles->m);
  update();
  roles->cv.notify_all();
}

inline void mbarrier_arrive(uint64_t* bar) {
  mbarrier_update([&] {
    if (*bar & kMbarArrivals) *bar -= 1;
    mbarrier_complete_if_done(bar);
  });
}

/// T.cp_async_barrier_noinc: the CPU's copies (T.ptx_cp_async) have landed already, so the
/// arrival happens now.
inline void mbarrier_cp_async_arrive(uint64_t* bar) { mbarrier_arrive(bar); }

inline void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes) {
  mbarrier_update([&] {
    uint64_t tx = (((*bar >> 40) & kMbarTxMask) + bytes) & kMbarTxMask;
    *bar = (*bar & ~(kMbarTxMask << 40)) | (tx << 40);
  });
}

inline void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  mbarrier_expect_tx(bar, bytes);
  mbarrier_arrive(bar);
}

/// Passes when the phase of parity `parity` has completed, i.e. the current phase has the
/// other parity (a fresh barrier counts the phase of parity 1 as completed).
inline void mbarrier_wait_parity(uint64_t* bar, uint32_t parity, int32_t line) {
  auto done = [&] { return (*bar >> 63) != (parity & 1u); };
  if (RoleSync* roles = current_roles()) {
    std::unique_lock<std::mutex> lock(roles->m);
    while (!done() && !roles->stuck) {
      roles->waits.emplace_back(bar, parity);
      if (roles->AllWaitingForever()) {
        roles->stuck = true;  // no running role can complete a phase any of them waits for
        roles->cv.notify_all();
      } else {
        roles->cv.wait(lock);
      }
      for (size_t i = 0; i < roles->waits.size(); ++i) {
        if (roles->waits[i].first == bar && roles->waits[i].second == parity) {
          roles->waits.erase(roles->waits.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
    }
    if (done()) return;
  } else if (done()) {
    return;
  }
  int32_t none = 0;
  mbarrier_failed_line().compare_exchange_strong(none, line);
}

/// Named barrier `id` of `count` threads between roles that run at the same time (the
/// emulation emits these only inside roles, so `roles` is set): armed at first use, then
/// `arrivals` threads arrive, one after another; under the roles' lock. Returns the parity of
/// the phase they arrived at.
inline uint32_t named_barrier_arrivals(RoleSync* roles, int32_t id, int32_t count, int32_t arrivals) {
  uint64_t* bar = &roles->named[id & 15];
  if (!roles->named_armed[id & 15]) {
    mbarrier_init(bar, static_cast<uint32_t>(count));
    roles->named_armed[id & 15] = true;
  }
  const uint32_t parity = static_cast<uint32_t>(*bar >> 63);
  for (int32_t k = 0; k < arrivals; ++k) {
    if (*bar & kMbarArrivals) *bar -= 1;
    mbarrier_complete_if_done(bar);
  }
  return parity;
}

/// T.named_barrier_arrive: a role's `arrivals` threads arrive and go on.
inline void cpu_named_barrier_arrive(int32_t id, int32_t count, int32_t arrivals) {
  RoleSync* roles = current_roles();
  if (!roles) return;  // (not inside roles: the emulation does not emit this)
  mbarrier_update([&] { named_barrier_arrivals(roles, id, count, arrivals); });
}

/// T.sync_threads(id, count) in one role, met by another role's threads: arrive, then wait
/// for the phase arrived at; a wait no role can release records its line.
inline void cpu_named_barrier_sync(int32_t id, int32_t count, int32_t arrivals, int32_t line) {
  RoleSync* roles = current_roles();
  if (!roles) {  // (not inside roles: the emulation does not emit this)
    int32_t none = 0;
    mbarrier_failed_line().compare_exchange_strong(none, line);
    return;
  }
  uint32_t parity = 0;
  mbarrier_update([&] { parity = named_barrier_arrivals(roles, id, count, arrivals); });
  mbarrier_wait_parity(&roles->named[id & 15], parity, line);
}

}  // namespace tl::cpu

namespace tl {

/// T.ptx_cp_async: a copy of `bytes` bytes, done at once.
inline void ptx_cp_async(void* dst, const void* src, int32_t bytes) {
  std::memcpy(dst, src, static_cast<size_t>(bytes));
}
/// With a predicate: zeros instead when it is false (the source is not read).
inline void ptx_cp_async(void* dst, const void* src, int32_t bytes, bool pred) {
  if (pred) {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
  } else {
    std::memset(dst, 0, static_cast<size_t>(bytes));
  }
}

}  // namespace tl
