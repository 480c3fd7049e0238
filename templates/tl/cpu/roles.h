// SPDX-License-Identifier: Apache-2.0
/// \file Warpgroup roles that wait on each other's mbarriers, run at the same time
/// (src/transform/cpu/emulate_roles.cc): each role is a function run on a CPU thread of its
/// own. The block's mbarriers are then guarded by one lock (mbarrier.h): an arrival
/// completes a phase under it and wakes the waiters, a wait sleeps until its phase completes,
/// and the lock orders what the roles write into shared tiles before an arrival before what
/// another reads after its wait. A wait that no running role can release (every role still
/// running is waiting) fails: it records its line, as the lockstep emulation does, and every
/// waiter goes on so the call can return.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace tl::cpu {

struct RoleSync {
  std::mutex m;
  std::condition_variable cv;
  int active = 0;  ///< roles still running
  /// The waits of the roles sleeping now: a barrier and the parity of the phase awaited.
  std::vector<std::pair<const uint64_t*, uint32_t>> waits;
  bool stuck = false;
  /// The hardware's named barriers (T.sync_threads(id, n), T.named_barrier_arrive) between
  /// roles, as mbarriers of n arrivals (mbarrier.h's encoding), armed at their first use.
  uint64_t named[16] = {};
  bool named_armed[16] = {};
  /// Whether every running role waits on a phase that has not completed (under the lock; a
  /// woken waiter that has not run yet has its phase completed, so it does not count).
  bool AllWaitingForever() const {
    if (active == 0 || static_cast<int>(waits.size()) != active) return false;
    for (const auto& w : waits) {
      if ((*w.first >> 63) != (w.second & 1u)) return false;
    }
    return true;
  }
};

/// The roles of the block this CPU thread runs a role of (null outside roles).
inline RoleSync*& current_roles() {
  static thread_local RoleSync* sync = nullptr;
  return sync;
}

class Roles {
 public:
  void add(std::function<void()> role) { roles_.push_back(std::move(role)); }
  void run() {
    RoleSync sync;
    sync.active = static_cast<int>(roles_.size());
    std::vector<std::thread> threads;
    for (size_t i = 1; i < roles_.size(); ++i) threads.emplace_back([&, i] { RunOne(&sync, roles_[i]); });
    if (!roles_.empty()) RunOne(&sync, roles_[0]);
    for (std::thread& t : threads) t.join();
  }

 private:
  static void RunOne(RoleSync* sync, const std::function<void()>& role) {
    RoleSync* outer = current_roles();
    current_roles() = sync;
    role();
    current_roles() = outer;
    std::lock_guard<std::mutex> lock(sync->m);
    --sync->active;
    if (sync->AllWaitingForever()) sync->stuck = true;
    sync->cv.notify_all();
  }
  std::vector<std::function<void()>> roles_;
};

}  // namespace tl::cpu
