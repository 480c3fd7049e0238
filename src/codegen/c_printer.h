// SPDX-License-Identifier: Apache-2.0
/// \file The C-family source printer shared by the CPU and CUDA code generators:
/// identifiers, expressions, statements. Targets override kernels, allocations, loops
/// and their own intrinsic calls.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "dynamic_dims.h"
#include "tl/arith/simplify.h"
#include "tl/codegen/cpu.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/functor.h"

namespace tl::codegen {

// Internal header: the IR names are used unqualified throughout the printers.
namespace printer_detail {
using namespace ::tl::ir;  // NOLINT(google-build-using-namespace)

class CPrinter {
 public:
  virtual ~CPrinter() = default;

 protected:

  virtual void EmitFor(const For* op) = 0;
  virtual void EmitAllocate(const Allocate* op) = 0;
  virtual void EmitKernel(const KernelLaunch* op) = 0;

  std::ostream& Line() {
    for (int i = 0; i < indent_; ++i) os_ << "  ";
    return os_;
  }

  /// A C identifier for `key`, unique in the function.
  std::string Ident(const std::string& base, const void* key) {
    if (key) {
      auto it = names_.find(key);
      if (it != names_.end()) return it->second;
    }
    std::string s;
    for (char c : base) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v_" + s;
    // A Python name may be a C++ keyword or a name the generated code relies on.
    if (Reserved(s)) s += "_";
    std::string name = s;
    for (int i = 1; used_.count(name); ++i) name = s + "_" + std::to_string(i);
    used_.insert(name);
    if (key) names_[key] = name;
    return name;
  }

  static bool Reserved(const std::string& s) {
    static const std::unordered_set<std::string> kReserved = {
        "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
        "constexpr", "continue", "decltype", "default", "delete", "do", "double", "else", "enum", "explicit",
        "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
        "namespace", "new", "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public",
        "register", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template", "this",
        "throw", "true", "try", "typedef", "typename", "union", "unsigned", "using", "virtual", "void",
        "volatile", "while", "xor",
        // What generated code names unqualified: the CUDA built-ins, min/max, the library.
        "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "min", "max", "tl", "printf", "std"};
    return kReserved.count(s) > 0;
  }

  std::string Name(const Var* v) {
    auto it = names_.find(v);
    TL_ICHECK(it != names_.end()) << "variable " << v->name << " used outside its scope";
    return it->second;
  }
  std::string Name(const BufferNode* b) {
    if (b->data) {
      // A tensor made from an address (T.make_tensor): read through the address, typed here.
      return "reinterpret_cast<" + CType(b->dtype) + "*>(" + Print(b->data) + ")";
    }
    auto it = names_.find(b);
    TL_ICHECK(it != names_.end()) << "buffer " << b->name << " used outside its scope";
    return it->second;
  }

  /// The element of `b` at `idx`, as an lvalue: b[offset] (a target may keep a buffer as a
  /// scalar variable).
  virtual std::string Element(const Buffer& b, const std::vector<Expr>& idx) {
    return Name(b.get()) + "[" + Offset(b, idx) + "]";
  }
  /// Row-major (or strided) element offset, in int64 when an index or a stride is 64-bit.
  /// Which accesses need 64 bits is decided by the "legalize-index-width" pass, which
  /// knows loop ranges and pass configs; the printer only follows the types it left.
  std::string Offset(const Buffer& b, const std::vector<Expr>& idx) { return Print(OffsetExpr(b, idx)); }
  /// The offset Offset prints (a target's layouts, such as CUDA's swizzles, apply here).
  virtual Expr OffsetExpr(const Buffer& b, const std::vector<Expr>& idx) {
    bool wide = false;
    for (size_t i = 0; i < idx.size(); ++i) wide |= idx[i]->dtype.bits > 32 || b->StrideOf(i)->dtype.bits > 32;
    DType t = wide ? DType::Int(64) : DType::Int(32);
    Expr off = MakeInt(0, t);
    for (size_t i = 0; i < idx.size(); ++i) {
      off = off + Cast::Make(t, idx[i]) * Cast::Make(t, b->StrideOf(i));
    }
    return analyzer_.Simplify(off);
  }

  /// The pointee type of a buffer's pointer or array: bytes for a packed 4-bit tensor
  /// (PackedInMemory), whose elements only load_packed / store_packed address.
  static std::string ElemPtrType(const BufferNode& b) { return PackedInMemory(b) ? "uint8_t" : CType(b.dtype); }

  /// The library's one-per-byte value types (templates/tl/subbyte.h): they convert only
  /// from built-in arithmetic types, 16-bit and 8-bit floats, so a cast from another
  /// storage type goes through float (int for the 4-bit integers; both exact).
  static bool MxOrSubByte(DType t) { return t.IsMxFloat() || t.IsSubByte(); }

  static std::string FloatLiteral(double v, DType t) {
    std::string ct = CType(t);
    if (std::isinf(v)) return std::string(v > 0 ? "" : "-") + "std::numeric_limits<float>::infinity()";
    if (std::isnan(v)) return "std::numeric_limits<float>::quiet_NaN()";
    std::ostringstream s;
    s << std::setprecision(17) << v;
    std::string lit = s.str();
    if (lit.find_first_of(".e") == std::string::npos) lit += ".0";
    if (t.bits == 64) return lit;
    if (t.bits == 32 && t.code == DType::kFloat) return lit + "f";
    return ct + "(" + lit + "f)";
  }

  std::string Print(const Expr& e) {
    switch (e->kind) {
      case NodeKind::kIntImm: {
        int64_t v = As<IntImm>(e)->value;
        if (e->dtype.IsBool()) return v ? "true" : "false";
        if (e->dtype == DType::Int(32)) return std::to_string(v);
        if (e->dtype == DType::Int(64)) return "int64_t(" + std::to_string(v) + "LL)";
        return CType(e->dtype) + "(" + std::to_string(v) + ")";
      }
      case NodeKind::kFloatImm: return FloatLiteral(As<FloatImm>(e)->value, e->dtype);
      case NodeKind::kVar: return Name(As<Var>(e));
      case NodeKind::kBinary: return PrintBinary(As<Binary>(e));
      case NodeKind::kNot: return "(!" + Print(As<Not>(e)->a) + ")";
      case NodeKind::kSelect: {
        const auto* op = As<Select>(e);
        return "(" + Print(op->cond) + " ? " + Print(op->t) + " : " + Print(op->f) + ")";
      }
      case NodeKind::kCast: {
        const auto* op = As<Cast>(e);
        if (e->dtype.IsBool()) return "(" + Print(op->value) + " != 0)";
        // Through float: 16-bit floats convert to other types via their float value.
        DType from = op->value->dtype;
        std::string v = Print(op->value);
        // (float4_e2m1fn and float8_e8m0fnu take 16-bit floats directly: a half NaN's sign,
        // which decides float4's result, does not survive the hardware widening.)
        if ((from.bits == 16 && from.IsFloat()) && !(e->dtype == DType::Float(32)) && !e->dtype.IsMxFloat()) {
          v = "static_cast<float>(" + v + ")";
        } else if (MxOrSubByte(from) && (MxOrSubByte(e->dtype) || e->dtype.bits == 16 || e->dtype.IsFloat8())) {
          v = std::string(from.IsInt() ? "static_cast<int>(" : "static_cast<float>(") + v + ")";
        } else if (MxOrSubByte(e->dtype) && (from.IsFloat8() || MxOrSubByte(from))) {
          v = "static_cast<float>(" + v + ")";
        }
        return "static_cast<" + CType(e->dtype) + ">(" + v + ")";
      }
      case NodeKind::kCall: {
        std::string call = PrintCall(As<Call>(e));
        if (call.empty()) TL_USER_ERROR(Span{}) << "T." << As<Call>(e)->op << " is not supported on this target";
        return call;
      }
      case NodeKind::kBufferLoad: {
        const auto* op = As<BufferLoad>(e);
        if (PackedInMemory(*op->buffer)) {
          return "tl::load_packed<" + CType(op->buffer->dtype) + ">(" + Name(op->buffer.get()) + ", " +
                 Offset(op->buffer, op->indices) + ")";
        }
        return Element(op->buffer, op->indices);
      }
      default: TL_ICHECK(false) << "cannot print expression kind in CPU codegen";
    }
    return "";
  }

  bool NonNegative(const Expr& e) {
    auto b = analyzer_.Bound(e);
    return b.min && *b.min >= 0;
  }
  bool Positive(const Expr& e) {
    auto b = analyzer_.Bound(e);
    return b.min && *b.min > 0;
  }

  /// log2 of a constant power-of-two integer (at least 2), else -1.
  static int Log2Const(const Expr& e) {
    int64_t v = 0;
    if (!e->dtype.IsInt() || !AsConstInt(e, &v) || v < 2 || (v & (v - 1))) return -1;
    int s = 0;
    while ((int64_t{1} << s) < v) ++s;
    return s;
  }

  /// A 16-bit float a + b, a - b or a * b (operands printed as a, b) as the target's own
  /// instruction with the same rounding, or "" for the float path.
  virtual std::string NarrowArith(const Binary* /*op*/, const std::string& /*a*/, const std::string& /*b*/) {
    return "";
  }

  std::string PrintBinary(const Binary* op) {
    std::string a = Print(op->a), b = Print(op->b);
    std::string r;
    switch (op->op) {
      case BinOp::kFloorDiv:
        if (op->a->dtype.IsFloat()) return "tl::floor(" + a + " / " + b + ")";
        // Non-negative operands: C's division is floor division, and much cheaper; by a
        // power of two a shift (C's signed / cannot assume the sign, and rounds with extra
        // instructions).
        if (NonNegative(op->a) && Positive(op->b)) {
          if (int s = Log2Const(op->b); s >= 0) return "(" + a + " >> " + std::to_string(s) + ")";
          return "(" + a + " / " + b + ")";
        }
        return "tl::floordiv(" + a + ", " + b + ")";
      case BinOp::kFloorMod:
        if (op->a->dtype.IsFloat()) {
          return "(" + a + " - tl::floor(" + a + " / " + b + ") * " + b + ")";
        }
        if (NonNegative(op->a) && Positive(op->b)) {
          if (int s = Log2Const(op->b); s >= 0)
            return "(" + a + " & " + Print(MakeInt((int64_t{1} << s) - 1, op->b->dtype)) + ")";
          return "(" + a + " % " + b + ")";
        }
        return "tl::floormod(" + a + ", " + b + ")";
      case BinOp::kMin: return "tl::min(" + a + ", " + b + ")";
      case BinOp::kMax: return "tl::max(" + a + ", " + b + ")";
      case BinOp::kAnd: return "(" + a + " && " + b + ")";
      case BinOp::kOr: return "(" + a + " || " + b + ")";
      default: r = "(" + a + " " + BinOpName(op->op) + " " + b + ")";
    }
    // Arithmetic on 16-bit floats promotes to float in C++; round back as the IR type says
    // (or the target's one-instruction form of the same rounding, NarrowArith).
    bool narrow = op->dtype.IsFloat() && op->dtype.bits == 16;
    if (narrow) {
      std::string native = NarrowArith(op, a, b);
      return native.empty() ? CType(op->dtype) + r : native;
    }
    // Integer arithmetic on types narrower than int promotes in C++; keep the IR type.
    if (op->dtype.IsInt() && op->dtype.bits < 32) return CType(op->dtype) + r;
    return r;
  }

  /// The device library's name for an element-wise math call: the intrinsic's own, except
  /// three that print as upstream TileLang's generated code spells them (tools and tests
  /// search generated source for these): a float's abs as fabs, C's round (ties away from
  /// zero) as RoundTiesAwayFromZero, a 16-bit float's tan as htan.
  static std::string PrintedMathName(const Call* op) {
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("abs")) && op->dtype.IsFloat()) return "fabs";
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("round"))) return "RoundTiesAwayFromZero";
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("tan")) && op->dtype.IsFloat() && op->dtype.bits == 16) return "htan";
    return op->op;
  }

  /// Target calls; the base handles math, infinities, addresses and atomics and returns
  /// "" for anything else, which derived printers handle.
  virtual std::string PrintCall(const Call* op) {
    auto args = [&](size_t from) {
      std::string s;
      for (size_t i = from; i < op->args.size(); ++i) s += (i > from ? ", " : "") + Print(op->args[i]);
      return s;
    };
    // Element-wise math and atomics: a function of the device library (intrinsics.def).
    if (HasEffect(op, kTlFunction)) return "tl::" + PrintedMathName(op) + "(" + args(0) + ")";
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("infinity")) || IsIntrinsic(op, TL_INTRINSIC_NAME("neg_infinity"))) {
      return "tl::" + op->op + "<" + CType(op->dtype) + ">()";
    }
    if (HasEffect(op, kSm100aOnly)) {  // cast_rs(value, rbits, sat), the one such intrinsic (sat: checked)
      return "tl::" + StochasticRoundingHelper(op->dtype) + "(" + Print(op->args[0]) + ", " + Print(op->args[1]) + ")";
    }
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("reinterpret")))
      return "tl::bit_cast<" + CType(op->dtype) + ">(" + Print(op->args[0]) + ")";
    // A read-only-cache load is a plain load here; the CUDA printer overrides it.
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("ldg"))) return Print(op->args[0]);
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("address_of"))) {
      const auto* load = As<BufferLoad>(op->args[0]);
      TL_ICHECK(load) << "address_of needs a buffer element";
      TL_ICHECK(!PackedInMemory(*load->buffer))
          << "address of an element of packed 4-bit tensor " << load->buffer->name;
      return "(&" + Print(op->args[0]) + ")";
    }
    // A failed run-time assert (after its message is printed); the CPU printer overrides it.
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("trap"))) return "__trap()";
    // T.call_extern: the function by its own name (declared by T.import_source or a header).
    if (IsExternCall(op)) return ExternCallee(op) + "(" + args(0) + ")";
    return "";
  }

  /// The AttrStmt key of T.import_source: this prefix, then the source text.
  static inline const std::string kImportSourcePrefix = "tl.import_source:";
  /// The AttrStmt key of T.CUDASourceCodeKernel: this prefix, the entry name, a newline, the
  /// CUDA source (the whole body of its kernel launch).
  static inline const std::string kCudaSourceKernelPrefix = "tl.cuda_source_kernel:";

  /// T.annotate_restrict_buffers(x, y): the tensor parameters that may alias one another, by
  /// name (an AttrStmt naming each by the address of its first element); their pointers are
  /// printed without __restrict__.
  static inline const std::string kNonRestrictAttr = "tl.non_restrict";
  static std::unordered_set<std::string> NonRestrictParams(const Stmt& body) {
    struct Collect : IRVisitor {
      std::unordered_set<std::string> names;
      void Visit_(const AttrStmt* a) override {
        if (a->key != kNonRestrictAttr) return;
        for (const Expr& v : a->values) {
          const auto* addr = As<Call>(v);
          const auto* load = addr && !addr->args.empty() ? As<BufferLoad>(addr->args[0]) : nullptr;
          if (load) names.insert(load->buffer->name);
        }
      }
    } c;
    c.Visit(body);
    return c.names;
  }

  /// The texts of the T.import_source statements of `body`, each once, in program order:
  /// they go at the top of the generated file, before the kernel.
  static std::string ImportedSources(const Stmt& body) {
    struct Collect : IRVisitor {
      std::vector<std::string> seen;
      void Visit_(const AttrStmt* a) override {
        if (a->key.rfind(kImportSourcePrefix, 0) == 0) {
          std::string text = a->key.substr(kImportSourcePrefix.size());
          if (std::find(seen.begin(), seen.end(), text) == seen.end()) seen.push_back(text);
        }
        IRVisitor::Visit_(a);
      }
    } c;
    c.Visit(body);
    std::string out;
    for (const std::string& t : c.seen) out += "// T.import_source\n" + t + "\n";
    return out;
  }

  /// Comma-separated printed arguments of a call, from index `from`.
  std::string Args(const Call* op, size_t from = 0) {
    std::string s;
    for (size_t i = from; i < op->args.size(); ++i) s += (i > from ? ", " : "") + Print(op->args[i]);
    return s;
  }

  void EmitBody(const Stmt& s) {
    ++indent_;
    EmitStmt(s);
    --indent_;
  }

  void EmitStmt(const Stmt& s) {
    if (!s) return;
    EmitSourceLine(s->span);
    switch (s->kind) {
      case NodeKind::kSeq:
        for (const Stmt& c : As<Seq>(s)->stmts) EmitStmt(c);
        return;
      case NodeKind::kFor: return EmitFor(As<For>(s));
      case NodeKind::kWhile: {
        const auto* op = As<While>(s);
        Line() << "while (" << Print(op->cond) << ") {\n";
        EmitBody(op->body);
        Line() << "}\n";
        return;
      }
      case NodeKind::kIfThenElse: return EmitIf(As<IfThenElse>(s));
      case NodeKind::kLetStmt: {
        const auto* op = As<LetStmt>(s);
        std::string value = Print(op->value);
        // Its value's bound lets the addresses that use it simplify (`tx_1 = tx` in a macro).
        if (op->var->dtype.IsInt()) analyzer_.BindBound(op->var.get(), analyzer_.Bound(op->value));
        Line() << "const " << CType(op->var->dtype) << " " << Ident(op->var->name, op->var.get()) << " = "
               << value << ";\n";
        return;
      }
      case NodeKind::kBufferStore: {
        const auto* op = As<BufferStore>(s);
        if (PackedInMemory(*op->buffer)) {
          // Two values per byte: the neighbour is kept (subbyte.h's store_packed).
          Line() << "tl::store_packed(" << Name(op->buffer.get()) << ", " << Offset(op->buffer, op->indices) << ", "
                 << CType(op->buffer->dtype) << "(" << Print(op->value) << "));\n";
          return;
        }
        Line() << Element(op->buffer, op->indices) << " = " << Print(op->value) << ";\n";
        return;
      }
      case NodeKind::kAllocate: return EmitAllocate(As<Allocate>(s));
      case NodeKind::kEvaluate: Line() << Print(As<Evaluate>(s)->value) << ";\n"; return;
      case NodeKind::kAttrStmt: return EmitAttr(As<AttrStmt>(s));
      case NodeKind::kBreak: Line() << "break;\n"; return;
      case NodeKind::kContinue: Line() << "continue;\n"; return;
      case NodeKind::kKernelLaunch: return EmitKernel(As<KernelLaunch>(s));
      default:
        TL_ICHECK(false) << "tile op left after lowering:\n" << s;
    }
  }

  /// T.print ("tl.print:<label>" from every thread, "tl.print1:<label>" once per block;
  /// each "{}" of the label is one of the values) becomes a printf; other attributes are
  /// hints that leave a comment.
  virtual void EmitIf(const IfThenElse* op) {
    Line() << "if (" << Print(op->cond) << ") {\n";
    EmitBody(op->then_case);
    if (op->else_case) {
      Line() << "} else {\n";
      EmitBody(op->else_case);
    }
    Line() << "}\n";
  }

  virtual void EmitAttr(const AttrStmt* op) {
    if (op->key.rfind(kImportSourcePrefix, 0) == 0) return;  // at the top of the file (ImportedSources)
    if (op->key == "tl.tma_store") return;  // T.tma_copy's store request: a plain copy where TMA is not used
    if (op->key == kNonRestrictAttr) return;  // read by the kernel signature (NonRestrictParams)
    if (op->key.rfind(kCudaSourceKernelPrefix, 0) == 0) {
      TL_USER_ERROR(op->span) << "T.CUDASourceCodeKernel is CUDA source: it runs on the cuda target only";
    }
    bool once = op->key.rfind("tl.print1:", 0) == 0;
    if (!once && op->key.rfind("tl.print:", 0) != 0) {
      Line() << "// attr " << op->key << " (a hint)\n";
      return;
    }
    std::string label = op->key.substr(op->key.find(':') + 1), fmt, args;
    size_t next = 0;
    for (size_t i = 0; i < label.size(); ++i) {
      if (label.compare(i, 2, "{}") == 0 && next < op->values.size()) {
        const Expr& v = op->values[next++];
        DType t = v->dtype;
        if (t.IsFloat()) {
          // 16-bit floats convert through float, which their types define.
          fmt += "%.6g";
          args += t.bits == 64 ? ", static_cast<double>(" + Print(v) + ")"
                               : ", static_cast<double>(static_cast<float>(" + Print(v) + "))";
        } else {
          fmt += "%lld";
          args += ", static_cast<long long>(" + Print(v) + ")";
        }
        ++i;
        continue;
      }
      char c = label[i];
      if (c == '%') fmt += "%%";
      else if (c == '"' || c == '\\') fmt += std::string("\\") + c;
      else if (c == '\n') fmt += "\\n";
      else fmt += c;
    }
    std::string where = once ? "" : PrintLocation();
    std::string guard = once ? OncePerBlock() : "";
    Line() << (guard.empty() ? "" : "if (" + guard + ") ") << "printf(\"" << (where.empty() ? "" : where + " ")
           << fmt << "\\n\"" << (where.empty() ? "" : ", " + PrintLocationArgs()) << args << ");\n";
  }
  /// Where a per-thread print comes from ("block %d thread %d" on CUDA; nothing on the CPU).
  virtual std::string PrintLocation() { return ""; }
  virtual std::string PrintLocationArgs() { return ""; }
  /// The condition under which a once-per-block print runs (one thread on CUDA).
  virtual std::string OncePerBlock() { return ""; }

  /// A `// file.py:line` comment when the user's line changes, so generated code (and the
  /// compiler's messages about it) can be traced back to the Python source.
  void EmitSourceLine(const Span& span) {
    if (!span.Defined() || (span.line == last_line_ && span.file == last_file_)) return;
    last_line_ = span.line;
    last_file_ = span.file;
    std::string base = span.file.substr(span.file.find_last_of('/') + 1);
    Line() << "// " << base << ":" << span.line << "\n";
  }

  std::ostringstream os_;
  int indent_ = 0;
  int last_line_ = 0;
  std::string last_file_;
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<std::string> used_;
  arith::Analyzer analyzer_;
};

}  // namespace printer_detail
using printer_detail::CPrinter;
}  // namespace tl::codegen
