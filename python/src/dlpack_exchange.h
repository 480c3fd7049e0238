// SPDX-License-Identifier: Apache-2.0
/// \file The DLPack C exchange API (DLPack 1.3): a table of C functions a tensor library
/// publishes on its tensor type as `__dlpack_c_exchange_api__`, a PyCapsule named
/// "dlpack_exchange_api". PyTorch has it since 2.10. With it a C extension reads a tensor's
/// address, shape, strides and device in one call, and the library's current stream in
/// another, instead of a Python attribute lookup or method call for each. Declared here
/// from the published ABI (C structs and calling conventions), so that nothing is built
/// against torch's headers; only the parts the call plan reads.
#pragma once

#include <Python.h>

#include <cstdint>

namespace tl_bind::dlpack {

enum DeviceType : int32_t { kCpu = 1, kCuda = 2 };

struct Device {
  int32_t device_type;
  int32_t device_id;
};

struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

/// A tensor's description (DLTensor): data + byte_offset is its first element; strides in
/// elements, or null for a compact row-major tensor.
struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};

struct Version {
  uint32_t major;
  uint32_t minor;
};

struct ApiHeader {
  Version version;
  ApiHeader* prev_api;
};

/// The function table (DLPackExchangeAPI). Each function returns 0 on success, or -1 with a
/// Python exception set. The entries the plan does not call are kept opaque.
struct ExchangeApi {
  ApiHeader header;
  void* managed_tensor_allocator;
  void* managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  /// Fills `out` for the Python tensor `py_object` (of the publishing type), valid until
  /// control returns to Python; no stream synchronization. May be null.
  int (*dltensor_from_py_object_no_sync)(void* py_object, Tensor* out);
  /// The library's current stream on a device (torch.cuda.current_stream()).
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_stream);
};

/// The table `tensor_type` publishes, or null (no attribute, another capsule, a major
/// version other than 1, or missing entries). Clears any Python error it meets.
inline const ExchangeApi* ExchangeApiOf(PyObject* tensor_type) {
  PyObject* capsule = PyObject_GetAttrString(tensor_type, "__dlpack_c_exchange_api__");
  if (!capsule) {
    PyErr_Clear();
    return nullptr;
  }
  const ExchangeApi* api = nullptr;
  if (PyCapsule_CheckExact(capsule)) {
    api = static_cast<const ExchangeApi*>(PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
    if (!api) PyErr_Clear();
  }
  Py_DECREF(capsule);  // (the table itself lives as long as the library)
  if (!api || api->header.version.major != 1 || api->header.version.minor < 3 ||
      !api->dltensor_from_py_object_no_sync || !api->current_work_stream) {
    return nullptr;
  }
  return api;
}

}  // namespace tl_bind::dlpack
