// SPDX-License-Identifier: Apache-2.0
/// \file The IR's text form, close to the Python users write (see printer.h).
#include "tl/ir/printer.h"

#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tl/ir/functor.h"

namespace tl::ir {
namespace {

class Printer {
 public:
  std::string Print(const Expr& e) {
    std::ostringstream os;
    PrintExpr(e, os);
    return os.str();
  }

  void PrintStmt(const Stmt& s, int indent) {
    if (!s) return;
    std::string pad(indent * 2, ' ');
    switch (s->kind) {
      case NodeKind::kSeq:
        for (const Stmt& c : As<Seq>(s)->stmts) PrintStmt(c, indent);
        if (As<Seq>(s)->stmts.empty()) os_ << pad << "pass\n";
        return;
      case NodeKind::kFor:
        os_ << pad << ForHeader(As<For>(s)) << ":\n";
        PrintStmt(As<For>(s)->body, indent + 1);
        return;
      case NodeKind::kWhile:
        os_ << pad << "while " << Print(As<While>(s)->cond) << ":\n";
        PrintStmt(As<While>(s)->body, indent + 1);
        return;
      case NodeKind::kIfThenElse: {
        const auto* op = As<IfThenElse>(s);
        os_ << pad << "if " << Print(op->cond) << ":\n";
        PrintStmt(op->then_case, indent + 1);
        if (op->else_case) {
          os_ << pad << "else:\n";
          PrintStmt(op->else_case, indent + 1);
        }
        return;
      }
      case NodeKind::kKernelLaunch:
        os_ << pad << KernelHeader(As<KernelLaunch>(s)) << ":\n";
        PrintStmt(As<KernelLaunch>(s)->body, indent + 1);
        return;
      default:
        os_ << pad << Line(s) << "\n";
    }
  }

  /// `for i in T.serial(n)` (without the colon).
  std::string ForHeader(const For* op) {
    std::ostringstream os;
    os << "for " << Name(op->var.get()) << " in T." << ForKindName(op->for_kind) << "(";
    int64_t mn;
    if (!(AsConstInt(op->min, &mn) && mn == 0)) os << Print(op->min) << ", " << Print(op->min + op->extent);
    else os << Print(op->extent);
    for (const auto& [k, v] : op->annotations) os << ", " << k << "=" << Print(v);
    os << ")";
    return os.str();
  }

  /// `with T.Kernel(grid..., threads=...) as (bx, ...)` (without the colon).
  std::string KernelHeader(const KernelLaunch* op) {
    std::ostringstream os;
    os << "with T.Kernel(" << List(op->grid) << ", threads=";
    if (op->threads.size() == 1) {
      os << op->threads[0];
    } else {
      os << "(";
      for (size_t i = 0; i < op->threads.size(); ++i) os << (i ? ", " : "") << op->threads[i];
      os << ")";
    }
    os << ") as (";
    for (size_t i = 0; i < op->block_vars.size(); ++i) os << (i ? ", " : "") << Name(op->block_vars[i].get());
    os << ")";
    return os.str();
  }

  /// A statement without a body, as its one line.
  std::string Line(const Stmt& s) {
    std::ostringstream os;
    switch (s->kind) {
      case NodeKind::kLetStmt: {
        const auto* op = As<LetStmt>(s);
        os << Name(op->var.get()) << ": T." << op->var->dtype.str() << " = " << Print(op->value);
        break;
      }
      case NodeKind::kBufferStore: {
        const auto* op = As<BufferStore>(s);
        os << Name(op->buffer.get()) << "[" << List(op->indices) << "] = " << Print(op->value);
        break;
      }
      case NodeKind::kAllocate: {
        const auto* op = As<Allocate>(s);
        const auto& b = op->buffer;
        os << Name(b.get()) << " = T.alloc_" << ScopeName(b->scope) << "((" << List(b->shape)
           << (b->shape.size() == 1 ? ",)" : ")") << ", \"" << b->dtype.str() << "\"";
        if (op->init) os << ", init=" << Print(op->init);
        os << ")";
        break;
      }
      case NodeKind::kEvaluate: os << Print(As<Evaluate>(s)->value); break;
      case NodeKind::kAttrStmt: {
        const auto* op = As<AttrStmt>(s);
        os << "T.attr(\"" << op->key << "\"" << (op->values.empty() ? "" : ", ") << List(op->values) << ")";
        break;
      }
      case NodeKind::kBreak: os << "break"; break;
      case NodeKind::kContinue: os << "continue"; break;
      default: return TileOpLine(s);
    }
    return os.str();
  }

  /// A tile operation (T.copy, T.gemm, T.fill, T.reduce_*, T.atomic_*) as its one line.
  std::string TileOpLine(const Stmt& s) {
    std::ostringstream os;
    switch (s->kind) {
      case NodeKind::kCopyOp:
        os << "T.copy(" << RegionStr(As<CopyOp>(s)->src) << ", " << RegionStr(As<CopyOp>(s)->dst)
           << (As<CopyOp>(s)->disable_tma ? ", disable_tma=True)" : ")");
        break;
      case NodeKind::kGemmOp: {
        const auto* op = As<GemmOp>(s);
        os << (op->async_wgmma ? "T.wgmma_gemm(" : "T.gemm(") << RegionStr(op->a) << ", " << RegionStr(op->b) << ", "
           << RegionStr(op->c);
        if (op->trans_a) os << ", transpose_A=True";
        if (op->trans_b) os << ", transpose_B=True";
        if (op->policy != GemmPolicy::kSquare) os << ", policy=" << static_cast<int>(op->policy);
        if (op->tf32) os << ", tf32=True";
        int64_t clr = 0;
        if (!(AsConstInt(op->clear_accum, &clr) && clr == 0)) os << ", clear_accum=" << Print(op->clear_accum);
        os << ")";
        break;
      }
      case NodeKind::kFillOp:
        os << "T.fill(" << RegionStr(As<FillOp>(s)->dst) << ", " << Print(As<FillOp>(s)->value) << ")";
        break;
      case NodeKind::kReduceOp: {
        const auto* op = As<ReduceOp>(s);
        os << "T.reduce_" << ReduceKindName(op->reduce_kind) << "(" << RegionStr(op->src) << ", "
           << RegionStr(op->dst) << ", dim=" << op->dim << ", clear=" << (op->clear ? "True" : "False")
           << (PropagatesNan(op->reduce_kind) ? ", nan_propagate=True" : "") << ")";
        break;
      }
      case NodeKind::kAtomicOp: {
        const auto* op = As<AtomicOp>(s);
        os << "T.atomic_" << AtomicKindName(op->atomic_kind) << "(" << RegionStr(op->dst) << ", "
           << (op->src.buffer ? RegionStr(op->src) : Print(op->value)) << ")";
        break;
      }
      default: os << "<unknown stmt>";
    }
    return os.str();
  }

  void PrintFunc(const PrimFunc& f) {
    os_ << "@T.prim_func\ndef " << f->name << "(";
    for (size_t i = 0; i < f->params.size(); ++i) {
      const Param& p = f->params[i];
      os_ << (i ? ", " : "");
      if (p.buffer) {
        os_ << Name(p.buffer.get()) << ": T.Tensor((" << List(p.buffer->shape)
            << (p.buffer->shape.size() == 1 ? ",)" : ")") << ", \"" << p.buffer->dtype.str() << "\")";
      } else {
        os_ << Name(p.var.get()) << ": T." << p.var->dtype.str();
      }
    }
    os_ << "):\n";
    PrintStmt(f->body, 1);
  }

  std::string str() const { return os_.str(); }

 private:
  template <typename T>
  std::string Name(const T* key, const std::string& base) {
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;
    std::string name = base.empty() ? "v" : base;
    for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
    used_.insert(name);
    names_[key] = name;
    return name;
  }
  std::string Name(const Var* v) { return Name(v, v->name); }
  std::string Name(const BufferNode* b) { return Name(b, b->name); }

  std::string List(const std::vector<Expr>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Print(v[i]);
    return out;
  }

  std::string RegionStr(const Region& r) {
    std::string out = Name(r.buffer.get()) + "[";
    for (size_t i = 0; i < r.ranges.size(); ++i) {
      const Range& rg = r.ranges[i];
      out += (i ? ", " : "") + Print(rg.min) + ":" + Print(rg.min + rg.extent);
    }
    return out + "]";
  }

  static int Precedence(const Expr& e) {
    const auto* b = As<Binary>(e);
    if (!b) return 100;
    switch (b->op) {
      case BinOp::kOr: return 1;
      case BinOp::kAnd: return 2;
      case BinOp::kEQ: case BinOp::kNE: case BinOp::kLT: case BinOp::kLE: case BinOp::kGT:
      case BinOp::kGE: return 4;
      case BinOp::kBitOr: return 5;
      case BinOp::kBitXor: return 6;
      case BinOp::kBitAnd: return 7;
      case BinOp::kShl: case BinOp::kShr: return 8;
      case BinOp::kAdd: case BinOp::kSub: return 9;
      case BinOp::kMul: case BinOp::kDiv: case BinOp::kMod: case BinOp::kFloorDiv:
      case BinOp::kFloorMod: return 10;
      default: return 100;  // min/max print as calls
    }
  }

  void Operand(const Expr& e, int parent, bool right, std::ostream& os) {
    int p = Precedence(e);
    bool paren = p < parent || (right && p == parent);
    if (paren) os << "(";
    PrintExpr(e, os);
    if (paren) os << ")";
  }

  void PrintExpr(const Expr& e, std::ostream& os) {
    if (!e) {
      os << "None";
      return;
    }
    switch (e->kind) {
      case NodeKind::kIntImm: {
        const auto* op = As<IntImm>(e);
        if (e->dtype.IsBool()) os << (op->value ? "True" : "False");
        else if (e->dtype == DType::Index()) os << op->value;
        else os << "T." << e->dtype.str() << "(" << op->value << ")";
        return;
      }
      case NodeKind::kFloatImm: {
        std::ostringstream v;
        v.precision(17);
        v << As<FloatImm>(e)->value;
        std::string s = v.str();
        if (s.find_first_of(".eni") == std::string::npos) s += ".0";
        if (e->dtype == DType::Float(32)) os << s;
        else os << "T." << e->dtype.str() << "(" << s << ")";
        return;
      }
      case NodeKind::kVar: os << Name(As<Var>(e)); return;
      case NodeKind::kBinary: {
        const auto* op = As<Binary>(e);
        if (op->op == BinOp::kMin || op->op == BinOp::kMax) {
          os << "T." << BinOpName(op->op) << "(" << Print(op->a) << ", " << Print(op->b) << ")";
          return;
        }
        if (op->op == BinOp::kFloorMod) {
          int p = Precedence(e);
          Operand(op->a, p, false, os);
          os << " % ";
          Operand(op->b, p, true, os);
          return;
        }
        if (op->op == BinOp::kMod || (op->op == BinOp::kDiv && e->dtype.IsInt())) {
          os << "T.trunc" << (op->op == BinOp::kMod ? "mod" : "div") << "(" << Print(op->a) << ", "
             << Print(op->b) << ")";
          return;
        }
        int p = Precedence(e);
        Operand(op->a, p, false, os);
        os << " " << BinOpName(op->op) << " ";
        Operand(op->b, p, true, os);
        return;
      }
      case NodeKind::kNot: os << "not (" << Print(As<Not>(e)->a) << ")"; return;
      case NodeKind::kSelect: {
        const auto* op = As<Select>(e);
        os << "T.if_then_else(" << Print(op->cond) << ", " << Print(op->t) << ", " << Print(op->f) << ")";
        return;
      }
      case NodeKind::kCast: {
        const auto* op = As<Cast>(e);
        os << "T.Cast(\"" << e->dtype.str() << "\", " << Print(op->value) << ")";
        return;
      }
      case NodeKind::kCall: {
        const auto* op = As<Call>(e);
        os << "T." << op->op << "(" << List(op->args) << ")";
        return;
      }
      case NodeKind::kBufferLoad: {
        const auto* op = As<BufferLoad>(e);
        os << Name(op->buffer.get()) << "[" << List(op->indices) << "]";
        return;
      }
      default: os << "<unknown expr>";
    }
  }

  std::ostringstream os_;
  std::unordered_map<const void*, std::string> names_;
  std::unordered_set<std::string> used_;
};

}  // namespace

std::string ToString(const Expr& e) { return Printer().Print(e); }
std::string ToString(const Stmt& s) {
  Printer p;
  p.PrintStmt(s, 0);
  return p.str();
}
std::string ToString(const PrimFunc& f) {
  Printer p;
  p.PrintFunc(f);
  return p.str();
}
std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << ToString(e); }
std::ostream& operator<<(std::ostream& os, const Stmt& s) { return os << ToString(s); }

}  // namespace tl::ir
