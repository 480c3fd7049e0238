// SPDX-License-Identifier: Apache-2.0
/// \file IR construction for the front end (expressions, buffers, statements, tile ops)
/// and the few expression queries it asks of the C++ core. Conversions only.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/printer.h"
#include "py_ir.h"

namespace tl_bind {

namespace {

BinOp ParseBinOp(const std::string& name) {
  static const std::unordered_map<std::string, BinOp> kOps = {
      {"add", BinOp::kAdd},       {"sub", BinOp::kSub},       {"mul", BinOp::kMul},
      {"div", BinOp::kDiv},       {"mod", BinOp::kMod},       {"floordiv", BinOp::kFloorDiv},
      {"floormod", BinOp::kFloorMod}, {"min", BinOp::kMin},   {"max", BinOp::kMax},
      {"eq", BinOp::kEQ},         {"ne", BinOp::kNE},         {"lt", BinOp::kLT},
      {"le", BinOp::kLE},         {"gt", BinOp::kGT},         {"ge", BinOp::kGE},
      {"and", BinOp::kAnd},       {"or", BinOp::kOr},         {"bitand", BinOp::kBitAnd},
      {"bitor", BinOp::kBitOr},   {"bitxor", BinOp::kBitXor}, {"shl", BinOp::kShl},
      {"shr", BinOp::kShr}};
  auto it = kOps.find(name);
  if (it == kOps.end()) throw nb::value_error(("unknown operator " + name).c_str());
  return it->second;
}

Scope ParseScope(const std::string& s) {
  if (s == "global") return Scope::kGlobal;
  if (s == "shared" || s == "shared.dyn") return Scope::kShared;
  if (s == "fragment" || s == "local.fragment") return Scope::kFragment;
  if (s == "local") return Scope::kLocal;
  if (s == "var" || s == "local.var") return Scope::kVar;
  throw nb::value_error(("unknown memory scope '" + s + "'").c_str());
}

ForKind ParseForKind(const std::string& s) {
  if (s == "serial") return ForKind::kSerial;
  if (s == "parallel") return ForKind::kParallel;
  if (s == "pipelined") return ForKind::kPipelined;
  if (s == "unroll") return ForKind::kUnrolled;
  if (s == "vectorized") return ForKind::kVectorized;
  throw nb::value_error(("unknown loop kind '" + s + "'").c_str());
}

/// `e` with the given let-bound variables replaced by their values (values may name
/// earlier let variables, so a few rounds).
Expr SubstituteLets(const Expr& e, const std::vector<PyExpr>& vars, const std::vector<PyExpr>& values) {
  std::unordered_map<const Var*, Expr> bound;
  for (size_t k = 0; k < vars.size() && k < values.size(); ++k) {
    if (const auto* v = As<Var>(vars[k].e)) bound[v] = values[k].e;
  }
  Expr at = e;
  for (int depth = 0; depth < 8; ++depth) {
    bool hit = false;
    at = Substitute(at, [&](const Var* v) -> Expr {
      auto it = bound.find(v);
      if (it == bound.end()) return nullptr;
      hit = true;
      return it->second;
    });
    if (!hit) break;
  }
  return at;
}

}  // namespace

void BindIr(nb::module_& m) {
  nb::class_<PyExpr>(m, "Expr")
      .def_prop_ro("dtype", [](const PyExpr& e) { return e.e->dtype.str(); })
      .def_prop_ro("const_value", [](const PyExpr& e) -> nb::object {
        if (const auto* i = As<IntImm>(e.e)) {
          return e.e->dtype.IsBool() ? nb::object(nb::bool_(i->value != 0)) : nb::object(nb::int_(i->value));
        }
        if (const auto* f = As<FloatImm>(e.e)) return nb::float_(f->value);
        return nb::none();
      })
      .def_prop_ro("is_var", [](const PyExpr& e) { return e.e->kind == NodeKind::kVar; })
      .def_prop_ro("var_name", [](const PyExpr& e) {
        const auto* v = As<Var>(e.e);
        return v ? v->name : std::string();
      })
      .def("same_as", [](const PyExpr& a, const PyExpr& b) { return a.e == b.e; })
      .def("__repr__", [](const PyExpr& e) { return ToString(e.e); });

  nb::class_<PyBuffer>(m, "Buffer")
      .def_prop_ro("name", [](const PyBuffer& b) { return b.b->name; })
      .def_prop_ro("dtype", [](const PyBuffer& b) { return b.b->dtype.str(); })
      .def_prop_ro("shape", [](const PyBuffer& b) { return Wrap(b.b->shape); })
      .def_prop_ro("strides", [](const PyBuffer& b) { return Wrap(b.b->strides); })
      .def_prop_ro("has_address", [](const PyBuffer& b) { return b.b->data != nullptr; })
      .def_prop_ro("scope", [](const PyBuffer& b) { return std::string(ScopeName(b.b->scope)); })
      .def("same_as", [](const PyBuffer& a, const PyBuffer& b) { return a.b == b.b; })
      .def("__repr__", [](const PyBuffer& b) { return "<Buffer " + b.b->name + ">"; });

  nb::class_<PyStmt>(m, "Stmt").def("__repr__", [](const PyStmt& s) { return ToString(s.s); });

  nb::class_<PyFunc>(m, "PrimFunc")
      .def_prop_ro("name", [](const PyFunc& f) { return f.f->name; })
      .def_prop_ro("param_names", [](const PyFunc& f) {
        std::vector<std::string> names;
        for (const Param& p : f.f->params) names.push_back(p.name());
        return names;
      })
      .def("script", [](const PyFunc& f) { return ToString(f.f); })
      .def("__repr__", [](const PyFunc& f) { return ToString(f.f); });

  // ---- expressions
  m.def("const_int", [](int64_t v, const std::string& t) { return PyExpr{IntImm::Make(ParseDType(t), v)}; });
  m.def("const_float", [](double v, const std::string& t) { return PyExpr{FloatImm::Make(ParseDType(t), v)}; });
  m.def("var", [](const std::string& name, const std::string& t) { return PyExpr{Var::Make(name, ParseDType(t))}; });
  m.def("binary", [](const std::string& op, const PyExpr& a, const PyExpr& b, const PySpan& span) {
    return PyExpr{op::MakeBinary(ParseBinOp(op), a.e, b.e, ToSpan(span))};
  }, nb::arg("op"), nb::arg("a"), nb::arg("b"), nb::arg("span") = nb::none());
  m.def("logical_not", [](const PyExpr& a) {
    Expr x = a.e->dtype.IsBool() ? a.e : op::MakeBinary(BinOp::kNE, a.e, IntImm::Make(a.e->dtype, 0));
    return PyExpr{Not::Make(x)};
  });
  m.def("select", [](const PyExpr& c, const PyExpr& t, const PyExpr& f) {
    Expr cond = c.e->dtype.IsBool() ? c.e : op::MakeBinary(BinOp::kNE, c.e, IntImm::Make(c.e->dtype, 0));
    // Promote the branches to a common type through a dummy addition's rules.
    Expr probe = op::MakeBinary(BinOp::kAdd, t.e, f.e);
    return PyExpr{Select::Make(cond, Cast::Make(probe->dtype, t.e), Cast::Make(probe->dtype, f.e))};
  });
  m.def("cast", [](const std::string& t, const PyExpr& v) { return PyExpr{Cast::Make(ParseDType(t), v.e)}; });
  m.def("math", [](const std::string& name, const std::vector<PyExpr>& args, const PySpan& span) {
    return PyExpr{op::MakeMath(name, Unwrap(args), ToSpan(span))};
  }, nb::arg("name"), nb::arg("args"), nb::arg("span") = nb::none());
  m.def("call", [](const std::string& t, const std::string& name, const std::vector<PyExpr>& args) {
    return PyExpr{Call::Make(ParseDType(t), name, Unwrap(args))};
  });
  m.def("load", [](const PyBuffer& b, const std::vector<PyExpr>& idx) {
    return PyExpr{BufferLoad::Make(b.b, Unwrap(idx))};
  });
  m.def("tile_op_counts", [](const PyFunc& fn) {
    // The GEMMs and global-memory copies of a kernel as written (before lowering), each with
    // how many times it runs: the product of the grid and of the enclosing loops' extents
    // (-1 when one of them is not a constant). For tilelang.tools.Analyzer.
    struct Count : IRVisitor {
      std::vector<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>> out;
      int64_t times = 1;
      static int64_t Extent(const Range& r) {
        int64_t v;
        return AsConstInt(r.extent, &v) ? v : -1;
      }
      static std::vector<int64_t> Shape(const Region& r) {
        std::vector<int64_t> s;
        for (const Range& rg : r.ranges) s.push_back(Extent(rg));
        return s;
      }
      void Scaled(const std::vector<Expr>& extents, const std::function<void()>& body) {
        int64_t saved = times;
        for (const Expr& e : extents) {
          int64_t v;
          times = (times < 0 || !AsConstInt(e, &v)) ? -1 : times * v;
        }
        body();
        times = saved;
      }
      void Visit_(const KernelLaunch* op) override { Scaled(op->grid, [&] { IRVisitor::Visit_(op); }); }
      void Visit_(const For* op) override {
        if (op->for_kind == ForKind::kThreadBinding) return IRVisitor::Visit_(op);
        Scaled({op->extent}, [&] { IRVisitor::Visit_(op); });
      }
      void Visit_(const GemmOp* op) override {
        std::vector<int64_t> a = Shape(op->a), c = Shape(op->c);
        if (a.size() < 2 || c.size() < 2) return;
        int64_t k = op->trans_a ? a[a.size() - 2] : a.back();
        out.emplace_back("gemm", c[c.size() - 2], c.back(), k, times);
      }
      void Visit_(const CopyOp* op) override {
        // The global side of the copy (the source when both are global).
        const Region* g = op->src.buffer->scope == Scope::kGlobal ? &op->src
                          : op->dst.buffer->scope == Scope::kGlobal ? &op->dst : nullptr;
        if (!g) return;
        int64_t n = 1;
        for (int64_t e : Shape(*g)) n = (n < 0 || e < 0) ? -1 : n * e;
        out.emplace_back("copy", n, g->buffer->dtype.bytes(), 0, times);
      }
    } c;
    c.Visit(fn.f->body);
    return c.out;
  });
  m.def("affine_in_one_var", [](const PyExpr& e) -> nb::object {
    // a * v + b for the one variable v of `e` (integer a != 0, b), as (v's name, a, b); None
    // when e has another form (several variables, division, a constant).
    std::vector<const Var*> vars;
    struct Collect : IRVisitor {
      std::vector<const Var*>* out;
      void Visit_(const Var* v) override {
        if (std::find(out->begin(), out->end(), v) == out->end()) out->push_back(v);
      }
    } c;
    c.out = &vars;
    c.Visit(e.e);
    if (vars.size() != 1) return nb::none();
    const Var* v = vars[0];
    int64_t f[4];
    for (int x = 0; x < 4; ++x) {
      Expr at = Substitute(e.e, [&](const Var* u) -> Expr { return u == v ? MakeInt(x, v->dtype) : nullptr; });
      if (!AsConstInt(arith::Analyzer().Simplify(at), &f[x])) return nb::none();
    }
    int64_t a = f[1] - f[0], b = f[0];
    if (a == 0 || f[2] != 2 * a + b || f[3] != 3 * a + b) return nb::none();
    return nb::make_tuple(v->name, a, b);
  });
  m.def("simplify", [](const PyExpr& e) { return PyExpr{arith::Analyzer().Simplify(e.e)}; });
  // The constant `e` equals once the given let-bound variables are replaced by their values
  // (kv_end - kv_start with both bound in the kernel body), or None.
  m.def("constant_through_lets", [](const PyExpr& e, const std::vector<PyExpr>& vars,
                                    const std::vector<PyExpr>& values) -> nb::object {
    Expr at = SubstituteLets(e.e, vars, values);
    int64_t c = 0;
    if (!AsConstInt(arith::Analyzer().Simplify(at), &c)) return nb::none();
    return nb::int_(c);
  });

  // Whether `e` may differ between a block's threads once the given let-bound variables are
  // replaced by their values: it names the thread index, or reads a per-thread buffer (a
  // T.alloc_var, local array or fragment element), which is taken to differ.
  m.def("thread_dependent", [](const PyExpr& e, const std::vector<PyExpr>& vars,
                               const std::vector<PyExpr>& values) -> bool {
    Expr at = SubstituteLets(e.e, vars, values);
    bool found = false;
    ForEachExpr(at, [&](const Expr& x) {
      if (HasEffect(As<Call>(x), kThreadIndex)) found = true;
      if (const auto* load = As<BufferLoad>(x)) {
        Scope s = load->buffer->scope;
        found = found || s == Scope::kVar || s == Scope::kLocal || s == Scope::kFragment;
      }
    });
    return found;
  });

  // ---- buffers
  m.def("buffer", [](const std::string& name, const std::string& t, const std::vector<PyExpr>& shape,
                     const std::string& scope, const std::vector<PyExpr>& strides, const std::optional<PyExpr>& data) {
    return PyBuffer{BufferNode::Make(name, ParseDType(t), Unwrap(shape), ParseScope(scope), Unwrap(strides),
                                     data ? data->e : nullptr)};
  }, nb::arg("name"), nb::arg("dtype"), nb::arg("shape"), nb::arg("scope"),
        nb::arg("strides") = std::vector<PyExpr>{}, nb::arg("data") = nb::none());

  // ---- statements
  m.def("seq", [](const std::vector<PyStmt>& v, const PySpan& span) {
    std::vector<Stmt> s;
    for (const auto& x : v) s.push_back(x.s);
    return PyStmt{Seq::Make(s, ToSpan(span))};
  }, nb::arg("stmts"), nb::arg("span") = nb::none());
  m.def("for_", [](const PyExpr& var, const PyExpr& mn, const PyExpr& ext, const std::string& kind,
                   const PyStmt& body, const std::map<std::string, PyExpr>& ann, const PySpan& span) {
    const auto* v = As<Var>(var.e);
    if (!v) throw nb::type_error("loop variable must be a var");
    std::map<std::string, Expr> a;
    for (const auto& [k, x] : ann) a[k] = x.e;
    return PyStmt{For::Make(std::static_pointer_cast<const Var>(var.e), mn.e, ext.e, ParseForKind(kind), body.s, a,
                            ToSpan(span))};
  });
  m.def("while_", [](const PyExpr& c, const PyStmt& body, const PySpan& span) {
    return PyStmt{While::Make(c.e, body.s, ToSpan(span))};
  });
  m.def("if_", [](const PyExpr& c, const PyStmt& t, const std::optional<PyStmt>& f, const PySpan& span) {
    return PyStmt{IfThenElse::Make(c.e, t.s, f ? f->s : nullptr, ToSpan(span))};
  });
  m.def("let", [](const PyExpr& var, const PyExpr& value, const PySpan& span) {
    return PyStmt{LetStmt::Make(std::static_pointer_cast<const Var>(var.e), value.e, ToSpan(span))};
  });
  m.def("store", [](const PyBuffer& b, const std::vector<PyExpr>& idx, const PyExpr& value, const PySpan& span) {
    return PyStmt{BufferStore::Make(b.b, Unwrap(idx), Cast::Make(b.b->dtype, value.e), ToSpan(span))};
  });
  m.def("allocate", [](const PyBuffer& b, const std::optional<PyExpr>& init, const PySpan& span) {
    return PyStmt{Allocate::Make(b.b, init ? Cast::Make(b.b->dtype, init->e) : nullptr, ToSpan(span))};
  });
  m.def("evaluate", [](const PyExpr& e, const PySpan& span) { return PyStmt{Evaluate::Make(e.e, ToSpan(span))}; });
  m.def("attr", [](const std::string& key, const std::vector<PyExpr>& values, const PySpan& span) {
    return PyStmt{AttrStmt::Make(key, Unwrap(values), ToSpan(span))};
  });
  m.def("break_", [](const PySpan& span) { return PyStmt{Break::Make(ToSpan(span))}; });
  m.def("continue_", [](const PySpan& span) { return PyStmt{Continue::Make(ToSpan(span))}; });
  m.def("kernel", [](const std::vector<PyExpr>& grid, const std::vector<PyExpr>& vars,
                     const std::vector<int64_t>& threads, const PyStmt& body, const PySpan& span) {
    std::vector<VarRef> v;
    for (const auto& x : vars) v.push_back(std::static_pointer_cast<const Var>(x.e));
    return PyStmt{KernelLaunch::Make(Unwrap(grid), v, threads, body.s, ToSpan(span))};
  });
  m.def("copy", [](const PyRegion& src, const PyRegion& dst, const PySpan& span, bool disable_tma) {
    return PyStmt{op::MakeCopy(ToRegion(src), ToRegion(dst), ToSpan(span), disable_tma)};
  }, nb::arg("src"), nb::arg("dst"), nb::arg("span"), nb::arg("disable_tma") = false);
  // tf32: A or B was declared T.tfloat32 (GemmOp::tf32)
  m.def("gemm", [](const PyRegion& a, const PyRegion& b, const PyRegion& c, bool ta, bool tb, int policy,
                   const PyExpr& clear, const PySpan& span, bool tf32, bool async_wgmma) {
    return PyStmt{op::MakeGemm(ToRegion(a), ToRegion(b), ToRegion(c), ta, tb, policy, clear.e, ToSpan(span), tf32,
                               async_wgmma)};
  }, nb::arg("a"), nb::arg("b"), nb::arg("c"), nb::arg("ta"), nb::arg("tb"), nb::arg("policy"), nb::arg("clear"),
     nb::arg("span"), nb::arg("tf32"), nb::arg("async_wgmma") = false);
  m.def("fill", [](const PyRegion& dst, const PyExpr& v, const PySpan& span) {
    return PyStmt{op::MakeFill(ToRegion(dst), v.e, ToSpan(span))};
  });
  m.def("reduce", [](const PyRegion& src, const PyRegion& dst, const std::string& kind, int dim, bool clear,
                     const PySpan& span) {
    static const std::unordered_map<std::string, ReduceKind> kKinds = {
        {"sum", ReduceKind::kSum}, {"abssum", ReduceKind::kAbsSum}, {"max", ReduceKind::kMax},
        {"min", ReduceKind::kMin}, {"absmax", ReduceKind::kAbsMax}, {"max_nan", ReduceKind::kMaxNan},
        {"min_nan", ReduceKind::kMinNan}, {"absmax_nan", ReduceKind::kAbsMaxNan}};
    auto it = kKinds.find(kind);
    if (it == kKinds.end()) throw nb::value_error(("unknown reduction '" + kind + "'").c_str());
    return PyStmt{op::MakeReduce(ToRegion(src), ToRegion(dst), it->second, dim, clear, ToSpan(span))};
  });
  m.def("cumsum", [](const PyRegion& src, const std::optional<PyRegion>& dst, int dim, bool reverse,
                     const PySpan& span) {
    return PyStmt{op::MakeCumsum(ToRegion(src), ToRegion(dst), dim, reverse, ToSpan(span))};
  });
  m.def("atomic", [](const std::string& kind, const PyRegion& dst, const std::optional<PyRegion>& src,
                     const std::optional<PyExpr>& value, const PySpan& span) {
    AtomicKind k = kind == "add" ? AtomicKind::kAdd : kind == "max" ? AtomicKind::kMax : AtomicKind::kMin;
    return PyStmt{op::MakeAtomic(k, ToRegion(dst), ToRegion(src), value ? value->e : nullptr, ToSpan(span))};
  });

}

}  // namespace tl_bind
