// SPDX-License-Identifier: Apache-2.0
/// \file DType names: the strings users write and the printer shows.
#include "tl/ir/dtype.h"

#include <unordered_map>

namespace tl::ir {

std::string DType::str() const {
  switch (code) {
    case kInt: return "int" + std::to_string(bits);
    case kUInt: return "uint" + std::to_string(bits);
    case kFloat: return "float" + std::to_string(bits);
    case kBFloat: return "bfloat16";
    case kFloat8E4M3: return "float8_e4m3fn";
    case kFloat8E5M2: return "float8_e5m2";
    case kFloat4E2M1: return "float4_e2m1fn";
    case kFloat8E8M0: return "float8_e8m0fnu";
    case kBool: return "bool";
    case kHandle: return "handle";
    case kVoid: return "void";
  }
  return "?";
}

DType DType::Parse(const std::string& name) {
  static const std::unordered_map<std::string, DType> kNames = {
      {"int8", Int(8)},       {"int16", Int(16)},     {"int32", Int(32)},
      {"int64", Int(64)},     {"uint8", UInt(8)},     {"uint16", UInt(16)},
      {"uint32", UInt(32)},   {"uint64", UInt(64)},   {"float16", Float(16)},
      {"float32", Float(32)}, {"float64", Float(64)}, {"bfloat16", BFloat16()},
      {"bool", Bool()},       {"half", Float(16)},    {"float", Float(32)},
      {"double", Float(64)},  {"int", Int(32)},       {"handle", Handle()},
      // float8_e4m3 is upstream's name for the same CUDA type (__nv_fp8_e4m3)
      {"float8_e4m3fn", Float8E4M3()}, {"float8_e4m3", Float8E4M3()}, {"float8_e5m2", Float8E5M2()},
      {"float4_e2m1fn", Float4E2M1()}, {"float8_e8m0fnu", Float8E8M0()}, {"int4", Int(4)}, {"uint4", UInt(4)},
  };
  auto it = kNames.find(name);
  return it == kNames.end() ? Void() : it->second;
}

}  // namespace tl::ir
