// SPDX-License-Identifier: Apache-2.0
/// \file The extension module `tilelang._tl`: its error types, then the binding groups,
/// one per file (py_ir.h names them). Kept thin: every decision is made in the C++ core;
/// the binding files only convert between Python and C++ values.
#include <nanobind/nanobind.h>

#include "py_ir.h"
#include "tl/support/error.h"

namespace nb = nanobind;

void BindCuda(nb::module_& m);          // bind_cuda.cc
void BindCudaCallPlan(nb::module_& m);  // bind_cuda_call.cc

NB_MODULE(_tl, m) {
  m.doc() = "TileLang C++ core";
  // Kernels registered as torch custom ops live until torch's operator registry is torn
  // down, after this module's leak check at exit; that check would then print hundreds of
  // false reports.
  nb::set_leak_warnings(false);

  // The two exception types are never released: a static nb::object would drop its
  // reference in the library's destructors at exit, after the interpreter is finalized,
  // where a type's deallocation touches freed interpreter state (a process that ends that
  // way aborts after its work is done: "free(): invalid pointer").
  static PyObject* const compile_error = PyErr_NewException("tilelang._tl.CompileError", PyExc_Exception, nullptr);
  static PyObject* const internal_error =
      PyErr_NewException("tilelang._tl.InternalCompilerError", PyExc_RuntimeError, nullptr);
  m.attr("CompileError") = nb::handle(compile_error);
  m.attr("InternalCompilerError") = nb::handle(internal_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tl::CompileError& e) {
      const tl::Span& s = e.span();
      nb::object args = nb::make_tuple(e.what(), s.file, s.line, s.col, s.end_line, s.end_col);
      PyErr_SetObject(compile_error, args.ptr());
    } catch (const tl::InternalError& e) {
      PyErr_SetString(internal_error, e.what());
    }
  });

  tl_bind::BindIr(m);
  tl_bind::BindLowering(m);
  BindCuda(m);
  BindCudaCallPlan(m);
  tl_bind::BindCpuRuntime(m);
  tl_bind::BindLayout(m);
}
