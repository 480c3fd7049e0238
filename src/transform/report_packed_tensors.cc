// SPDX-License-Identifier: Apache-2.0
/// \file "report-packed-tensors" (both targets): a global tensor of a 4-bit type (int4,
/// uint4, float4_e2m1fn) holds two values per byte along its last dimension
/// (ir::PackedInMemory). Each such parameter is checked here (its rows must start on a byte:
/// an even last dimension) and named in a remark saying how its elements are accessed:
/// loads read the byte and pick the nibble; every store is an atomic read-modify-write of
/// the byte's two halves (templates/tl/subbyte.h, store_packed), so a store never clobbers
/// the neighbouring value another thread (or, on the CPU, another block) writes. Tiles of
/// these types hold one value per byte, so copies between them and a packed tensor are
/// element loops (no vector or TMA copies), and the compiler says so here once.
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {

using namespace ir;  // NOLINT: implementation file

ir::PrimFunc ReportPackedTensors(const ir::PrimFunc& f, PassContext& ctx) {
  for (const Param& p : f->params) {
    if (!p.buffer || !PackedInMemory(*p.buffer)) continue;
    const Buffer& b = p.buffer;
    int64_t last = 0;
    if (b->shape.empty()) {
      TL_USER_ERROR(f->span) << "parameter " << b->name << ": a " << b->dtype.str()
                             << " tensor needs at least one dimension (two values per byte along the last)";
    }
    if (AsConstInt(b->shape.back(), &last) && last % 2) {
      TL_USER_ERROR(f->span) << "parameter " << b->name << ": the last dimension of a " << b->dtype.str()
                             << " tensor must be even (two values per byte), got " << last;
    }
    ctx.remarks.push_back(b->name + " (" + b->dtype.str() +
                          "): two values per byte along the last dimension; loads pick their nibble, each store "
                          "is an atomic read-modify-write of its byte (the neighbouring value is kept); copies "
                          "to or from it are element loops");
  }
  return f;
}

TL_REGISTER_PASS("report-packed-tensors", ReportPackedTensors);

}  // namespace tl::transform
