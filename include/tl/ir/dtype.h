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
  /// kFloat4E2M1: OCP MX E2M1 (float4_e2m1fn: 4 bits, no infinities or NaN, largest 6);
  /// kFloat8E8M0: OCP MX E8M0 scale (float8_e8m0fnu: a biased exponent only, 2^(e-127),
  /// code 255 NaN, no zero or sign). Storage types too. Int(4) / UInt(4) are int4 / uint4.
  /// 4-bit values are packed two per byte in global memory (PackedInMemory, expr.h).
  enum Code : uint8_t {
    kInt, kUInt, kFloat, kBFloat, kBool, kHandle, kVoid, kFloat8E4M3, kFloat8E5M2, kFloat4E2M1, kFloat8E8M0
  };
  Code code = kVoid;
  int bits = 0;

  static DType Int(int bits) { return {kInt, bits}; }
  static DType UInt(int bits) { return {kUInt, bits}; }
  static DType Float(int bits) { return {kFloat, bits}; }
  static DType BFloat16() { return {kBFloat, 16}; }
  static DType Float8E4M3() { return {kFloat8E4M3, 8}; }
  static DType Float8E5M2() { return {kFloat8E5M2, 8}; }
  static DType Float4E2M1() { return {kFloat4E2M1, 4}; }
  static DType Float8E8M0() { return {kFloat8E8M0, 8}; }
  static DType Bool() { return {kBool, 8}; }
  static DType Handle() { return {kHandle, 64}; }
  static DType Void() { return {kVoid, 0}; }
  /// Index arithmetic type.
  static DType Index() { return Int(32); }

  bool IsInt() const { return code == kInt || code == kUInt; }
  bool IsSigned() const { return code == kInt; }
  bool IsFloat() const { return code == kFloat || code == kBFloat || IsFloat8() || IsMxFloat(); }
  bool IsFloat8() const { return code == kFloat8E4M3 || code == kFloat8E5M2; }
  /// The OCP MX element and scale types (float4_e2m1fn, float8_e8m0fnu): not float8 GEMM
  /// operands, no atomics.
  bool IsMxFloat() const { return code == kFloat4E2M1 || code == kFloat8E8M0; }
  /// Narrower than a byte (int4, uint4, float4_e2m1fn).
  bool IsSubByte() const { return bits < 8 && (IsInt() || IsFloat()); }
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
