// SPDX-License-Identifier: Apache-2.0
/// \file One warp's mma_fragment (TensorCoreIntrinEmitter.mma) in the CPU's lockstep
/// emulation of thread-level code (emulate_threads.h).
///
/// On the GPU the 32 lanes of a warp pool their fragments: each lane's C elements are
/// dot products of a row of A and a column of B that other lanes hold. Here every thread's
/// fragments are already stored per thread ([threads, ...] arrays), so each thread computes
/// its own C elements by reading the lanes that hold its row and column, in the element
/// order of templates/tl/cuda/mma.h (per lane, g = lane / 4, q = lane % 4; `per` elements
/// per 32-bit register):
///   A (16 x K): register r holds row g + 8 * (r % 2), columns per * q + (K / 2) * (r / 2) + e
///   B (K x 8):  register r holds column g, rows per * q + (K / 2) * r + e
///   C (16 x 8): element i is row g + 8 * (i / 2), column 2 * q + i % 2
/// Each thread reads only A and B and writes only its own C, so one loop over the threads
/// computes them all.
#include "emulate_threads.h"

namespace tl::transform::cpu {
using target::kWarpSize;

namespace {

/// The element a fragment operand starts at: address_of(buf[i]) of a 1-D per-thread array.
struct Operand {
  Buffer original;
  Expr offset;
};

Operand FragmentOperand(const Expr& arg, const Span& span, const char* what) {
  const auto* addr = As<Call>(arg);
  const auto* load = addr && IsIntrinsic(addr, TL_INTRINSIC_NAME("address_of")) && addr->args.size() == 1
                         ? As<BufferLoad>(addr->args[0])
                         : nullptr;
  if (!load || load->indices.size() != 1) {
    TL_USER_ERROR(span) << "a warp MMA's " << what
                        << " must be an element of a one-dimensional T.alloc_local array";
  }
  return {load->buffer, load->indices[0]};
}

}  // namespace

void ThreadEmulator::EmitWarpMma(const Call* call, const Stmt& s, const Expr& mask, std::vector<Stmt>* out) {
  const Span& span = s->span;
  if (threads_ % kWarpSize) Unsupported(span, "a warp MMA in a block that is not whole warps");
  const Operand c = FragmentOperand(call->args[0], span, "accumulator");
  const Operand a = FragmentOperand(call->args[1], span, "A operand");
  const Operand b = FragmentOperand(call->args[2], span, "B operand");
  auto per_thread = [&](const Operand& o) {
    auto it = per_thread_.find(o.original.get());
    if (it == per_thread_.end()) Unsupported(span, "a warp MMA on storage that is not per thread (T.alloc_local)");
    return it->second;
  };
  const Buffer C = per_thread(c), A = per_thread(a), B = per_thread(b);
  const DType in = a.original->dtype;
  if (b.original->dtype != in || (in.bits != 8 && in.bits != 16 && in.bits != 32)) {
    TL_USER_ERROR(span) << "a warp MMA takes A and B of one 8-, 16- or 32-bit type, got " << in.str() << " and "
                        << b.original->dtype.str();
  }
  const int per = 32 / in.bits;  // elements per 32-bit register
  const int k_extent = 8 * per;  // m16n8k8 (tf32), k16 (16-bit), k32 (8-bit)
  const int half_k = k_extent / 2;
  const DType acc_type = C->dtype.IsInt() ? DType::Int(32) : DType::Float(32);

  Expr tt = t_;
  Expr lane = FloorMod(tt, MakeInt(kWarpSize));
  Expr base = tt - lane;
  Expr g = FloorDiv(lane, MakeInt(4)), q = FloorMod(lane, MakeInt(4));
  Expr a_off = At(a.offset), b_off = At(b.offset), c_off = At(c.offset);

  std::vector<Stmt> body;
  for (int i = 0; i < 4; ++i) {
    const int row_half = i / 2;
    Expr col = MakeInt(2) * q + MakeInt(i % 2);
    Buffer acc = BufferNode::Make("mma_acc", acc_type, {MakeInt(1)}, Scope::kVar);
    Expr acc_value = BufferLoad::Make(acc, {MakeInt(0)});
    VarRef k = Var::Make("mma_k");
    Expr kk = k;
    Expr k_in_half = FloorMod(kk, MakeInt(half_k)), k_half = FloorDiv(kk, MakeInt(half_k));
    Expr within = FloorMod(kk, MakeInt(per));
    Expr a_lane = base + g * MakeInt(4) + FloorDiv(k_in_half, MakeInt(per));
    Expr a_elem = (MakeInt(row_half) + MakeInt(2) * k_half) * MakeInt(per) + within;
    Expr b_lane = base + col * MakeInt(4) + FloorDiv(k_in_half, MakeInt(per));
    Expr b_elem = k_half * MakeInt(per) + within;
    Expr product = Cast::Make(acc_type, BufferLoad::Make(A, {a_lane, a_off + a_elem})) *
                   Cast::Make(acc_type, BufferLoad::Make(B, {b_lane, b_off + b_elem}));
    Expr c_index = c_off + MakeInt(i);
    body.push_back(Seq::Make(
        {Allocate::Make(acc, Cast::Make(acc_type, BufferLoad::Make(C, {tt, c_index})), span),
         For::Make(k, MakeInt(0), MakeInt(k_extent), ForKind::kSerial,
                   BufferStore::Make(acc, {MakeInt(0)}, acc_value + product, span), {}, span),
         BufferStore::Make(C, {tt, c_index}, Cast::Make(C->dtype, acc_value), span)},
        span));
  }
  out->push_back(ThreadLoop(Seq::Make(body, span), mask, span));
}

}  // namespace tl::transform::cpu
