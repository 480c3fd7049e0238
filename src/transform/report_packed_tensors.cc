// SPDX-License-Identifier: Apache-2.0
/// \file "report-packed-tensors" (both targets): a global tensor of a 4-bit type (int4,
/// uint4, float4_e2m1fn) holds two values per byte along its last dimension
/// (ir::PackedInMemory). Each such parameter is checked here (its rows must start on a byte:
/// an even last dimension) and named in a remark saying how its elements are accessed:
/// loads read the byte and pick the nibble; every store is an atomic read-modify-write of
/// the byte's two halves (templates/tl/subbyte.h, store_packed), so a store never clobbers
/// the neighbouring value another thread (or, on the CPU, another block) writes. A
/// T.StridedTensor's strides count 4-bit values too (CheckPackedStrides). Tiles of
/// these types hold one value per byte, so copies between them and a packed tensor are
/// element loops (no vector or TMA copies), and the compiler says so here once.
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {

using namespace ir;  // NOLINT: implementation file

namespace {

/// A packed T.StridedTensor (upstream's rule): its strides count 4-bit values, so element
/// (i, j) is value i * s0 + j * s1 of the byte array, byte (that) / 2, nibble (that) % 2.
/// The two values of a byte are neighbours in the last dimension, whose stride is then 1;
/// every other constant stride must be even, so that each row starts on a byte. (Symbolic
/// strides are bound from the argument's byte strides times two: even by construction.)
void CheckPackedStrides(const Buffer& b, const Span& span) {
  const size_t last = b->strides.size() - 1;
  for (size_t d = 0; d < b->strides.size(); ++d) {
    int64_t s = 0;
    if (!AsConstInt(b->strides[d], &s)) continue;
    if (d == last && s != 1) {
      TL_USER_ERROR(span) << "parameter " << b->name << ": the last stride of a " << b->dtype.str()
                          << " T.StridedTensor must be 1 (a byte holds two neighbouring values), got " << s;
    }
    if (d != last && s % 2) {
      TL_USER_ERROR(span) << "parameter " << b->name << ": stride " << s << " of dimension " << d << " of a "
                          << b->dtype.str() << " T.StridedTensor is odd, so its rows would start inside a byte; "
                          << "strides count 4-bit values (twice the byte stride) and must be even";
    }
  }
}

}  // namespace

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
    if (!b->strides.empty()) CheckPackedStrides(b, f->span);
    ctx.remarks.push_back(b->name + " (" + b->dtype.str() +
                          "): two values per byte along the last dimension; loads pick their nibble, each store "
                          "is an atomic read-modify-write of its byte (the neighbouring value is kept); copies "
                          "to or from it are element loops" +
                          (b->strides.empty() ? std::string()
                                              : "; its strides count 4-bit values (twice the argument's byte "
                                                "strides, the last 1)"));
  }
  return f;
}

TL_REGISTER_PASS("report-packed-tensors", ReportPackedTensors);

}  // namespace tl::transform
