// SPDX-License-Identifier: Apache-2.0
/// \file Scalar data types of the IR.
#pragma once

#include <cstdint>
#include <string>

namespace tl::ir {

/// A scalar type: a code and a bit width. kHandle is an opaque pointer.
struct DType {
  /// kFloat8E4M3: OCP E4M3 "fn" (torch/ml_dtypes float8_e4m3fn: no infinities, max 448);
  /// kFloat8E5M2: OCP E5M2. Both are storage types that compute in float (like kBFloat).
  enum Code : uint8_t { kInt, kUInt, kFloat, kBFloat, kBool, kHandle, kVoid, kFloat8E4M3, kFloat8E5M2 };
  Code code = kVoid;
  int bits = 0;

  static DType Int(int bits) { return {kInt, bits}; }
  static DType UInt(int bits) { return {kUInt, bits}; }
  static DType Float(int bits) { return {kFloat, bits}; }
  static DType BFloat16() { return {kBFloat, 16}; }
  static DType Float8E4M3() { return {kFloat8E4M3, 8}; }
  static DType Float8E5M2() { return {kFloat8E5M2, 8}; }
  static DType Bool() { return {kBool, 8}; }
  static DType Handle() { return {kHandle, 64}; }
  static DType Void() { return {kVoid, 0}; }
  /// Index arithmetic type.
  static DType Index() { return Int(32); }

  bool IsInt() const { return code == kInt || code == kUInt; }
  bool IsSigned() const { return code == kInt; }
  bool IsFloat() const { return code == kFloat || code == kBFloat || IsFloat8(); }
  bool IsFloat8() const { return code == kFloat8E4M3 || code == kFloat8E5M2; }
  bool IsBool() const { return code == kBool; }
  bool IsVoid() const { return code == kVoid; }
  int bytes() const { return (bits + 7) / 8; }

  bool operator==(const DType& o) const { return code == o.code && bits == o.bits; }
  bool operator!=(const DType& o) const { return !(*this == o); }

  /// The name users write: "float16", "int32", "bfloat16", "bool".
  std::string str() const;
  /// Parses a user-facing name (also accepts "half", "float", "double", "int").
  /// Returns Void() when the name is unknown.
  static DType Parse(const std::string& name);
};

}  // namespace tl::ir
