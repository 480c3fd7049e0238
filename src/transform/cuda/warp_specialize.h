// SPDX-License-Identifier: Apache-2.0
/// \file Internal to cuda-warp-specialize: the state one kernel's specialization builds
/// up, shared by the files that make the pass (the scheme itself is described in
/// warp_specialize.cc, which also registers the pass):
///
///   warp_specialize_plan.cc      whether the pipelined loop fits, and the remark's reason
///                                when it does not; which statements each role runs
///   warp_specialize_guards.cc    copies under `if guard:` (block-sparse GEMMs) the
///                                producer can still load
///   warp_specialize_layout.cc    the specialized kernel body: staged tiles, mbarrier
///                                groups, indices and initialization, register split, remark
///   warp_specialize_producer.cc  the producer branch: the TMA-issuing loop
///   warp_specialize_consumer.cc  the consumer branch: waits, consumption, releases
///   warp_specialize_multicast.cc clusters of two blocks sharing a tile by TMA multicast
///   warp_specialize_tiles.cc     the pipelined loop inside a persistent kernel's tile loop
///   warp_specialize_persistent.cc  a launch made persistent (tl.auto_persistent)
///
/// One WarpSpecializer handles one kernel launch; its members are filled in that order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pass_helpers.h"
#include "tma_im2col.h"
#include "tl/ir/functor.h"
#include "tl/ir/stmt.h"
#include "tl/transform/pass.h"

namespace tl::transform::cuda {

/// Threads of the producer: one warpgroup (setmaxnreg acts per warpgroup).
constexpr int64_t kProducerThreads = 128;
/// Registers per producer thread after setmaxnreg.dec: it only issues TMA.
constexpr int64_t kProducerRegisters = 24;
/// The register file of one SM, shared by the block (one block per SM at these sizes).
constexpr int64_t kRegisterFile = 65536;

/// The most registers each consumer thread may ask for with setmaxnreg.inc. The block
/// starts with the launch bound's share per thread (the file over all threads, in the
/// allocation unit of 8 per thread); setmaxnreg.inc only draws on what setmaxnreg.dec
/// released, so the consumers grow by the producer's surplus and no more: asking beyond it
/// blocks the consumers forever (a hang on the GPU, seen with 4 consumer warpgroups at 120).
inline int64_t MostConsumerRegisters(int64_t consumer_threads) {
  int64_t at_launch = std::min<int64_t>(255, kRegisterFile / (consumer_threads + kProducerThreads)) / 8 * 8;
  int64_t released = (at_launch - kProducerRegisters) * kProducerThreads;
  return std::min<int64_t>(256, (at_launch + released / consumer_threads) / 8 * 8);
}

/// `op` as a persistent launch of `sms` blocks walking its blocks in a tile loop, in panels
/// of `panel` grid columns (0: the plain order), or null with *why set
/// (warp_specialize_persistent.cc).
ir::Stmt PersistentLaunch(const ir::KernelLaunch* op, int64_t sms, int64_t panel, std::string* why);

/// Counts the pipelined loops of a statement and whether it breaks or continues.
struct PipelinedLoopCounter : ir::IRVisitor {
  int pipelined = 0;
  bool jumps = false;
  void Visit_(const ir::For* op) override {
    pipelined += op->for_kind == ir::ForKind::kPipelined;
    ir::IRVisitor::Visit_(op);
  }
  void Visit_(const ir::Break*) override { jumps = true; }
  void Visit_(const ir::Continue*) override { jumps = true; }
};

class WarpSpecializer {
 public:
  WarpSpecializer(const ir::PrimFunc& f, PassContext& ctx)
      : f_(f),
        ctx_(ctx),
        split_groups_(ConfigTrue(ctx, "tl.ws_barrier_groups")),
        single_thread_producer_(ConfigTrue(ctx, "tl.ws_single_thread_producer")) {}

  /// The kernel's new thread-binding body, or null with `why_not_` set.
  ir::Stmt Run(const ir::KernelLaunch* launch, const ir::For* binding);

  const std::string& why_not() const { return why_not_; }
  const ir::For* loop() const { return loop_; }
  /// Whether the consumers run a plain GEMM main loop (GemmMainLoop): a lone wgmma GEMM.
  bool gemm_main_loop() const { return gemm_main_loop_; }

  ir::VarRef tx_;
  Span binding_span_;

 private:
  /// The statements around the pipelined loop, by role (AssignRoles).
  struct Roles {
    std::vector<ir::Stmt> common;           ///< declarations both roles share
    std::vector<ir::Stmt> consumer_before;  ///< what the consumers run before the loop
    std::vector<ir::Stmt> consumer_after;   ///< ... and after it
    /// In a tile loop (tile_), consumer_before and consumer_after run in every tile; these
    /// run before and after the tile loop itself.
    std::vector<ir::Stmt> consumer_pre, consumer_post;
  };
  /// A persistent kernel's tile loop around the pipelined loop (warp_specialize_tiles.cc):
  /// `for t in ...: [lets] [if guard:] ... T.Pipelined ...`, run by both roles, so that the
  /// producer loads the next tile's stages while the consumers finish the last one.
  struct TileLoop {
    const ir::For* outer = nullptr;  ///< null: the pipelined loop is at the top level
    size_t at = 0;                   ///< the tile loop's index among the kernel's statements
    std::vector<ir::Stmt> head;      ///< lets before the guard
    ir::Expr guard;                  ///< null: every tile runs
    std::vector<ir::Stmt> lets;      ///< lets of the tile's body both roles compute
  };
  /// Copies (and im2col nests) that share one full/empty mbarrier pair per stage.
  struct Group {
    size_t first, last;  ///< consumer statements that first and last use the group's tiles
    std::vector<const ir::CopyOp*> copies;
    std::vector<size_t> im2cols;  ///< indices into im2cols_
  };

  // warp_specialize_plan.cc: whether the loop fits, and what runs where.
  /// tl.ws_extra_stages (warp_specialize_plan.cc).
  int64_t ExtraStages() const;
  ir::Stmt Fail(const std::string& why) {
    why_not_ = why;
    return nullptr;
  }
  std::string TmaUnfit(const ir::CopyOp* c, bool* panelled);
  bool CheckProducers();
  std::string MmaSyncOnly(const ir::KernelLaunch* launch);
  void TakeIm2colNests();
  bool AssignRoles(const std::vector<ir::Stmt>& stmts, size_t at, Roles* roles);
  bool ProducerReadsAny(const std::unordered_set<const ir::Var*>& vars) const;
  bool Common(const ir::Stmt& s, const std::unordered_set<const ir::BufferNode*>& written);
  std::vector<ir::Stmt> TakePrologueLoads(const std::vector<ir::Stmt>& before,
                                          const std::unordered_set<const ir::Var*>& lets);

  // warp_specialize_tiles.cc: the pipelined loop inside a persistent kernel's tile loop.
  std::string FindTileLoop(const std::vector<ir::Stmt>& stmts, std::vector<ir::Stmt>* inner, size_t* at);
  bool AssignTileRoles(const std::vector<ir::Stmt>& stmts, const std::vector<ir::Stmt>& tile, size_t at, Roles* roles);
  ir::Stmt InTileLoop(const std::vector<ir::Stmt>& before, const ir::Stmt& loop, const std::vector<ir::Stmt>& after,
                      bool fresh_vars) const;
  ir::Expr Count(const ir::VarRef& k) const;
  static ir::Buffer TileStepCounter();
  ir::Stmt InFlightTail(const ir::Buffer& bars, int64_t depth);

  // warp_specialize_guards.cc: copies hoisted out of `if guard:`.
  const ir::For* HoistGuardedCopies(const ir::For* loop, const ir::Stmt& kernel_body);
  ir::Expr GroupGuard(const std::vector<const ir::CopyOp*>& copies, bool has_im2col) const;
  ir::Expr SkippedStepGuard() const;
  ir::Stmt CountedSteps(const ir::VarRef& k, const ir::Expr& guard, const std::vector<ir::Stmt>& body,
                        const ir::Buffer& step) const;
  static ir::Buffer StepCounter();

  // warp_specialize_layout.cc: the kernel body, staged tiles and mbarrier bookkeeping.
  ir::Stmt Build(const Roles& roles);
  ir::Stmt InitBarriers(const ir::Buffer& bars);
  std::string SpecializedRemark(int64_t bytes, int64_t consumer_regs) const;
  int64_t ConsumerRegisters() const;
  ir::Stmt StageAllocation(const ir::Stmt& s);
  void FormGroups();
  ir::Expr Stage(const ir::VarRef& k);
  ir::Expr Round(const ir::VarRef& k);
  ir::Expr Full(const ir::Buffer& bars, size_t g, const ir::Expr& stage);
  ir::Expr Empty(const ir::Buffer& bars, size_t g, const ir::Expr& stage);
  ir::Expr PrologueBar(const ir::Buffer& bars);
  std::string PrologueNames() const;

  // warp_specialize_multicast.cc: clusters sharing tiles
  void DecideMulticast(const ir::KernelLaunch* launch);
  int64_t ClusterBlocks() const;
  std::vector<ir::Stmt> ClusterStart() const;

  // warp_specialize_producer.cc
  ir::Stmt Producer(const ir::Buffer& bars, int64_t* bytes);
  ir::Expr AtIteration(const ir::Expr& e, const ir::VarRef& k) const;
  void PrefetchDescriptor(const ir::Stmt& issue, std::vector<ir::Stmt>* prefetch) const;
  ir::Stmt OneLane(const ir::Stmt& s) const;

  // warp_specialize_overlap.cc: the attention loop with P V overlapping the next softmax
  struct AttentionSteps {
    size_t qk_index = 0;          ///< consumers_ index of QK^T
    size_t pv_index = 0;          ///< ... and of P V
    std::vector<size_t> softmax;  ///< the statements between them using neither O nor writing P, in order
    std::vector<size_t> casts;    ///< ... writing P (not using O), in order
    std::vector<size_t> rescale;  ///< ... using O (the rescale), in order
    const ir::Call* qk = nullptr;
    const ir::Call* pv = nullptr;
    const ir::BufferNode *s = nullptr, *p = nullptr, *o = nullptr;  ///< scores, probabilities, output
    /// Per barrier group: when its stage is awaited and released
    enum class Use {
      kQk,    ///< used up to QK^T (K): awaited before, released once QK^T(k) is done
      kPv,    ///< used by P V only (V): awaited before P V(k) is issued, released once it is done
      kBoth,  ///< from QK^T to P V: awaited before QK^T(k), released once P V(k) is done
    };
    std::vector<Use> group_use;
    /// The statement before QK^T that sets every score (T.clear, a mask) when QK^T can
    /// overwrite S instead (scale-d 0; FindScoreInit); the mask, unless all zero, is then
    /// added after QK^T, while P V runs. Past consumers_ when none.
    size_t score_init = static_cast<size_t>(-1);
    ir::Expr score_mask;  ///< its value per register (null: zero), with score_var its register index
    ir::VarRef score_var;
  };
  bool SoftmaxOverlapOn() const {
    return !tile_.outer && ConfigOn(ctx_, "tl.ws_softmax_overlap", /*default_on=*/true);
  }
  std::string MatchAttentionSteps(AttentionSteps* at);
  struct OverlapRegisterCounts {
    int64_t s, o, packed;  ///< per consumer thread: S's and O's accumulators, P packed for P V
    int64_t total() const { return s + o + packed; }
  };
  static OverlapRegisterCounts OverlapRegisters(const AttentionSteps& at);
  void FindScoreInit(AttentionSteps* at);
  // warp_specialize_mask.cc: where the added mask can change a score
  ir::Expr MaskNeeded(const ir::Expr& value, const ir::Var* reg, int64_t regs) const;
  ir::Expr ComparisonMayFail(ir::BinOp op, const ir::Binary* cmp, const ir::Var* reg, int64_t regs) const;
  /// Registers a consumer thread keeps for the softmax's row vectors, addresses and loop
  /// state besides O, S and the packed P (OverlapRegisters) when the overlap applies
  static constexpr int64_t kOverlapSpareRegisters = 48;
  ir::Stmt OverlappedAttentionLoop(const ir::Buffer& bars, const AttentionSteps& at);
  ir::Stmt SoftmaxPin(const AttentionSteps& at);

  // warp_specialize_consumer.cc
  ir::Stmt Consumer(const ir::Buffer& bars, const Roles& roles, int64_t consumer_regs);
  ir::Stmt ConsumerLoop(const ir::Buffer& bars);
  const ir::Call* LoneWgmma();
  // warp_specialize_gemm_order.cc: whether a plain GEMM loop keeps a k-tile's wgmmas in flight
  int64_t SharedBytesWithStages(const ir::Stmt& kernel_body, int64_t stages) const;
  void DecideGemmOrder(const ir::Stmt& kernel_body);
  ir::Stmt GemmMainLoop(const ir::Buffer& bars, const ir::Call* gemm);
  ir::Stmt Release(const ir::Expr& empty);
  int64_t EmptyArrivals() const;
  ir::Stmt WithoutProxyFence(const ir::Stmt& s);
  bool ReadThroughGenericProxy(const Group& group);

  const ir::PrimFunc& f_;
  PassContext& ctx_;
  int64_t threads_ = 0, stages_ = 0;
  const ir::For* loop_ = nullptr;
  std::vector<const ir::CopyOp*> producers_;
  std::unordered_map<const ir::CopyOp*, bool> panelled_;  ///< per TMA copy (loop and prologue): writes wgmma panels
  std::vector<const ir::CopyOp*> prologue_;  ///< copies before the loop, issued by the producer
  std::unordered_map<const ir::CopyOp*, ir::Expr> guards_;  ///< copies hoisted out of `if guard:` (HoistGuardedCopies)
  /// A hoisted guard (as the producer reads it) -> the consumers' own condition, where they differ
  std::unordered_map<const ir::ExprNode*, ir::Expr> consumer_guards_;
  ir::Stmt rewritten_loop_;                                  ///< owns loop_ when HoistGuardedCopies rewrote it
  std::vector<Im2colNest> im2cols_;  ///< T.im2col nests of the loop the producer loads
  std::vector<bool> im2col_panelled_;  ///< per nest: its tile is in wgmma panels
  std::unordered_set<const ir::BufferNode*> wgmma_operands_, gemm_operands_;  ///< (TmaUnfit's, computed once)
  bool operands_known_ = false;
  std::unordered_set<const ir::BufferNode*> produced_;
  std::unordered_map<const ir::BufferNode*, ir::Buffer> staged_;
  std::vector<ir::Stmt> consumers_;  ///< the loop body's statements other than the loads
  std::vector<Group> groups_;
  std::unordered_set<const ir::BufferNode*> written_in_loop_;  ///< by the consumer statements
  std::string why_not_;
  TileLoop tile_;
  /// While a role's branch is built in a tile loop: its count of the earlier tiles' steps
  /// (stages and phases run on across tiles), else null.
  ir::Buffer tile_steps_;
  std::vector<ir::Stmt> descriptor_prefetches_;  ///< one per TMA descriptor (Producer), issued by InitBarriers
  bool split_groups_;
  bool gemm_main_loop_ = false;  ///< ConsumerLoop built GemmMainLoop
  bool gemm_in_flight_ = false;  ///< DecideGemmOrder: GemmMainLoop keeps one k-tile's wgmmas in flight
  int64_t gemm_in_flight_depth_ = 1;  ///< ... how many k-tiles (tl.ws_gemm_in_flight_depth)
  std::string gemm_order_remark_;  ///< ... and what it says about it ("" for nothing)
  bool single_thread_producer_;  ///< tl.ws_single_thread_producer: the producer loop in one thread (the old way)
  int cluster_axis_ = -1;  ///< DecideMulticast: the grid axis of the clusters, -1 for none
  std::unordered_set<const ir::CopyOp*> multicast_;  ///< ... the copies each block loads a slice of for all
  std::string multicast_remark_;
};

}  // namespace tl::transform::cuda
