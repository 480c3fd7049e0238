// SPDX-License-Identifier: Apache-2.0
/// \file mbarriers in the CPU's lockstep emulation (explicit_barriers.h says what the front
/// end leaves in the IR; templates/tl/cpu/mbarrier.h holds the counters).
///
/// The emulation runs the statements in program order, each for every thread that reaches
/// it. An mbarrier is a counter of the arrivals its phase still needs, a count of pending
/// transaction bytes and a phase bit. Each thread's arrival counts, so a phase completes
/// exactly when the hardware's would, and a wait on a phase already completed in program
/// order passes. A wait on a phase not yet completed could only be released by a statement
/// later in program order (another warpgroup's arrival, say), which lockstep cannot run
/// first: the call fails with the wait's line instead of hanging or going on silently.
/// TMA loads (T.tma_copy) copy at once, so the bytes they expect complete with them and
/// their marker is dropped (emulate_threads.cc).
#include "emulate_threads.h"
#include "tl/ir/intrinsics.h"

namespace tl::transform::cpu {

bool ThreadEmulator::IsWarpgroupScope(const Stmt& then_case) { return WsMarker(then_case) != nullptr; }

/// Each barrier of the tile gets its arrive count, once per block (not per thread).
void ThreadEmulator::EmitBarrierInit(const AttrStmt* attr, std::vector<Stmt>* out) const {
  const auto* first = As<BufferLoad>(attr->values[0]);
  TL_ICHECK(first) << "tl.barrier_init names its tile by an element";
  for (size_t i = 1; i < attr->values.size(); ++i) {
    Expr addr = Call::Make(DType::Handle(), "address_of",
                           {BufferLoad::Make(first->buffer, {MakeInt(static_cast<int64_t>(i - 1))})});
    out->push_back(Evaluate::Make(Call::Make(DType::Void(), "mbarrier_init", {addr, attr->values[i]}), attr->span));
  }
}

/// An arrival, expected transaction or wait: once for each thread that reaches it, in
/// thread order. A wait carries its line, which a wait that cannot pass reports.
void ThreadEmulator::EmitMbarrierOp(const Call* call, const Stmt& s, const Expr& mask,
                                    std::vector<Stmt>* out) const {
  Expr e = s.get() ? As<Evaluate>(s)->value : nullptr;
  if (IsIntrinsic(call, TL_INTRINSIC_NAME("mbarrier_wait_parity"))) {
    std::vector<Expr> args = call->args;
    args.push_back(MakeInt(s->span.line));
    e = Call::Make(call->dtype, call->op, args);
  }
  out->push_back(ThreadLoop(At(Evaluate::Make(e, s->span)), mask, s->span));
}

}  // namespace tl::transform::cpu
