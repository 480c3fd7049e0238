// SPDX-License-Identifier: Apache-2.0
/// \file `tilelang._tl.CudaCallPlan`: the per-call path of a compiled CUDA kernel in one C++
/// call. A call with ordinary arguments (torch tensors of the declared dtype, shape and device,
/// contiguous and 16-byte aligned; plain Python numbers for scalars) is checked, its outputs
/// allocated, and the kernel launched on the current stream here. Anything else (a wrong
/// argument, a tensor subclass, a strided view) returns the plan's `fallback` object, and the
/// Python path (jit/cuda_backend.py) handles the call: it accepts what it can convert and
/// explains what it cannot. So this file decides nothing the Python path does not; it only
/// skips the interpreter for the common case, where a call's host cost matters (decode-time
/// kernels run in a few microseconds). Where torch publishes the DLPack C exchange API
/// (dlpack_exchange.h), a tensor is read in one C call and the stream in another.
#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "dlpack_exchange.h"
#include "launch_dims.h"
#include "tl/runtime/cuda_module.h"

namespace nb = nanobind;
using namespace nb::literals;

void BindCudaCallPlan(nb::module_& m);

namespace {

using tl::runtime::CudaArg;
using tl::runtime::CudaModule;
using tl_bind::Dim3;

/// One dimension of a declared shape: a fixed size (>= 0) or dynamic size number -(d + 1).
using DimCode = int64_t;

struct InputSpec {
  char kind = 'p';               ///< 'p' tensor, 'i' i32, 'l' i64, 'f' f32, 'd' f64
  int slot = 0;                  ///< its launch argument
  nb::object dtype;              ///< a tensor's torch dtype (compared by identity)
  std::vector<DimCode> dims;     ///< a tensor's shape
  int64_t lo = 0, hi = 0;        ///< an integer scalar's range (its declared dtype's)
};

struct OutputSpec {
  int slot = 0;
  nb::object dtype;
  std::vector<DimCode> dims;
  bool returned = true;          ///< false: a workspace (T.alloc_global), freed after the call
};

/// Names the attributes the call reads once, as interned strings.
struct Names {
  PyObject* dtype = PyUnicode_InternFromString("dtype");
  PyObject* data_ptr = PyUnicode_InternFromString("data_ptr");
  PyObject* get_device = PyUnicode_InternFromString("get_device");
  PyObject* is_contiguous = PyUnicode_InternFromString("is_contiguous");
  PyObject* shape = PyUnicode_InternFromString("shape");
};

const Names& AttrNames() {
  static const Names* names = new Names();  // never freed: lives as long as the interpreter
  return *names;
}

/// A new reference, or throws the pending Python error.
nb::object Steal(PyObject* o) {
  if (!o) throw nb::python_error();
  return nb::steal(o);
}

class CudaCallPlan {
 public:
  CudaCallPlan(nb::object module, nb::object tensor_type, nb::object empty, nb::object device,
               int device_index, nb::object stream_fn, nb::list inputs, nb::list outputs,
               std::vector<int64_t> dim_max, std::vector<int> dynamic_args, std::string kinds,
               std::vector<int64_t> grid, nb::object grid_fn, std::vector<int64_t> block,
               int64_t shared_bytes, nb::object fallback, std::vector<int> aligned_dims, int64_t alignment)
      : module_obj_(module),
        module_(nb::cast<CudaModule*>(module)),
        tensor_type_(tensor_type),
        empty_(empty),
        device_(device),
        device_index_(device_index),
        device_index_obj_(nb::int_(device_index)),
        stream_fn_(stream_fn),
        dim_max_(std::move(dim_max)),
        dynamic_args_(std::move(dynamic_args)),
        kinds_(std::move(kinds)),
        grid_fn_(grid_fn),
        shared_(static_cast<uint32_t>(shared_bytes)),
        fallback_(fallback),
        aligned_dims_(std::move(aligned_dims)),
        alignment_(alignment),
        empty_kwnames_(nb::make_tuple("dtype", "device")) {
    if (alignment_ < 1) throw nb::value_error("alignment must be at least 1");
    api_ = tl_bind::dlpack::ExchangeApiOf(tensor_type_.ptr());
    for (int d : aligned_dims_) {
      if (d < 0 || static_cast<size_t>(d) >= dim_max_.size()) throw nb::value_error("aligned dimension out of range");
    }
    for (nb::handle h : inputs) {
      nb::tuple t = nb::cast<nb::tuple>(h);
      InputSpec s;
      s.kind = nb::cast<std::string>(t[0]).at(0);
      s.slot = nb::cast<int>(t[1]);
      s.dtype = nb::borrow(t[2]);
      s.dims = nb::cast<std::vector<int64_t>>(t[3]);
      s.lo = nb::cast<int64_t>(t[4]);
      s.hi = nb::cast<int64_t>(t[5]);
      inputs_.push_back(std::move(s));
    }
    for (nb::handle h : outputs) {
      nb::tuple t = nb::cast<nb::tuple>(h);
      OutputSpec s;
      s.slot = nb::cast<int>(t[0]);
      s.dtype = nb::borrow(t[1]);
      s.dims = nb::cast<std::vector<int64_t>>(t[2]);
      s.returned = nb::cast<bool>(t[3]);
      outputs_.push_back(std::move(s));
    }
    if (shared_bytes < 0 || shared_bytes > std::numeric_limits<uint32_t>::max()) {
      throw nb::value_error("shared_bytes out of range");
    }
    grid_ = Dim3(grid, "grid", /*allow_zero=*/true);
    block_ = Dim3(block, "block", /*allow_zero=*/false);
    for (char c : kinds_) {
      if (!std::strchr("pilfd", c) || !c) throw nb::value_error("unknown kind letter; use p, i, l, f or d");
    }
  }

  /// The call: its result (None, the output, or a list of outputs), or `fallback`.
  nb::object Call(nb::handle args) {
    PyObject* tuple = args.ptr();
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != static_cast<Py_ssize_t>(inputs_.size())) {
      return fallback_;
    }
    std::vector<CudaArg> values(kinds_.size());
    std::vector<int64_t> dims(dim_max_.size(), -1);
    for (size_t n = 0; n < inputs_.size(); ++n) {
      const InputSpec& s = inputs_[n];
      PyObject* a = PyTuple_GET_ITEM(tuple, n);
      if (s.kind == 'p') {
        if (!TensorArg(s, a, &values[s.slot], &dims)) return fallback_;
      } else if (!ScalarArg(s, a, &values[s.slot])) {
        return fallback_;
      }
    }
    // The kernel was compiled for sizes that are multiples of alignment_ (tl.dynamic_alignment):
    // other sizes run the general variant, which the Python path has.
    for (int d : aligned_dims_) {
      if (dims[d] < 0 || dims[d] % alignment_ != 0) return fallback_;
    }
    for (size_t d = 0; d < dynamic_args_.size(); ++d) {
      int64_t v = dims[d];
      if (v < 0) return fallback_;  // (not bound by an input: the Python path says why)
      int slot = dynamic_args_[d];
      values[slot] = kinds_[slot] == 'i' ? CudaArg::I32(static_cast<int32_t>(v)) : CudaArg::I64(v);
    }
    std::vector<nb::object> returned, workspaces;  // (workspaces: kept until the launch is queued)
    for (const OutputSpec& s : outputs_) {
      nb::object out = Allocate(s, dims);
      nb::object ptr = Steal(PyObject_CallMethodNoArgs(out.ptr(), AttrNames().data_ptr));
      values[s.slot] = CudaArg::Ptr(PyLong_AsUnsignedLongLong(ptr.ptr()));
      (s.returned ? returned : workspaces).push_back(std::move(out));
    }
    std::array<uint32_t, 3> grid = grid_;
    if (grid_fn_.is_valid() && !grid_fn_.is_none()) {
      nb::list dyn;
      for (size_t d = 0; d < dynamic_args_.size(); ++d) dyn.append(dims[d]);
      grid = Dim3(nb::cast<std::vector<int64_t>>(grid_fn_(dyn)), "grid", /*allow_zero=*/true);
    }
    if (grid[0] && grid[1] && grid[2]) {
      uint64_t stream = CurrentStream();
      nb::gil_scoped_release release;
      module_->Launch(grid, block_, shared_, stream, values);
    }
    if (returned.empty()) return nb::none();
    if (returned.size() == 1) return returned[0];
    nb::list many;
    for (const nb::object& o : returned) many.append(o);
    return many;
  }

  /// Whether calls read tensors and the stream through the DLPack exchange API (false where
  /// torch has none); settable to false, to compare with the attribute path.
  bool exchange() const { return api_ && use_exchange_; }
  void set_exchange(bool on) { use_exchange_ = on; }

 private:
  /// A torch tensor as the kernel declares it: its address in `value`, its dynamic sizes
  /// bound in `dims`. False when it is anything else (the Python path decides).
  bool TensorArg(const InputSpec& s, PyObject* a, CudaArg* value, std::vector<int64_t>* dims) const {
    if (Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(tensor_type_.ptr())) return false;
    const Names& names = AttrNames();
    nb::object dtype = Steal(PyObject_GetAttr(a, names.dtype));
    if (dtype.ptr() != s.dtype.ptr()) return false;
    if (api_ && use_exchange_) {
      tl_bind::dlpack::Tensor t;
      if (api_->dltensor_from_py_object_no_sync(a, &t) == 0) return ExchangedTensorArg(s, t, value, dims);
      PyErr_Clear();  // (a tensor torch does not export, one that requires grad: as below)
    }
    nb::object device = Steal(PyObject_CallMethodNoArgs(a, names.get_device));
    if (PyLong_AsLong(device.ptr()) != device_index_) return false;
    nb::object contiguous = Steal(PyObject_CallMethodNoArgs(a, names.is_contiguous));
    if (contiguous.ptr() != Py_True) return false;
    nb::object shape = Steal(PyObject_GetAttr(a, names.shape));
    if (!PyTuple_Check(shape.ptr()) || PyTuple_GET_SIZE(shape.ptr()) != static_cast<Py_ssize_t>(s.dims.size())) {
      return false;
    }
    for (size_t axis = 0; axis < s.dims.size(); ++axis) {
      if (!BindDim(s.dims[axis], PyLong_AsLongLong(PyTuple_GET_ITEM(shape.ptr(), axis)), dims)) return false;
    }
    nb::object ptr = Steal(PyObject_CallMethodNoArgs(a, names.data_ptr));
    uint64_t address = PyLong_AsUnsignedLongLong(ptr.ptr());
    if (PyErr_Occurred()) throw nb::python_error();
    if (address % 16) return false;
    *value = CudaArg::Ptr(address);
    return true;
  }

  /// TensorArg's checks on the tensor's DLPack description (dtype already checked).
  bool ExchangedTensorArg(const InputSpec& s, const tl_bind::dlpack::Tensor& t, CudaArg* value,
                          std::vector<int64_t>* dims) const {
    if (t.device.device_type != tl_bind::dlpack::kCuda || t.device.device_id != device_index_ ||
        t.ndim != static_cast<int32_t>(s.dims.size()) || !RowMajor(t)) {
      return false;
    }
    for (size_t axis = 0; axis < s.dims.size(); ++axis) {
      if (!BindDim(s.dims[axis], t.shape[axis], dims)) return false;
    }
    const uint64_t address = reinterpret_cast<uintptr_t>(t.data) + t.byte_offset;
    if (address % 16) return false;
    *value = CudaArg::Ptr(address);
    return true;
  }

  /// torch's is_contiguous() on a DLPack description: strides of a compact row-major
  /// layout, those of dimensions of size 1 ignored, and any tensor with no elements.
  static bool RowMajor(const tl_bind::dlpack::Tensor& t) {
    if (!t.strides) return true;
    for (int32_t i = 0; i < t.ndim; ++i) {
      if (t.shape[i] == 0) return true;
    }
    int64_t expected = 1;
    for (int32_t i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != expected) return false;
      expected *= t.shape[i];
    }
    return true;
  }

  /// One axis of a tensor against its declared size: equal to a fixed one, or binding (or
  /// matching) a dynamic one that fits the type the kernel reads it as.
  bool BindDim(DimCode want, int64_t got, std::vector<int64_t>* dims) const {
    if (want >= 0) return got == want;
    size_t d = static_cast<size_t>(-(want + 1));
    int64_t& bound = (*dims)[d];
    if (bound < 0) {
      if (got > dim_max_[d]) return false;
      bound = got;
      return true;
    }
    return bound == got;
  }

  /// torch's current stream on the kernel's device.
  uint64_t CurrentStream() const {
    if (api_ && use_exchange_) {
      void* stream = nullptr;
      if (api_->current_work_stream(tl_bind::dlpack::kCuda, device_index_, &stream) == 0) {
        return reinterpret_cast<uintptr_t>(stream);
      }
      PyErr_Clear();
    }
    nb::object stream_obj = Steal(PyObject_CallOneArg(stream_fn_.ptr(), device_index_obj_.ptr()));
    uint64_t stream = PyLong_AsUnsignedLongLong(stream_obj.ptr());
    if (PyErr_Occurred()) throw nb::python_error();
    return stream;
  }

  /// A plain Python number of the scalar parameter's kind, in its dtype's range.
  static bool ScalarArg(const InputSpec& s, PyObject* a, CudaArg* value) {
    if (s.kind == 'f' || s.kind == 'd') {
      double v;
      if (PyFloat_CheckExact(a)) {
        v = PyFloat_AS_DOUBLE(a);
      } else if (PyLong_CheckExact(a)) {
        v = PyLong_AsDouble(a);
        if (v == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return false; }
      } else {
        return false;
      }
      *value = s.kind == 'f' ? CudaArg::F32(static_cast<float>(v)) : CudaArg::F64(v);
      return true;
    }
    if (!PyLong_CheckExact(a)) return false;  // (bool, numpy scalars: the Python path)
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred()) || v < s.lo || v > s.hi) {
      PyErr_Clear();
      return false;
    }
    *value = s.kind == 'i' ? CudaArg::I32(static_cast<int32_t>(v)) : CudaArg::I64(v);
    return true;
  }

  /// torch.empty(*sizes, dtype=..., device=...) (sizes as separate arguments: faster in torch).
  nb::object Allocate(const OutputSpec& s, const std::vector<int64_t>& dims) const {
    std::vector<nb::object> sizes;
    sizes.reserve(s.dims.size());
    for (DimCode code : s.dims) sizes.push_back(nb::int_(code >= 0 ? code : dims[static_cast<size_t>(-(code + 1))]));
    std::vector<PyObject*> argv;
    argv.reserve(sizes.size() + 3);
    argv.push_back(nullptr);  // PY_VECTORCALL_ARGUMENTS_OFFSET's slot
    nb::object empty_shape;
    if (sizes.empty()) {
      empty_shape = nb::tuple();
      argv.push_back(empty_shape.ptr());
    }
    for (const nb::object& o : sizes) argv.push_back(o.ptr());
    size_t positional = argv.size() - 1;
    argv.push_back(s.dtype.ptr());
    argv.push_back(device_.ptr());
    return Steal(PyObject_Vectorcall(empty_.ptr(), argv.data() + 1, positional | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                     empty_kwnames_.ptr()));
  }

  nb::object module_obj_;  // keeps module_ alive
  CudaModule* module_;
  nb::object tensor_type_, empty_, device_;
  int device_index_;
  nb::object device_index_obj_, stream_fn_;
  std::vector<InputSpec> inputs_;
  std::vector<OutputSpec> outputs_;
  std::vector<int64_t> dim_max_;
  std::vector<int> dynamic_args_;  ///< launch slot of each dynamic size passed to the kernel
  std::string kinds_;
  nb::object grid_fn_;
  std::array<uint32_t, 3> grid_{}, block_{};
  uint32_t shared_;
  nb::object fallback_;
  std::vector<int> aligned_dims_;  ///< dynamic sizes the kernel assumes are multiples of alignment_
  int64_t alignment_ = 1;
  nb::tuple empty_kwnames_;
  const tl_bind::dlpack::ExchangeApi* api_ = nullptr;  ///< torch's DLPack exchange table, if any
  bool use_exchange_ = true;
};

}  // namespace

void BindCudaCallPlan(nb::module_& m) {
  nb::class_<CudaCallPlan>(m, "CudaCallPlan")
      .def(nb::init<nb::object, nb::object, nb::object, nb::object, int, nb::object, nb::list, nb::list,
                    std::vector<int64_t>, std::vector<int>, std::string, std::vector<int64_t>, nb::object,
                    std::vector<int64_t>, int64_t, nb::object, std::vector<int>, int64_t>(),
           "module"_a, "tensor_type"_a, "empty"_a, "device"_a, "device_index"_a, "stream_fn"_a, "inputs"_a,
           "outputs"_a, "dim_max"_a, "dynamic_args"_a, "kinds"_a, "grid"_a, "grid_fn"_a.none(), "block"_a,
           "shared_bytes"_a, "fallback"_a, "aligned_dims"_a = std::vector<int>{}, "alignment"_a = 1,
           "The per-call path of one kernel (see bind_cuda_call.cc); built by jit/cuda_backend.py.")
      .def_prop_rw("exchange", &CudaCallPlan::exchange, &CudaCallPlan::set_exchange,
                   "Whether tensors and the stream are read through torch's DLPack C exchange API "
                   "(False where torch has none); set False to use attribute reads instead.")
      .def("__call__", &CudaCallPlan::Call, "args"_a,
           "Runs the kernel on the argument tuple; returns the plan's fallback object when the "
           "Python path must handle the call.");
}
