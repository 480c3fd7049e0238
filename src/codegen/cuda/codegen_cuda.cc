// SPDX-License-Identifier: Apache-2.0
/// \file CUDA C++ generation (see codegen/cuda.h).
///
/// Shared buffers live in one dynamic shared-memory arena, at the offsets that
/// cuda-plan-shared-memory recorded (buffers never live together may share bytes); the
/// launch asks for the arena's peak. Operands of a GEMM whose rows are a multiple of 64
/// bytes are XOR-swizzled (layout::SwizzleOffset) so that cp.async writes and ldmatrix
/// reads are free of bank conflicts; every access to such a buffer goes through the same
/// swizzle.
#include "tl/codegen/cuda.h"

#include <algorithm>
#include <array>
#include <functional>
#include <unordered_set>

#include "../c_printer.h"
#include "async_intrinsics.h"
#include "copy_intrinsics.h"
#include "gemm_intrinsics.h"
#include "warp_intrinsics.h"
#include "hand_written.h"
#include "launch_facts.h"
#include "tensor_maps.h"
#include "tl/arith/sum_terms.h"
#include "tl/ir/printer.h"
#include "tl/ir/intrinsics.h"
#include "tl/layout/fragment.h"
#include "tl/layout/shared.h"
#include "tl/target/cuda_attrs.h"

namespace tl::codegen {

using namespace ir;  // NOLINT: implementation file
using cuda::FindLaunch;
using cuda::HandWrittenKernel;
using cuda::PrintAsyncPipelineCall;
using cuda::PrintCopyCall;
using cuda::PrintGemmCall;
using cuda::PrintWarpCall;
using cuda::ProducerThreads;
using cuda::MinBlocksPerSm;
using cuda::LoopTermsApart;
using cuda::TmaCacheHint;
using cuda::RasterPanel;
using cuda::UnrollPragma;

namespace {

std::string ArgKind(DType t) {
  if (t.IsFloat()) return t.bits == 64 ? "f64" : "f32";
  return t.bits == 64 ? "i64" : "i32";
}

/// `__cluster_dims__(x, y, z) ` for a kernel launched in clusters, else "".
std::string ClusterDimsDecl(const Stmt& body) {
  const std::array<int64_t, 3> d = target::ClusterDims(body);
  if (d[0] * d[1] * d[2] <= 1) return "";
  return "__cluster_dims__(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ") ";
}

class CudaCodegen : public CPrinter {
 public:
  CudaSource Generate(const PrimFunc& f) {
    CudaSource out;
    // `main` cannot name a kernel in CUDA C++.
    out.entry = Ident(f->name.empty() || f->name == "main" ? std::string("main_kernel") : f->name, nullptr);
    plan_ = target::ReadSharedPlan(f->body);
    for (const auto& [buffer, range] : plan_) shared_bytes_ = std::max(shared_bytes_, range.hi);
    // Shared buffers without a planned offset (IR that skipped the planner) go after the plan.
    unplanned_end_ = shared_bytes_;
    std::ostringstream sig;
    // T.pdl_sync: the previous grid may still be writing what this one reads until the
    // wait, so no pointer promises the compiler read-only, unaliased data (upstream's rule)
    bool pdl = false;
    ForEachExpr(f->body, [&](const Expr& e) {
      const auto* call = As<Call>(e);
      pdl |= IsIntrinsic(call, TL_INTRINSIC_NAME("pdl_sync"));
    });
    const auto may_alias = NonRestrictParams(f->body);
    out.programmatic_launch = pdl;
    for (const Param& p : f->params) {
      if (!sig.str().empty()) sig << ", ";
      if (p.buffer) {
        const char* restrict = pdl || may_alias.count(p.buffer->name) ? "* " : "* __restrict__ ";
        sig << ElemPtrType(*p.buffer) << restrict << Ident(p.buffer->name, p.buffer.get());
        out.arg_kinds.push_back("ptr");
      } else if (p.var->dtype == DType::Handle()) {
        // A pointer parameter (T.ptr): passed as an address, read by T.make_tensor views.
        sig << "void* " << Ident(p.var->name, p.var.get());
        out.arg_kinds.push_back("ptr");
      } else if (p.var->dtype.IsFloat() && p.var->dtype.bits < 32) {
        // The launch passes floats of 32 bits at least (arg kind f32); a 16- or 8-bit
        // parameter would read only part of them. It arrives as a float and is rounded
        // to its type once, at the top of the kernel.
        std::string name = Ident(p.var->name, p.var.get());
        sig << "float " << name << "_arg";
        narrow_scalars_.push_back("const " + CType(p.var->dtype) + " " + name + " = " + CType(p.var->dtype) + "(" +
                                  name + "_arg);\n");
        out.arg_kinds.push_back("f32");
      } else {
        sig << CType(p.var->dtype) << " " << Ident(p.var->name, p.var.get());
        out.arg_kinds.push_back(ArgKind(p.var->dtype));
      }
    }
    for (const DynamicDimVar& dv : DynamicDimVars(f, [&](const Var* v) { return names_.count(v) > 0; })) {
      const Var* v = dv.var;
      out.dynamic_dims.push_back({v->name, dv.param, dv.dim, dv.stride});
      out.dynamic_vars.push_back(dv.ref);
      sig << ", " << CType(v->dtype) << " " << Ident(v->name, v);
      out.arg_kinds.push_back(ArgKind(v->dtype));
    }
    cuda::DeclareTensorMaps(f, &out, &sig, &tma_names_);
    const KernelLaunch* launch = FindLaunch(f->body);
    TL_ICHECK(launch) << "function without T.Kernel";
    std::vector<const KernelLaunch*> launches;
    std::function<void(const Stmt&)> collect = [&](const Stmt& st) {
      if (const auto* k = As<KernelLaunch>(st)) launches.push_back(k);
      if (const auto* seq = As<Seq>(st)) {
        for (const Stmt& c : seq->stmts) collect(c);
      }
    };
    collect(f->body);
    // The JIT splits functions with several kernels first (transform::SplitKernels).
    TL_ICHECK(launches.size() == 1) << "GenerateCuda takes one T.Kernel per function; split them with SplitKernels";
    int64_t threads = 1;
    for (int64_t t : launch->threads) threads *= t;
    out.grid = launch->grid;
    while (out.grid.size() < 3) out.grid.push_back(MakeInt(1));
    for (size_t pi = 0; pi < f->params.size(); ++pi) {
      const Param& p = f->params[pi];
      if (p.buffer || !p.var) continue;
      bool used = false;
      for (const Expr& g : out.grid) {
        Substitute(g, [&](const Var* v) -> Expr {
          used |= v == p.var.get();
          return nullptr;
        });
      }
      if (used) {
        out.grid_params.push_back(static_cast<int>(pi));
        out.grid_param_vars.push_back(p.var);
      }
    }
    out.block = launch->threads;
    while (out.block.size() < 3) out.block.push_back(1);
    // A warp-specialized kernel's producer warpgroup comes on top of the source's threads.
    // Every kernel declares a minimum of one block per SM, as upstream does: without it NVRTC
    // (CUDA 13) gave a 256-thread kernel that spills anyway 128 registers (upstream's sparse
    // MLA forward: 7 KB spilled at 128, 3.7 KB at 255), and a warp-specialized kernel needs
    // the whole register file for setmaxnreg to redistribute.
    int64_t producers = ProducerThreads(launch->body);
    loop_terms_apart_ = LoopTermsApart(launch->body);
    tma_cache_hint_ = TmaCacheHint(launch->body);
    out.block[0] += producers;
    threads += producers;

    if (HandWrittenKernel(launch->body, kCudaSourceKernelPrefix, &out)) return out;  // T.CUDASourceCodeKernel

    os_ << "// Generated by tilelang (target: cuda) from " << (f->span.file.empty() ? "<unknown>" : f->span.file)
        << "\n#include \"tl/cuda/tl_cuda.h\"\n#include \"tl/cuda/tile_ops.h\"\n\n"
        << ImportedSourcesFor(f->body) << "extern \"C\" __global__ void __launch_bounds__(" << threads << ", "
        << MinBlocksPerSm(launch->body) << ") " << ClusterDimsDecl(launch->body) << out.entry << "(" << sig.str()
        << ") {\n";
    indent_ = 1;
    EmitStmt(target::DropSharedPlan(f->body));
    os_ << "}\n";
    out.code = os_.str();
    out.shared_bytes = shared_bytes_;
    return out;
  }

 protected:
  /// The warp-specialization attribute is a launch fact (ProducerThreads), not code.
  void EmitAttr(const AttrStmt* op) override {
    if (op->key == target::kWarpSpecializedAttr) {
      Line() << "// warp-specialized: " << Print(op->values[0]) << " producer threads above the consumers\n";
      return;
    }
    if (op->key == target::kMinBlocksPerSmAttr) return;  // in __launch_bounds__
    if (op->key == target::kLoopTermsApartAttr) return;  // how addresses print (PrintCall)
    if (op->key == target::kTmaCacheHintAttr) return;    // how TMA loads print (PrintAsyncPipelineCall)
    if (op->key == target::kRasterPanelAttr) return;     // the block order (EmitKernel)
    if (op->key == target::kClusterDimsAttr) return;     // __cluster_dims__ (Generate)
    std::string fragment, layout;
    if (target::ReadFragmentLayoutAttr(*op, &fragment, &layout)) {  // (a comment on the declaration next)
      fragment_note_ = {fragment, layout};
      return;
    }
    CPrinter::EmitAttr(op);
  }

  void EmitKernel(const KernelLaunch* op) override {
    static const char* kDims[] = {"x", "y", "z"};
    Line() << "extern __shared__ __align__(1024) unsigned char tl_smem[];\n";
    for (const std::string& decl : narrow_scalars_) Line() << decl;
    int64_t panel = RasterPanel(op);
    for (size_t k = 0; k < op->block_vars.size(); ++k) {
      const VarRef& v = op->block_vars[k];
      std::string name = Ident(v->name, v.get());
      analyzer_.BindRange(v.get(), MakeInt(0, v->dtype), op->grid[k]);
      if (panel > 0 && k < 2) continue;
      Line() << "const " << CType(v->dtype) << " " << name << " = blockIdx." << kDims[k] << ";\n";
    }
    if (panel > 0) {
      // Blocks are independent, so their order is free: launch them in panels of `panel`
      // columns, so the operand tiles a wave of blocks shares stay in L2. In clusters, the
      // panels order the clusters and each block adds its place in its cluster, so that
      // the blocks of a cluster keep the neighbouring indices the cluster was made for.
      const std::array<int64_t, 3> cluster = target::ClusterDims(op->body);
      const int64_t cx = cluster[0], cy = cluster[1];
      auto per_cluster = [](const std::string& e, int64_t n) {
        return n > 1 ? "((int)" + e + " / " + std::to_string(n) + ")" : e;
      };
      const std::string gx = per_cluster("gridDim.x", cx), gy = per_cluster("gridDim.y", cy);
      const int64_t columns = std::max<int64_t>(1, panel / cx);
      Line() << "const int tl_linear = " << per_cluster("blockIdx.x", cx) << " + " << per_cluster("blockIdx.y", cy)
             << " * " << gx << ";\n";
      Line() << "const int tl_group = " << columns << " * " << gy << ";\n";
      Line() << "const int tl_first = tl_linear / tl_group * " << columns << ";\n";
      Line() << "const int tl_width = min(" << columns << ", " << (cx > 1 ? gx : "(int)gridDim.x") << " - tl_first);\n";
      Line() << "const int tl_in_panel = tl_linear % tl_group;\n";
      std::string bx = "tl_first + tl_in_panel % tl_width", by = "tl_in_panel / tl_width";
      if (cx > 1) bx = "(" + bx + ") * " + std::to_string(cx) + " + (int)blockIdx.x % " + std::to_string(cx);
      if (cy > 1) by = "(" + by + ") * " + std::to_string(cy) + " + (int)blockIdx.y % " + std::to_string(cy);
      Line() << "const int " << Ident(op->block_vars[0]->name, op->block_vars[0].get()) << " = " << bx << ";\n";
      Line() << "const int " << Ident(op->block_vars[1]->name, op->block_vars[1].get()) << " = " << by << ";\n";
    }
    threads_ = op->threads;
    EmitStmt(op->body);
  }

  void EmitFor(const For* op) override {
    std::string v = Ident(op->var->name, op->var.get());
    std::string ty = CType(op->var->dtype);
    if (op->for_kind == ForKind::kThreadBinding) {
      std::string idx = "threadIdx.x";
      if (threads_.size() > 1) idx += " + threadIdx.y * " + std::to_string(threads_[0]);
      if (threads_.size() > 2) idx += " + threadIdx.z * " + std::to_string(threads_[0] * threads_[1]);
      Line() << "const " << ty << " " << v << " = " << idx << ";\n";
      analyzer_.BindRange(op->var.get(), op->min, op->extent);
      EmitStmt(op->body);
      return;
    }
    // T.vectorized: unrolled, so that neighbouring accesses sit side by side for the compiler.
    if (op->for_kind == ForKind::kUnrolled || op->for_kind == ForKind::kVectorized) Line() << UnrollPragma(op) << "\n";
    std::string mn = Print(op->min), end = Print(analyzer_.Simplify(op->min + op->extent));
    Line() << "for (" << ty << " " << v << " = " << mn << "; " << v << " < " << end << "; ++" << v << ") {\n";
    analyzer_.BindRange(op->var.get(), op->min, op->extent);
    loops_.push_back(arith::UnrolledLoop(*op) ? op->var.get() : nullptr);
    EmitBody(op->body);
    loops_.pop_back();
    Line() << "}\n";
  }

  void EmitAllocate(const Allocate* op) override {
    const Buffer& b = op->buffer;
    // (the layout note of cuda-lower-fragments, which precedes a register fragment's declaration)
    const std::pair<std::string, std::string> note = fragment_note_;
    fragment_note_ = {};
    std::string name = Ident(b->name, b.get());
    std::string ty = CType(b->dtype);
    Expr n = analyzer_.Simplify(b->NumElements());
    int64_t count = 0;
    if (!AsConstInt(n, &count)) {
      TL_USER_ERROR(op->span) << "buffer " << b->name << " needs a size known at compile time on CUDA, got "
                              << ToString(n);
    }
    if (b->scope == Scope::kShared) {
      // The tile's place and layout, as cuda-plan-shared-memory decided them.
      auto planned = plan_.find(b.get());
      const target::SharedLayout tile_layout =
          planned == plan_.end() ? target::SharedLayout::kPlain : planned->second.layout;
      const bool swz = target::IsSwizzled(tile_layout);
      int64_t align = layout::SharedAlignment(swz);
      int64_t offset = 0;
      if (planned != plan_.end()) {
        offset = planned->second.lo;
        TL_ICHECK(offset % align == 0) << "shared buffer " << b->name << " planned at " << offset
                                       << ", not a multiple of " << align;
      } else {
        offset = (unplanned_end_ + align - 1) / align * align;
        unplanned_end_ = offset + count * b->dtype.bytes();
        shared_bytes_ = std::max(shared_bytes_, unplanned_end_);
      }
      Line() << ty << "* " << name << " = reinterpret_cast<" << ty << "*>(tl_smem + " << offset << ");"
             << LayoutComment(tile_layout) << "\n";
      if (swz) layouts_[b.get()] = tile_layout;
    } else if (b->scope == Scope::kVar && count == 1) {
      // A variable (T.alloc_var, a reduction's accumulator): a scalar, as upstream prints it
      // (`bool pred = false;`, then `pred = ...`); its address, where taken, is &pred.
      scalars_.insert(b.get());
      Line() << ty << " " << name << (op->init ? " = " + Print(op->init) : std::string()) << ";\n";
      return;
    } else {
      // Aligned so that vector accesses (tl::cast_copy, tl::copy) may address register arrays too.
      int64_t align = layout::LocalAlignment(count * b->dtype.bytes());
      Line() << (align >= 4 ? "alignas(" + std::to_string(align) + ") " : "") << ty << " " << name << "["
             << std::max<int64_t>(count, 1) << "];"
             << (note.first == b->name ? "  // " + note.second : std::string()) << "\n";
    }
    if (op->init) {
      TL_ICHECK(b->scope != Scope::kShared) << "initialised shared buffer";
      Line() << "#pragma unroll\n";
      // A fresh loop variable: a user variable (or buffer) may be called `i`.
      std::string k = Ident("init_i", nullptr);
      Line() << "for (int " << k << " = 0; " << k << " < " << count << "; ++" << k << ") " << name << "[" << k
             << "] = " << Print(op->init) << ";\n";
    }
  }

  std::string Element(const Buffer& b, const std::vector<Expr>& idx) override {
    return scalars_.count(b.get()) ? Name(b.get()) : CPrinter::Element(b, idx);
  }

  Expr OffsetExpr(const Buffer& b, const std::vector<Expr>& idx) override {
    auto swizzled = layouts_.find(b.get());
    if (swizzled == layouts_.end()) return CPrinter::OffsetExpr(b, idx);
    Expr off = MakeInt(0);
    for (size_t i = 0; i < idx.size(); ++i) off = off + idx[i] * b->StrideOf(i);
    int64_t cols = 0, rows = 0;
    AsConstInt(b->shape.back(), &cols);
    if (swizzled->second == target::SharedLayout::kWgmmaPanels) {
      AsConstInt(b->shape[b->shape.size() - 2], &rows);
      if (idx.size() >= 2 && b->strides.empty()) {
        // From the row and column themselves (equal for in-range indices: wgmma_offset_test):
        // a register walk's XOR then takes its thread's and its register's terms apart.
        Expr tile = MakeInt(0);
        for (size_t i = 0; i + 2 < idx.size(); ++i) tile = tile + idx[i] * b->StrideOf(i);
        return analyzer_.Simplify(layout::WgmmaOperandOffsetAt(
            analyzer_.Simplify(tile), analyzer_.Simplify(idx[idx.size() - 2]), analyzer_.Simplify(idx.back()), rows,
            cols, b->dtype.bytes()));
      }
      return analyzer_.Simplify(
          layout::WgmmaOperandOffset(analyzer_.Simplify(off), rows, cols, b->dtype.bytes()));
    }
    return analyzer_.Simplify(
        layout::SwizzleOffset(analyzer_.Simplify(off), b->dtype.bytes(), cols * b->dtype.bytes()));
  }

  std::string PrintCall(const Call* op) override {
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("syncthreads"))) return "__syncthreads()";
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("address_of")) && loop_terms_apart_) {
      // tl.loop_terms_apart: the address the enclosing loops start from, plus their terms,
      // `(&KV_shared[base]) + (u * 4096)` rather than `&KV_shared[base + u * 4096]`. nvcc
      // hoists each unrolled step's whole address out of an enclosing loop as a register of
      // its own (upstream's seesaw sparse MLA producer: 72 cp.async destinations, spilled at
      // its 72 registers); the split form gives one register plus immediate offsets, as
      // upstream's generated code gets ([R41+0x2000]). Only the innermost loops whose terms
      // all come apart (arith::SplitInnerLoopTerms): a base that still varies with an inner
      // loop would be hoisted once per inner step.
      const auto* load = As<BufferLoad>(op->args[0]);
      // (shared and global memory only: register arrays keep their constant indices)
      const bool memory = load && (load->buffer->scope == Scope::kShared || load->buffer->scope == Scope::kGlobal);
      if (memory && !scalars_.count(load->buffer.get()) && !PackedInMemory(*load->buffer)) {
        auto [base, loop] = arith::SplitInnerLoopTerms(OffsetExpr(load->buffer, load->indices), loops_);
        if (base) return "((&" + Name(load->buffer.get()) + "[" + Print(base) + "]) + " + Print(loop) + ")";
      }
    }
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("ldg"))) {
      // __ldg reads global memory only (tl_cuda.h adds overloads for the 16- and 8-bit floats).
      const auto* load = As<BufferLoad>(op->args[0]);
      TL_ICHECK(load) << "ldg needs a buffer element";
      // (A packed 4-bit element has no address of its own: a plain load_packed.)
      if (load->buffer->scope == Scope::kGlobal && !PackedInMemory(*load->buffer)) {
        return "__ldg(&(" + Print(op->args[0]) + "))";
      }
      return Print(op->args[0]);
    }
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("tma_descriptor")) ||
        IsIntrinsic(op, TL_INTRINSIC_NAME("tma_im2col_descriptor"))) {
      return tma_names_.at(ToString(Call::Make(op->dtype, op->op, op->args)));
    }
    std::string async = PrintAsyncPipelineCall(op, [&](const Expr& e) { return Print(e); }, tma_cache_hint_);
    if (!async.empty()) return async;
    std::string warp = PrintWarpCall(op, [&](const Expr& e) { return Print(e); });
    if (!warp.empty()) return warp;
    std::string copy = PrintCopyCall(op, [&](const Expr& e) { return Print(e); });
    if (!copy.empty()) return copy;
    std::string gemm = PrintGemmCall(op, [&](const Expr& e) { return Print(e); },
                                     [&](const Expr& address) { return SharedLayoutCode(address); });
    if (!gemm.empty()) return gemm;
    return CPrinter::PrintCall(op);
  }

  /// tl::hadd / hsub / hmul (types.h): one native instruction with the float path's
  /// rounding, instead of two widenings, the float operation and a narrowing.
  std::string NarrowArith(const Binary* op, const std::string& a, const std::string& b) override {
    const char* fn = op->op == BinOp::kAdd ? "tl::hadd" : op->op == BinOp::kSub ? "tl::hsub"
                   : op->op == BinOp::kMul ? "tl::hmul" : nullptr;
    if (!fn || op->a->dtype != op->dtype || op->b->dtype != op->dtype) return "";
    // Loads, variables and 16-bit results print as the type itself; anything else (a call
    // that computes in float) is rounded to it explicitly, as the float path would.
    auto typed = [&](const Expr& e, const std::string& s) {
      const auto* bin = As<Binary>(e);
      bool arith = bin && (bin->op == BinOp::kAdd || bin->op == BinOp::kSub || bin->op == BinOp::kMul ||
                           bin->op == BinOp::kDiv);
      bool exact = e->kind == NodeKind::kBufferLoad || e->kind == NodeKind::kVar || arith;
      return exact ? s : CType(op->dtype) + "(" + s + ")";
    };
    return std::string(fn) + "(" + typed(op->a, a) + ", " + typed(op->b, b) + ")";
  }

  /// The Swz* template argument of gemm_ss / gemm_rs for the shared operand at `address`
  /// (tl::swizzle in tile_ops.h): plain, XOR rows, or wgmma's panels of the tile's rows.
  std::string SharedLayoutCode(const Expr& address) const {
    const Buffer& b = As<BufferLoad>(As<Call>(address)->args[0])->buffer;
    auto swizzled = layouts_.find(b.get());
    if (swizzled == layouts_.end()) return "tl::kRowMajor";
    if (swizzled->second != target::SharedLayout::kWgmmaPanels) return "tl::kXorRows";
    int64_t rows = 0;
    AsConstInt(b->shape[b->shape.size() - 2], &rows);
    return "tl::kWgmmaPanels + " + std::to_string(rows);
  }

  /// What the declaration of a shared tile in `l` says about its layout.
  static const char* LayoutComment(target::SharedLayout l) {
    switch (l) {
      case target::SharedLayout::kWgmmaPanels: return "  // wgmma panels";
      case target::SharedLayout::kStagingXorRows: return "  // XOR-swizzled staging tile (conflict-free column stores)";
      case target::SharedLayout::kXorRows: return "  // XOR-swizzled (conflict-free ldmatrix)";
      case target::SharedLayout::kPlain: break;
    }
    return "";
  }

  /// T.import_source texts for the top of the file; CUDA code written for nvcc often uses
  /// `uint`, which nvcc's system headers declare and NVRTC's do not.
  static std::string ImportedSourcesFor(const Stmt& body) {
    std::string src = ImportedSources(body);
    return src.empty() ? "" : "typedef unsigned int uint;\n" + src + "\n";
  }

  std::string PrintLocation() override { return "block (%d, %d, %d) thread (%d, %d, %d):"; }
  std::string PrintLocationArgs() override {
    return "(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x, (int)threadIdx.y, (int)threadIdx.z";
  }
  std::string OncePerBlock() override { return "threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0"; }

 private:
  /// The layout of each swizzled shared tile (the plan's; layout/shared.h has the offsets).
  std::unordered_map<const BufferNode*, target::SharedLayout> layouts_;
  std::unordered_set<const BufferNode*> scalars_;  ///< one-element variables printed as scalars
  /// Parameter name of each tma_descriptor(...), keyed by its printed form.
  std::unordered_map<std::string, std::string> tma_names_;
  target::SharedPlan plan_;
  std::pair<std::string, std::string> fragment_note_;  ///< the last fragment layout note: buffer, layout
  std::vector<int64_t> threads_;
  bool loop_terms_apart_ = false;  ///< tl.loop_terms_apart (see PrintCall's address_of)
  int64_t tma_cache_hint_ = 0;     ///< tl.tma_cache_hint: the L2 policy of TMA loads
  /// the loops around the statement printed (not threads), outermost first; null: one that
  /// stays rolled (arith::UnrolledLoop)
  std::vector<const Var*> loops_;
  int64_t shared_bytes_ = 0;   ///< the arena's peak
  std::vector<std::string> narrow_scalars_;  ///< declarations rounding 16/8-bit float parameters
  int64_t unplanned_end_ = 0;  ///< end of the buffers placed here, after the plan
};

}  // namespace

CudaSource GenerateCuda(const PrimFunc& f) { return CudaCodegen().Generate(f); }

int64_t EvalWithBindings(const Expr& e, const std::vector<VarRef>& vars, const std::vector<int64_t>& values) {
  Expr bound = Substitute(e, [&](const Var* v) -> Expr {
    for (size_t i = 0; i < vars.size(); ++i) {
      if (vars[i].get() == v) return MakeInt(values[i], v->dtype);
    }
    return nullptr;
  });
  int64_t out = 0;
  Expr r = arith::Analyzer().Simplify(bound);
  TL_ICHECK(AsConstInt(r, &out)) << "cannot evaluate " << ToString(e) << " from the dynamic dimensions";
  return out;
}

}  // namespace tl::codegen
