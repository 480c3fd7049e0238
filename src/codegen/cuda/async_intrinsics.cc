// SPDX-License-Identifier: Apache-2.0
/// \file The CUDA text of Hopper's asynchronous-pipeline intrinsics (see async_intrinsics.h).
#include "async_intrinsics.h"
#include "tl/target/warp.h"

#include <unordered_set>

namespace tl::codegen::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// `tl::<name>(a0, a1, ...)`.
std::string Plain(const std::string& name, const Call* op, const std::function<std::string(const Expr&)>& print) {
  std::string s = "tl::" + name + "(";
  for (size_t k = 0; k < op->args.size(); ++k) s += (k ? ", " : "") + print(op->args[k]);
  return s + ")";
}

/// The template argument of a TMA load's L2 policy (tl.tma_cache_hint's marker: 0 none, 1
/// evict-normal, 2 evict-first, 3 evict-last), or "".
std::string L2HintArg(int64_t tma_cache_hint) {
  static const char* const kHints[] = {"", "<tl::L2Hint::kEvictNormal>", "<tl::L2Hint::kEvictFirst>",
                                       "<tl::L2Hint::kEvictLast>"};
  return tma_cache_hint > 0 && tma_cache_hint < 4 ? kHints[tma_cache_hint] : "";
}

}  // namespace

std::string PrintAsyncPipelineCall(const Call* op, const std::function<std::string(const Expr&)>& print,
                                   int64_t tma_cache_hint) {
  const std::string& n = op->op;
  if (n == "fence_proxy_async") return "tl::fence_proxy_async_shared()";
  // programmatic dependent launch, under the CUDA runtime's names (async_pipeline.h)
  if (n == "pdl_trigger") return "tl::cudaTriggerProgrammaticLaunchCompletion()";
  if (n == "pdl_sync") return "tl::cudaGridDependencySynchronize()";
  // TMA: loads (desc, smem, bar, c0, ...), im2col loads (desc, smem, bar, c, w, h, n, off_w,
  // off_h), stores (desc, smem, c0, ...); the rank is the number of coordinates
  if (n == "tma_load") {
    return Plain("tma_load_" + std::to_string(op->args.size() - 3) + "d" + L2HintArg(tma_cache_hint), op, print);
  }
  if (n == "tma_load_multicast") {  // (desc, smem, bar, mask, c0, ...)
    std::string s = "tl::tma_load_multicast" + L2HintArg(tma_cache_hint) + "(";
    for (size_t k = 0; k < op->args.size(); ++k) {
      s += (k ? ", " : "") + std::string(k == 3 ? "(uint16_t)(" : "") + print(op->args[k]) + (k == 3 ? ")" : "");
    }
    return s + ")";
  }
  // clusters (cluster.h)
  if (n == "block_rank_in_cluster") return "(int)tl::block_rank_in_cluster()";
  if (n == "cluster_sync" || n == "cluster_arrive" || n == "cluster_arrive_relaxed" || n == "cluster_wait") {
    return "tl::" + n + "()";
  }
  if (n == "mbarrier_arrive_remote") {
    return "tl::mbarrier_arrive_remote(" + print(op->args[0]) + ", (uint32_t)(" + print(op->args[1]) + "))";
  }
  if (n == "mbarrier_arrive_cluster_warp") {
    return "tl::mbarrier_arrive_cluster_warp<" + print(op->args[1]) + ">(" + print(op->args[0]) + ")";
  }
  if (n == "tma_load_im2col") {
    std::string s = "tl::tma_load_im2col_4d(";
    for (size_t k = 0; k < op->args.size(); ++k) {
      s += (k ? ", " : "") + std::string(k >= 7 ? "(uint16_t)(" : "") + print(op->args[k]) + (k >= 7 ? ")" : "");
    }
    return s + ")";
  }
  if (n == "tma_store") return Plain("tma_store_" + std::to_string(op->args.size() - 2) + "d", op, print);
  if (n == "tma_store_arrive") return "tl::tma_store_arrive()";
  if (n == "tma_store_wait") {  // (groups, read)
    int64_t read = 1;
    AsConstInt(op->args[1], &read);
    return "tl::tma_store_wait<" + print(op->args[0]) + ", " + (read ? "true" : "false") + ">()";
  }
  // the roles of a warp-specialized kernel: the producer warpgroup is launched above the
  // consumers' `threads` (ws_is_producer_warp only inside the producer's branch)
  if (n == "ws_is_producer") return "(threadIdx.x >= " + print(op->args[0]) + ")";
  if (n == "ws_is_producer_leader") return "(threadIdx.x == " + print(op->args[0]) + ")";
  if (n == "ws_is_producer_warp") {
    return "(threadIdx.x < " + print(op->args[0]) + " + " + std::to_string(target::kWarpSize) + ")";
  }
  if (n == "elect_one") return "tl::elect_one_sync()";
  // (upstream's name for it: code that looks for it in the source finds it)
  if (n == "named_barrier_arrive") return "tl::__named_barrier_arrive(" + print(op->args[0]) + ", " + print(op->args[1]) + ")";
  if (n == "warpgroup_reg_alloc" || n == "warpgroup_reg_dealloc") return "tl::" + n + "<" + print(op->args[0]) + ">()";
  static const std::unordered_set<std::string> kPlain = {
      "mbarrier_init",     "mbarrier_init_fence",       "mbarrier_arrive",        "mbarrier_arrive_expect_tx",
      "mbarrier_expect_tx", "mbarrier_wait_parity",     "mbarrier_test_wait_parity", "tma_prefetch_descriptor",
      "named_barrier_sync", "named_barrier_sync_all"};
  if (kPlain.count(n)) return Plain(n, op, print);
  return "";
}

}  // namespace tl::codegen::cuda
