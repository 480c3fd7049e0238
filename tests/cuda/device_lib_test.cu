// SPDX-License-Identifier: Apache-2.0
// Standalone GPU test of the CUDA device library (templates/tl/cuda).
//
//   nvcc -std=c++17 -arch=sm_90a -I templates tests/cuda/device_lib_test.cu -o /tmp/t && /tmp/t
//
// Every library function runs on the GPU; the host checks the results against
// independent references (software rounding, libm, CPU matmuls built from the
// fragment layouts documented in mma.h). Prints PASS / FAIL per check and
// "ALL PASS" at the end; the exit status is the number of failed checks.
// clang-format off
// float8 conversions through the hardware (test_float8_hw compares them with the integer ones)
#define TL_FLOAT8_HW_CVT 1
#include "tl/cuda/tl_cuda.h"
// The standard headers come second on purpose: their <cstdint> typedefs must
// not clash with the ones tl_cuda.h made.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
// clang-format on

// ---------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------

static int g_failures = 0;
static int g_checks = 0;

static void check(const std::string& name, bool ok, const std::string& detail = "") {
  ++g_checks;
  if (!ok) ++g_failures;
  std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.empty() ? "" : ": ", detail.c_str());
}

#define CUDA_OK(call)                                                                                         \
  do {                                                                                                        \
    cudaError_t err_ = (call);                                                                                \
    if (err_ != cudaSuccess) {                                                                                \
      std::printf("FAIL CUDA error %s at %s:%d (%s)\n", cudaGetErrorString(err_), __FILE__, __LINE__, #call); \
      std::exit(100);                                                                                         \
    }                                                                                                         \
  } while (0)

static void sync_check(const char* what) {
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e != cudaSuccess) {
    std::printf("FAIL kernel %s: %s\n", what, cudaGetErrorString(e));
    std::exit(101);
  }
}

/// Device buffer mirroring a host vector.
template <typename T>
struct DevBuf {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DevBuf(size_t count) : n(count) {
    CUDA_OK(cudaMalloc(&ptr, std::max<size_t>(count, 1) * sizeof(T)));
    CUDA_OK(cudaMemset(ptr, 0, std::max<size_t>(count, 1) * sizeof(T)));
  }
  explicit DevBuf(const std::vector<T>& h) : DevBuf(h.size()) { upload(h); }
  ~DevBuf() { cudaFree(ptr); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  void upload(const std::vector<T>& h) {
    CUDA_OK(cudaMemcpy(ptr, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> h(n);
    CUDA_OK(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  template <typename U>
  U* as() const {
    return reinterpret_cast<U*>(ptr);
  }
};

static uint32_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
static float bitsf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

static std::string fmt(const char* f, double a, double b) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

// ---------------------------------------------------------------------------
// Host references for 16-bit floats (written independently of the library)
// ---------------------------------------------------------------------------

/// Rounds |v| (exact, long double) to a binary format with `mant` stored
/// mantissa bits, minimum normal exponent `emin` and bias `bias`, ties to even.
/// Returns the bits without sign; overflow gives the Inf encoding.
static uint32_t ref_round(long double v, int mant, int emin, int bias, int emax) {
  if (v == 0) return 0;
  int e;
  std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
  int E = e - 1;
  if (E < emin) E = emin;
  if (E > emax + 1) return static_cast<uint32_t>(emax + bias + 1) << mant;  // Far beyond the range: Inf.
  const long double q = std::ldexp(1.0L, E - mant);
  const long double r = std::nearbyint(v / q);  // Default rounding mode: to nearest even.
  const uint64_t ri = static_cast<uint64_t>(r);
  // Works for subnormals (E == emin) and carries into the exponent (or Inf).
  const uint64_t bits = (static_cast<uint64_t>(E + bias) << mant) + ri - (1ull << mant);
  const uint64_t inf = static_cast<uint64_t>(emax + bias + 1) << mant;
  return static_cast<uint32_t>(bits > inf ? inf : bits);
}

static uint16_t ref_to_half(long double v) {
  if (std::isnan(v)) return 0x7e00;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isinf(v)) return sign | 0x7c00;
  return sign | static_cast<uint16_t>(ref_round(std::fabs(v), 10, -14, 15, 15));
}
static uint16_t ref_to_bf16(long double v) {
  if (std::isnan(v)) return 0x7fc0;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isinf(v)) return sign | 0x7f80;
  return sign | static_cast<uint16_t>(ref_round(std::fabs(v), 7, -126, 127, 127));
}
static float ref_half_to_float(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const float s = (h & 0x8000) ? -1.0f : 1.0f;
  if (e == 31) return m ? NAN : s * INFINITY;
  if (e == 0) return s * std::ldexp(static_cast<float>(m), -24);
  return s * std::ldexp(static_cast<float>(m + 1024), e - 25);
}
static float ref_bf16_to_float(uint16_t b) { return bitsf(static_cast<uint32_t>(b) << 16); }
static bool half_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
static bool bf16_is_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

// ---------------------------------------------------------------------------
// 1. half / bfloat16
// ---------------------------------------------------------------------------

template <typename Src>
__global__ void k_convert(const Src* in, uint16_t* out_h, uint16_t* out_b, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out_h[i] = tl::half(in[i]).bits;
    out_b[i] = tl::bfloat16(in[i]).bits;
  }
}

__global__ void k_widen(float* hf, float* bf, uint16_t* h_from_b, uint16_t* b_from_h) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;  // 0..65535
  const tl::half h = tl::half_from_bits(static_cast<unsigned short>(i));
  const tl::bfloat16 b = tl::bfloat16_from_bits(static_cast<unsigned short>(i));
  hf[i] = h;
  bf[i] = b;
  h_from_b[i] = tl::half(b).bits;
  b_from_h[i] = tl::bfloat16(h).bits;
}

template <typename A, typename B>
struct same_type {
  static constexpr bool value = false;
};
template <typename A>
struct same_type<A, A> {
  static constexpr bool value = true;
};

__global__ void k_half_semantics(float* out, uint32_t* packed) {
  tl::half a = 1.5f, b = 2.25f;
  tl::bfloat16 c = 3.0f, d = -0.5f;
  static_assert(same_type<decltype(a + b), float>::value, "half + half is float");
  static_assert(same_type<decltype(a * 2), float>::value, "half * int is float");
  static_assert(same_type<decltype(c - d), float>::value, "bf16 - bf16 is float");
  static_assert(same_type<decltype(a + c), float>::value, "half + bf16 is float");
  static_assert(same_type<decltype(a < b), bool>::value, "comparison is bool");
  out[0] = a + b;  // 3.75
  out[1] = c * d;  // -1.5
  out[2] = a < b;  // 1
  a += 1;          // 2.5
  out[3] = a;
  c /= 4.0;  // 0.75
  out[4] = c;
  tl::half e = 2047.0f;
  ++e;  // 2048
  out[5] = e;
  e++;  // 2049 rounds to 2048 (ties to even)
  out[6] = e;
  out[7] = -a;  // -2.5
  out[8] = tl::half(tl::bfloat16(1.0f / 3.0f));
  packed[0] = tl::pack_half2(tl::half(1.0f), tl::half(-2.0f));
  packed[1] = tl::float2_to_half2(1.0f, -2.0f);
  packed[2] = tl::pack_bfloat162(tl::bfloat16(1.0f), tl::bfloat16(-2.0f));
  packed[3] = tl::float2_to_bfloat162(1.0f, -2.0f);
  packed[4] = tl::pack_float2<tl::half>(0.1f, 65519.0f);
  packed[5] = tl::pack_float2<tl::bfloat16>(0.1f, 3.0e38f);
  out[9] = tl::half2_lo(packed[0]);
  out[10] = tl::half2_hi(packed[0]);
  out[11] = tl::bfloat162_lo(packed[2]);
  out[12] = tl::bfloat162_hi(packed[2]);
}

template <typename Src>
static void check_convert(const char* name, const std::vector<Src>& in) {
  DevBuf<Src> din(in);
  DevBuf<uint16_t> dh(in.size()), db(in.size());
  const int n = static_cast<int>(in.size());
  k_convert<Src><<<(n + 255) / 256, 256>>>(din.ptr, dh.ptr, db.ptr, n);
  sync_check("k_convert");
  const auto h = dh.download(), b = db.download();
  int bad_h = 0, bad_b = 0;
  std::string first;
  for (int i = 0; i < n; ++i) {
    const long double v = static_cast<long double>(in[i]);
    const uint16_t eh = ref_to_half(v), eb = ref_to_bf16(v);
    const bool okh = std::isnan(v) ? half_is_nan(h[i]) : h[i] == eh;
    const bool okb = std::isnan(v) ? bf16_is_nan(b[i]) : b[i] == eb;
    if (!okh) ++bad_h;
    if (!okb) ++bad_b;
    if ((!okh || !okb) && first.empty()) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "first mismatch at %.20Lg: half %04x (want %04x), bf16 %04x (want %04x)", v, h[i],
                    eh, b[i], eb);
      first = buf;
    }
  }
  check(std::string("convert ") + name + " -> half (" + std::to_string(n) + " values)", bad_h == 0, first);
  check(std::string("convert ") + name + " -> bfloat16 (" + std::to_string(n) + " values)", bad_b == 0, first);
}

static void test_types() {
  std::mt19937_64 rng(1234);
  // float: random bit patterns, every half / bf16 midpoint and its neighbours, specials.
  std::vector<float> fin = {0.0f,     -0.0f,     1.0f,     -1.0f,    65504.0f,       65519.99f, 65520.0f,
                            1e-8f,    -1e-8f,    2.98e-8f, 5.96e-8f, 6.1e-5f,        3.4e38f,   -3.4e38f,
                            INFINITY, -INFINITY, NAN,      1e-45f,   1.17549435e-38f};
  for (int i = 0; i < 1 << 20; ++i) fin.push_back(bitsf(static_cast<uint32_t>(rng())));
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // half midpoints (exact in float)
    const float lo = ref_half_to_float(static_cast<uint16_t>(h)), hi = ref_half_to_float(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
    fin.push_back(mid);
    fin.push_back(std::nextafter(mid, 0.0f));
    fin.push_back(std::nextafter(mid, INFINITY));
    fin.push_back(-mid);
  }
  for (uint32_t b = 0; b < 0x7f80; b += 7) {  // bf16 midpoints
    const uint32_t mid = (b << 16) | 0x8000u;
    fin.push_back(bitsf(mid));
    fin.push_back(bitsf(mid - 1));
    fin.push_back(bitsf(mid + 1));
    fin.push_back(-bitsf(mid));
  }
  check_convert<float>("float", fin);

  // double: the classic double-rounding traps plus random values.
  std::vector<double> din = {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40),  // half: must round up
                             1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40),   // bf16: must round up
                             1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40),  // must round down
                             65519.999999,
                             65520.0,
                             1e300,
                             -1e300,
                             1e-300,
                             3.4028235677973366e38,
                             0.1,
                             -0.0,
                             INFINITY,
                             NAN};
  std::uniform_real_distribution<double> ud(-70000.0, 70000.0);
  for (int i = 0; i < 100000; ++i) din.push_back(ud(rng));
  for (int i = 0; i < 100000; ++i) din.push_back(std::ldexp(ud(rng) / 70000.0, static_cast<int>(rng() % 300) - 150));
  check_convert<double>("double", din);

  std::vector<int32_t> iin = {0,
                              1,
                              -1,
                              2047,
                              2049,
                              65504,
                              65519,
                              65520,
                              1 << 24,
                              (1 << 24) + (1 << 16) + 1,
                              (1 << 24) + (1 << 16),
                              -((1 << 24) + (1 << 16) + 1),
                              2147483647,
                              -2147483647 - 1};
  for (int i = 0; i < 100000; ++i) iin.push_back(static_cast<int32_t>(rng()) >> (rng() % 31));
  check_convert<int32_t>("int32", iin);
  std::vector<int64_t> lin = {0,
                              1,
                              -1,
                              (1LL << 62) + (1LL << 54) + 1,
                              (1LL << 62) + (1LL << 54),
                              INT64_MAX,
                              INT64_MIN,
                              (1LL << 40) + (1LL << 32) + 1};
  for (int i = 0; i < 100000; ++i) lin.push_back(static_cast<int64_t>(rng()) >> (rng() % 63));
  check_convert<int64_t>("int64", lin);
  std::vector<uint32_t> uin = {0u, 4294967295u, (1u << 31) + (1u << 23) + 1u};
  for (int i = 0; i < 10000; ++i) uin.push_back(static_cast<uint32_t>(rng()) >> (rng() % 32));
  check_convert<uint32_t>("uint32", uin);
  std::vector<uint64_t> ulin = {0ull, ~0ull, (1ull << 63) + (1ull << 55) + 1ull};
  for (int i = 0; i < 10000; ++i) ulin.push_back(rng() >> (rng() % 64));
  check_convert<uint64_t>("uint64", ulin);
  std::vector<int16_t> sin_ = {0, 1, -1, 32767, -32768, 2049, 2051};
  check_convert<int16_t>("int16", sin_);
  std::vector<int8_t> cin = {0, 1, -1, 127, -128};
  check_convert<int8_t>("int8", cin);

  // Widening all 65536 patterns, and half <-> bfloat16.
  DevBuf<float> hf(65536), bf(65536);
  DevBuf<uint16_t> hb(65536), bh(65536);
  k_widen<<<256, 256>>>(hf.ptr, bf.ptr, hb.ptr, bh.ptr);
  sync_check("k_widen");
  const auto vhf = hf.download(), vbf = bf.download();
  const auto vhb = hb.download(), vbh = bh.download();
  int bad_hf = 0, bad_bf = 0, bad_hb = 0, bad_bh = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const float eh = ref_half_to_float(static_cast<uint16_t>(i)), eb = ref_bf16_to_float(static_cast<uint16_t>(i));
    if (std::isnan(eh) ? !std::isnan(vhf[i]) : fbits(vhf[i]) != fbits(eh)) ++bad_hf;
    if (std::isnan(eb) ? !std::isnan(vbf[i]) : fbits(vbf[i]) != fbits(eb)) ++bad_bf;
    if (std::isnan(eb) ? !half_is_nan(vhb[i]) : vhb[i] != ref_to_half(eb)) ++bad_hb;
    if (std::isnan(eh) ? !bf16_is_nan(vbh[i]) : vbh[i] != ref_to_bf16(eh)) ++bad_bh;
  }
  check("half -> float, all 65536 patterns", bad_hf == 0, std::to_string(bad_hf) + " wrong");
  check("bfloat16 -> float, all 65536 patterns", bad_bf == 0, std::to_string(bad_bf) + " wrong");
  check("bfloat16 -> half, all 65536 patterns", bad_hb == 0, std::to_string(bad_hb) + " wrong");
  check("half -> bfloat16, all 65536 patterns", bad_bh == 0, std::to_string(bad_bh) + " wrong");

  DevBuf<float> out(16);
  DevBuf<uint32_t> packed(8);
  k_half_semantics<<<1, 1>>>(out.ptr, packed.ptr);
  sync_check("k_half_semantics");
  const auto o = out.download();
  const auto p = packed.download();
  const float want[] = {3.75f,   -1.5f, 1.0f,
                        2.5f,    0.75f, 2048.0f,
                        2048.0f, -2.5f, ref_half_to_float(ref_to_half(ref_bf16_to_float(ref_to_bf16(1.0f / 3.0f)))),
                        1.0f,    -2.0f, 1.0f,
                        -2.0f};
  bool ok = true;
  for (int i = 0; i < 13; ++i) ok = ok && o[i] == want[i];
  check("half / bfloat16 arithmetic, compound assignment, increments", ok);
  check("pack_half2 / float2_to_half2 (lo in low bits)", p[0] == 0xc0003c00u && p[1] == p[0],
        fmt("%.0f %.0f", p[0], p[1]));
  check("pack_bfloat162 / float2_to_bfloat162", p[2] == 0xc0003f80u && p[3] == p[2]);
  check("pack_float2<half> rounds each value",
        p[4] == (static_cast<uint32_t>(ref_to_half(65519.0f)) << 16 | ref_to_half(0.1f)));
  check("pack_float2<bfloat16> rounds each value",
        p[5] == (static_cast<uint32_t>(ref_to_bf16(3.0e38f)) << 16 | ref_to_bf16(0.1f)));
}

// ---------------------------------------------------------------------------
// 2. math
// ---------------------------------------------------------------------------

constexpr int kNumUnary = 20;
static const char* kUnaryNames[kNumUnary] = {"exp",  "exp2",  "expm1", "log",     "log2",  "log10",    "log1p",
                                             "sqrt", "rsqrt", "tanh",  "sigmoid", "sin",   "cos",      "tan",
                                             "erf",  "floor", "ceil",  "trunc",   "round", "nearbyint"};

template <typename T>
__device__ T unary_dispatch(int f, T x) {
  switch (f) {
    case 0:
      return tl::exp(x);
    case 1:
      return tl::exp2(x);
    case 2:
      return tl::expm1(x);
    case 3:
      return tl::log(x);
    case 4:
      return tl::log2(x);
    case 5:
      return tl::log10(x);
    case 6:
      return tl::log1p(x);
    case 7:
      return tl::sqrt(x);
    case 8:
      return tl::rsqrt(x);
    case 9:
      return tl::tanh(x);
    case 10:
      return tl::sigmoid(x);
    case 11:
      return tl::sin(x);
    case 12:
      return tl::cos(x);
    case 13:
      return tl::tan(x);
    case 14:
      return tl::erf(x);
    case 15:
      return tl::floor(x);
    case 16:
      return tl::ceil(x);
    case 17:
      return tl::trunc(x);
    case 18:
      return tl::round(x);
    default:
      return tl::nearbyint(x);
  }
}

static double unary_ref(int f, double x) {
  switch (f) {
    case 0:
      return std::exp(x);
    case 1:
      return std::exp2(x);
    case 2:
      return std::expm1(x);
    case 3:
      return std::log(x);
    case 4:
      return std::log2(x);
    case 5:
      return std::log10(x);
    case 6:
      return std::log1p(x);
    case 7:
      return std::sqrt(x);
    case 8:
      return 1.0 / std::sqrt(x);
    case 9:
      return std::tanh(x);
    case 10:
      return 1.0 / (1.0 + std::exp(-x));
    case 11:
      return std::sin(x);
    case 12:
      return std::cos(x);
    case 13:
      return std::tan(x);
    case 14:
      return std::erf(x);
    case 15:
      return std::floor(x);
    case 16:
      return std::ceil(x);
    case 17:
      return std::trunc(x);
    case 18:
      return std::round(x);
    default:
      return std::nearbyint(x);
  }
}

static const double kMathInputs[] = {-7.25, -2.5, -1.0, -0.5, -0.3, 0.0,  0.01, 0.3,
                                     0.5,   1.0,  1.7,  2.5,  3.5,  7.25, 20.0};
constexpr int kNumMathInputs = sizeof(kMathInputs) / sizeof(kMathInputs[0]);

__global__ void k_unary(const double* in, float* of, double* od, uint16_t* oh, uint16_t* ob, double* oi) {
  const int f = blockIdx.x, i = threadIdx.x;
  if (i >= kNumMathInputs) return;
  const int k = f * kNumMathInputs + i;
  const double x = in[i];
  of[k] = unary_dispatch(f, static_cast<float>(x));
  od[k] = unary_dispatch(f, x);
  oh[k] = unary_dispatch(f, tl::half(x)).bits;
  ob[k] = unary_dispatch(f, tl::bfloat16(x)).bits;
  if (f == 0) oi[i] = tl::exp(static_cast<int>(x));  // Integer argument: computes in double.
}

__global__ void k_misc_math(float* of, double* od, int* oi, long long* ol, unsigned* ou, uint16_t* o16) {
  // pow, abs, min/max (incl. NaN semantics and mixed types), infinities.
  of[0] = tl::pow(2.0f, 10.0f);
  of[1] = tl::pow(tl::half(3.0f), tl::half(2.0f));
  of[2] = tl::pow(2, 0.5f);  // mixed int/float -> float
  od[0] = tl::pow(2.0, 0.5);
  od[1] = tl::pow(3, 4);  // integers compute in double
  of[3] = tl::abs(-2.5f);
  od[2] = tl::abs(-2.5);
  oi[0] = tl::abs(-7);
  ol[0] = tl::abs(-(1LL << 40));
  o16[0] = tl::abs(tl::half(-3.0f)).bits;
  o16[1] = tl::abs(tl::bfloat16(-3.0f)).bits;
  const float nan = __int_as_float(0x7fc00000);
  of[4] = tl::min(nan, 1.0f);  // a NaN operand loses to a number (fmin, as the CPU library)
  of[5] = tl::min(1.0f, nan);
  of[6] = tl::max(nan, 1.0f);
  of[7] = tl::max(1.0f, nan);
  of[8] = tl::min(tl::half(2.0f), tl::half(-3.0f));
  of[9] = tl::max(tl::bfloat16(2.0f), tl::bfloat16(-3.0f));
  static_assert(same_type<decltype(tl::max(1, 2LL)), long long>::value, "mixed int/long long max is long long");
  static_assert(same_type<decltype(tl::min(tl::half(1.0f), tl::bfloat16(1.0f))), float>::value,
                "mixed half/bf16 min is float");
  static_assert(same_type<decltype(tl::max(tl::half(1.0f), tl::half(1.0f))), tl::half>::value, "half max is half");
  ol[1] = tl::max(-5, 3LL);
  of[10] = tl::max(tl::half(2.5f), 1);  // mixed half/int -> float
  // infinities
  of[11] = tl::infinity<float>();
  of[12] = tl::neg_infinity<float>();
  od[3] = tl::infinity<double>();
  od[4] = tl::neg_infinity<double>();
  o16[2] = tl::infinity<tl::half>().bits;
  o16[3] = tl::neg_infinity<tl::half>().bits;
  o16[4] = tl::infinity<tl::bfloat16>().bits;
  o16[5] = tl::neg_infinity<tl::bfloat16>().bits;
  oi[1] = tl::infinity<int>();
  oi[2] = tl::neg_infinity<int>();
  oi[3] = tl::infinity<int8_t>();
  oi[4] = tl::neg_infinity<int8_t>();
  oi[5] = tl::neg_infinity<int16_t>();
  ol[2] = tl::infinity<int64_t>();
  ol[3] = tl::neg_infinity<int64_t>();
  ou[0] = tl::infinity<uint32_t>();
  ou[1] = tl::neg_infinity<uint32_t>();
  ou[2] = tl::infinity<uint8_t>();
  // float floordiv / floormod
  of[13] = tl::floordiv(-7.0f, 2.0f);
  of[14] = tl::floormod(-7.0f, 2.0f);
  od[5] = tl::floordiv(7.0, -2.0);
  od[6] = tl::floormod(7.0, -2.0);
  ol[4] = tl::floordiv(-7, 2LL);  // mixed int/int64
  ol[5] = tl::floormod(-7LL, 2);
}

__global__ void k_floordiv(int* q32, int* r32, long long* q64, long long* r64, unsigned* qu, unsigned* ru) {
  const int a = static_cast<int>(threadIdx.x) - 50;  // -50 .. 49
  const int b = static_cast<int>(blockIdx.x) - 8;    // -8 .. 8 (0 skipped)
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (b == 0) return;
  q32[k] = tl::floordiv(a, b);
  r32[k] = tl::floormod(a, b);
  q64[k] = tl::floordiv(static_cast<long long>(a) * 1000000007LL, static_cast<long long>(b));
  r64[k] = tl::floormod(static_cast<long long>(a) * 1000000007LL, static_cast<long long>(b));
  qu[k] = tl::floordiv(static_cast<unsigned>(a + 50), static_cast<unsigned>(b + 9));
  ru[k] = tl::floormod(static_cast<unsigned>(a + 50), static_cast<unsigned>(b + 9));
}

static bool close_to(double got, double want, double rel, double abs_tol = 1e-30) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= rel * std::fabs(want) + abs_tol;
}

static void test_math() {
  const int n = kNumUnary * kNumMathInputs;
  DevBuf<double> in(std::vector<double>(kMathInputs, kMathInputs + kNumMathInputs));
  DevBuf<float> of(n);
  DevBuf<double> od(n), oi(kNumMathInputs);
  DevBuf<uint16_t> oh(n), ob(n);
  k_unary<<<kNumUnary, 32>>>(in.ptr, of.ptr, od.ptr, oh.ptr, ob.ptr, oi.ptr);
  sync_check("k_unary");
  const auto vf = of.download();
  const auto vd = od.download();
  const auto vh = oh.download(), vb = ob.download();
  const auto vi = oi.download();
  for (int f = 0; f < kNumUnary; ++f) {
    int bad_f = 0, bad_d = 0, bad_h = 0, bad_b = 0;
    std::string first;
    for (int i = 0; i < kNumMathInputs; ++i) {
      const int k = f * kNumMathInputs + i;
      const double x = kMathInputs[i];
      const double wf = unary_ref(f, static_cast<double>(static_cast<float>(x)));
      const double wd = unary_ref(f, x);
      if (!close_to(vf[k], wf, 4e-6, 1e-6)) {
        ++bad_f;
        if (first.empty()) first = fmt("float x=%g got %.9g", x, vf[k]) + fmt(" want %.9g (%g)", wf, 0.0);
      }
      if (!close_to(vd[k], wd, 1e-14, 1e-15)) ++bad_d;
      // 16-bit: computed in float from the rounded input, then rounded: allow one unit in the last place.
      const double xh = ref_half_to_float(ref_to_half(x)), xb = ref_bf16_to_float(ref_to_bf16(x));
      const double wh = ref_half_to_float(ref_to_half(unary_ref(f, xh)));
      const double wb = ref_bf16_to_float(ref_to_bf16(unary_ref(f, xb)));
      if (!close_to(ref_half_to_float(vh[k]), wh, 1.0 / 1024, 1e-4)) ++bad_h;
      if (!close_to(ref_bf16_to_float(vb[k]), wb, 1.0 / 128, 1e-3)) ++bad_b;
    }
    check(std::string("tl::") + kUnaryNames[f] + " float/double/half/bfloat16",
          bad_f == 0 && bad_d == 0 && bad_h == 0 && bad_b == 0,
          "bad float " + std::to_string(bad_f) + ", double " + std::to_string(bad_d) + ", half " +
              std::to_string(bad_h) + ", bf16 " + std::to_string(bad_b) + (first.empty() ? "" : "; " + first));
  }
  bool ok_int = true;
  for (int i = 0; i < kNumMathInputs; ++i)
    ok_int = ok_int && close_to(vi[i], std::exp(static_cast<double>(static_cast<int>(kMathInputs[i]))), 1e-14);
  check("tl::exp(int) computes in double", ok_int);

  DevBuf<float> mf(16);
  DevBuf<double> md(8);
  DevBuf<int> mi(8);
  DevBuf<long long> ml(8);
  DevBuf<unsigned> mu(4);
  DevBuf<uint16_t> m16(8);
  k_misc_math<<<1, 1>>>(mf.ptr, md.ptr, mi.ptr, ml.ptr, mu.ptr, m16.ptr);
  sync_check("k_misc_math");
  const auto f = mf.download();
  const auto d = md.download();
  const auto i = mi.download();
  const auto l = ml.download();
  const auto u = mu.download();
  const auto h = m16.download();
  check("tl::pow (float, half, mixed, double, int)", f[0] == 1024.0f && f[1] == 9.0f &&
                                                         close_to(f[2], std::sqrt(2.0), 1e-6) &&
                                                         close_to(d[0], std::sqrt(2.0), 1e-15) && d[1] == 81.0);
  check("tl::abs (float, double, int, int64, half, bf16)",
        f[3] == 2.5f && d[2] == 2.5 && i[0] == 7 && l[0] == (1LL << 40) && h[0] == 0x4200 && h[1] == 0x4040);
  check("tl::min / tl::max NaN semantics match the CPU library (fmin / fmax)",
        f[4] == 1.0f && f[5] == 1.0f && f[6] == 1.0f && f[7] == 1.0f);
  check("tl::min / tl::max on half, bf16 and mixed types", f[8] == -3.0f && f[9] == 2.0f && l[1] == 3 && f[10] == 2.5f);
  check("tl::infinity / neg_infinity (float, double, half, bf16)",
        std::isinf(f[11]) && f[11] > 0 && std::isinf(f[12]) && f[12] < 0 && std::isinf(d[3]) && d[3] > 0 &&
            std::isinf(d[4]) && d[4] < 0 && h[2] == 0x7c00 && h[3] == 0xfc00 && h[4] == 0x7f80 && h[5] == 0xff80);
  check("tl::infinity / neg_infinity (integer max / lowest)",
        i[1] == 2147483647 && i[2] == -2147483647 - 1 && i[3] == 127 && i[4] == -128 && i[5] == -32768 &&
            l[2] == INT64_MAX && l[3] == INT64_MIN && u[0] == 4294967295u && u[1] == 0u && u[2] == 255u);
  check("tl::floordiv / floormod (float, double, mixed int)",
        f[13] == -4.0f && f[14] == 1.0f && d[5] == -4.0 && d[6] == -1.0 && l[4] == -4 && l[5] == 1);

  const int nfd = 17 * 100;
  DevBuf<int> q32(nfd), r32(nfd);
  DevBuf<long long> q64(nfd), r64(nfd);
  DevBuf<unsigned> qu(nfd), ru(nfd);
  k_floordiv<<<17, 100>>>(q32.ptr, r32.ptr, q64.ptr, r64.ptr, qu.ptr, ru.ptr);
  sync_check("k_floordiv");
  const auto vq32 = q32.download(), vr32 = r32.download();
  const auto vq64 = q64.download(), vr64 = r64.download();
  const auto vqu = qu.download(), vru = ru.download();
  int bad = 0;
  for (int bi = 0; bi < 17; ++bi) {
    for (int t = 0; t < 100; ++t) {
      const long long a = t - 50, b = bi - 8;
      if (b == 0) continue;
      const int k = bi * 100 + t;
      const long long q = static_cast<long long>(std::floor(static_cast<double>(a) / b));
      const long long a64 = a * 1000000007LL;
      const long long q64e = static_cast<long long>(std::floor(static_cast<long double>(a64) / b));
      if (vq32[k] != q || vr32[k] != a - q * b) ++bad;
      if (vq64[k] != q64e || vr64[k] != a64 - q64e * b) ++bad;
      if (vqu[k] != static_cast<unsigned>((a + 50) / (b + 9)) || vru[k] != static_cast<unsigned>((a + 50) % (b + 9)))
        ++bad;
    }
  }
  check("tl::floordiv / floormod integers (Python semantics, int32/int64/uint32)", bad == 0,
        std::to_string(bad) + " wrong");
}

// ---------------------------------------------------------------------------
// 3. memory: vector copies, cp.async (+ zero fill), shared addresses
// ---------------------------------------------------------------------------

__global__ void k_memory(const uint32_t* src, uint32_t* dst, uint32_t* addr_out) {
  // 32 threads; each owns 16 words (64 bytes) of a 512-word tile.
  __shared__ alignas(16) uint32_t s[512];
  const int t = threadIdx.x;
  uint32_t* mine = s + 16 * t;
  const uint32_t* g = src + 16 * t;
  // Vector copies global -> shared, every width, covering all 16 words.
  tl::copy16(mine, g);
  tl::copy8(mine + 4, g + 4);
  tl::copy4(mine + 6, g + 6);
  tl::copy<4>(mine + 7, g + 7);
  tl::store16(mine + 8, tl::load16(g + 8));
  tl::store8(mine + 12, tl::load8(g + 12));
  tl::store4(mine + 14, tl::load4(g + 14));
  tl::copy<2>(mine + 15, g + 15);
  tl::copy<2>(reinterpret_cast<unsigned short*>(mine + 15) + 1, reinterpret_cast<const unsigned short*>(g + 15) + 1);
  __syncthreads();
  for (int i = 0; i < 16; ++i) dst[16 * t + i] = mine[i];  // section 0: vector copies
  __syncthreads();

  // cp.async: fill the tile with a marker, then copy in two groups.
  for (int i = 0; i < 16; ++i) mine[i] = 0xabababab;
  __syncthreads();
  tl::cp_async_16(mine, g);  // group 1: words 0..3, 4..5, 6
  tl::cp_async_8(mine + 4, g + 4);
  tl::cp_async_4(mine + 6, g + 6);
  tl::cp_async_commit();
  const bool pred = (t % 3) != 0;
  tl::cp_async_zfill_16(mine + 8, g + 8, pred);  // group 2: predicated, zero-filled when false
  tl::cp_async_zfill_8(mine + 12, g + 12, pred);
  tl::cp_async_zfill_4(mine + 14, g + 14, pred);
  tl::cp_async_commit();
  tl::cp_async_wait<1>();  // group 1 is complete now
  uint32_t first[7];
  for (int i = 0; i < 7; ++i) first[i] = mine[i];
  tl::cp_async_wait<0>();
  __syncthreads();
  for (int i = 0; i < 7; ++i) dst[512 + 16 * t + i] = first[i];  // section 1: after wait<1>
  for (int i = 7; i < 16; ++i) dst[512 + 16 * t + i] = mine[i];
  __syncthreads();

  // Partial copy: first t % 17 bytes (0..16) from global, rest zero.
  for (int i = 0; i < 16; ++i) mine[i] = 0xabababab;
  __syncthreads();
  tl::cp_async_16_partial(mine, g, t % 17);
  tl::cp_async_wait_all();
  __syncthreads();
  for (int i = 0; i < 4; ++i) dst[1024 + 4 * t + i] = mine[i];  // section 2

  // Shared addresses: differences follow the generic pointers; matches the toolkit's conversion.
  addr_out[t] = tl::smem_addr(mine) - tl::smem_addr(s);
  addr_out[32 + t] = tl::smem_addr(mine) == static_cast<uint32_t>(__cvta_generic_to_shared(mine));
  addr_out[64 + t] = tl::gmem_addr(g) == static_cast<uint64_t>(__cvta_generic_to_global(g));
}

static void test_memory() {
  std::vector<uint32_t> src(512);
  for (int i = 0; i < 512; ++i) src[i] = 0x10000u * (i + 1) + 0x1234u * i;
  DevBuf<uint32_t> dsrc(src), ddst(1024 + 128), daddr(96);
  k_memory<<<1, 32>>>(dsrc.ptr, ddst.ptr, daddr.ptr);
  sync_check("k_memory");
  const auto d = ddst.download();
  const auto a = daddr.download();
  bool ok_copy = true, ok_async = true, ok_zfill = true, ok_partial = true, ok_addr = true;
  std::string copy_detail;
  for (int t = 0; t < 32; ++t) {
    for (int i = 0; i < 16; ++i) {
      if (ok_copy && d[16 * t + i] != src[16 * t + i]) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "thread %d word %d: got %08x want %08x", t, i, d[16 * t + i], src[16 * t + i]);
        copy_detail = buf;
      }
      ok_copy = ok_copy && d[16 * t + i] == src[16 * t + i];
    }
    for (int i = 0; i < 8; ++i) ok_async = ok_async && d[512 + 16 * t + i] == (i < 7 ? src[16 * t + i] : 0xabababab);
    const bool pred = (t % 3) != 0;
    for (int i = 8; i < 15; ++i) ok_zfill = ok_zfill && d[512 + 16 * t + i] == (pred ? src[16 * t + i] : 0u);
    ok_zfill = ok_zfill && d[512 + 16 * t + 15] == 0xabababab;  // untouched
    const int nbytes = t % 17;
    unsigned char want[16];
    std::memcpy(want, &src[16 * t], 16);
    for (int b = nbytes; b < 16; ++b) want[b] = 0;
    ok_partial = ok_partial && std::memcmp(want, &d[1024 + 4 * t], 16) == 0;
    ok_addr = ok_addr && a[t] == static_cast<uint32_t>(64 * t) && a[32 + t] == 1 && a[64 + t] == 1;
  }
  check("copy16/copy8/copy4/copy<N>/load/store vector copies", ok_copy, copy_detail);
  check("cp_async_16/8/4 + commit + wait<1>/wait<0>", ok_async);
  check("cp_async_zfill_16/8/4 zero-fill when predicate is false", ok_zfill);
  check("cp_async_16_partial copies src_bytes and zero-fills the rest", ok_partial);
  check("smem_addr / gmem_addr agree with the generic pointers", ok_addr);
}

// ---------------------------------------------------------------------------
// 4. ldmatrix
// ---------------------------------------------------------------------------

// Four 8x8 matrices of distinct 16-bit values: M_j[r][c] = 0x100*j + 16*r + c + 1.
// Rows are scattered in shared memory (row stride 24 halves = 48 bytes, rows of
// matrix j reversed) to show any 16-byte-aligned row addresses work.
__device__ int ldm_row_slot(int j, int r) { return j * 8 + (7 - r); }

__global__ void k_ldmatrix(uint32_t* out) {
  __shared__ alignas(16) unsigned short s[32 * 24];
  const int lane = threadIdx.x;
  for (int idx = lane; idx < 32 * 8; idx += 32) {
    const int j = idx / 64, r = (idx / 8) % 8, c = idx % 8;
    s[ldm_row_slot(j, r) * 24 + c] = static_cast<unsigned short>(0x100 * j + 16 * r + c + 1);
  }
  __syncthreads();
  const unsigned short* row = s + ldm_row_slot(lane / 8, lane % 8) * 24;  // lanes 8j..8j+7: rows of matrix j
  uint32_t r4[4], r2[2], r1[1], t4[4], t2[2], t1[1];
  tl::ldmatrix_x4(r4, row);
  tl::ldmatrix_x2(r2, row);
  tl::ldmatrix_x1(r1, row);
  tl::ldmatrix_x4_trans(t4, row);
  tl::ldmatrix_x2_trans(t2, row);
  tl::ldmatrix_x1_trans(t1, row);
  uint32_t* o = out + lane * 14;
  for (int i = 0; i < 4; ++i) o[i] = r4[i];
  o[4] = r2[0];
  o[5] = r2[1];
  o[6] = r1[0];
  for (int i = 0; i < 4; ++i) o[7 + i] = t4[i];
  o[11] = t2[0];
  o[12] = t2[1];
  o[13] = t1[0];
}

static void test_ldmatrix() {
  DevBuf<uint32_t> out(32 * 14);
  k_ldmatrix<<<1, 32>>>(out.ptr);
  sync_check("k_ldmatrix");
  const auto o = out.download();
  auto M = [](int j, int r, int c) { return static_cast<uint32_t>(0x100 * j + 16 * r + c + 1); };
  bool ok_plain = true, ok_trans = true;
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    const uint32_t* v = &o[lane * 14];
    for (int j = 0; j < 4; ++j) {
      const uint32_t plain = M(j, g, 2 * t) | (M(j, g, 2 * t + 1) << 16);
      const uint32_t trans = M(j, 2 * t, g) | (M(j, 2 * t + 1, g) << 16);
      ok_plain = ok_plain && v[j] == plain && (j >= 2 || v[4 + j] == plain) && (j >= 1 || v[6] == plain);
      ok_trans = ok_trans && v[7 + j] == trans && (j >= 2 || v[11 + j] == trans) && (j >= 1 || v[13] == trans);
    }
  }
  check("ldmatrix_x1/x2/x4: r[j] = {M_j[g][2t], M_j[g][2t+1]}", ok_plain);
  check("ldmatrix_x1/x2/x4_trans: r[j] = {M_j[2t][g], M_j[2t+1][g]}", ok_trans);
}

// ---------------------------------------------------------------------------
// 5. mma.sync, fragments built from the layouts documented in mma.h
// ---------------------------------------------------------------------------

// A: 16x16 row-major, B: 16x8 row-major (K x N), C, D: 16x8 row-major floats.
template <typename T>
__global__ void k_mma_16bit(const T* A, const T* B, const float* C, float* D, float* D_ldm, float* D_ldm_t,
                            float* D_f16acc) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  auto pk = [](T lo, T hi) { return static_cast<uint32_t>(lo.bits) | (static_cast<uint32_t>(hi.bits) << 16); };
  uint32_t a[4], b[2];
  a[0] = pk(A[g * 16 + 2 * t], A[g * 16 + 2 * t + 1]);
  a[1] = pk(A[(g + 8) * 16 + 2 * t], A[(g + 8) * 16 + 2 * t + 1]);
  a[2] = pk(A[g * 16 + 2 * t + 8], A[g * 16 + 2 * t + 9]);
  a[3] = pk(A[(g + 8) * 16 + 2 * t + 8], A[(g + 8) * 16 + 2 * t + 9]);
  b[0] = pk(B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g]);
  b[1] = pk(B[(2 * t + 8) * 8 + g], B[(2 * t + 9) * 8 + g]);
  const float c[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t], C[(g + 8) * 8 + 2 * t + 1]};
  float d[4];
  tl::mma_m16n8k16<T>(d, a, b, c);
  auto store = [&](float* out, const float(&v)[4]) {
    out[g * 8 + 2 * t] = v[0];
    out[g * 8 + 2 * t + 1] = v[1];
    out[(g + 8) * 8 + 2 * t] = v[2];
    out[(g + 8) * 8 + 2 * t + 1] = v[3];
  };
  store(D, d);

  // The same through ldmatrix, as described in mma.h.
  __shared__ alignas(16) T sA[16 * 16], sB[16 * 8], sBt[8 * 16];
  for (int i = lane; i < 256; i += 32) sA[i] = A[i];
  for (int i = lane; i < 128; i += 32) {
    sB[i] = B[i];
    sBt[(i % 8) * 16 + i / 8] = B[i];  // Bt[n][k] = B[k][n]
  }
  __syncthreads();
  uint32_t la[4], lb[2], lbt[2];
  tl::ldmatrix_x4(la, &sA[(lane % 16) * 16 + (lane / 16) * 8]);
  tl::ldmatrix_x2_trans(lb, &sB[(lane % 16) * 8]);
  tl::ldmatrix_x2(lbt, &sBt[(lane % 8) * 16 + ((lane / 8) % 2) * 8]);
  float d2[4], d3[4];
  if constexpr (same_type<T, tl::half>::value) {
    tl::mma_m16n8k16_f16f32(d2, la, lb, c);
    tl::mma_m16n8k16_f16f32(d3, la, lbt, c);
    // f16 accumulators: C packed as halves.
    const uint32_t ch[2] = {tl::float2_to_half2(c[0], c[1]), tl::float2_to_half2(c[2], c[3])};
    uint32_t dh[2];
    tl::mma_m16n8k16_f16f16(dh, a, b, ch);
    const float dhf[4] = {tl::half2_lo(dh[0]), tl::half2_hi(dh[0]), tl::half2_lo(dh[1]), tl::half2_hi(dh[1])};
    store(D_f16acc, dhf);
  } else {
    tl::mma_m16n8k16_bf16f32(d2, la, lb, c);
    tl::mma_m16n8k16_bf16f32(d3, la, lbt, c);
  }
  store(D_ldm, d2);
  store(D_ldm_t, d3);
}

// A: 16x32 row-major int8, B: 32x8 row-major (K x N), C, D: 16x8 int32.
template <bool Signed>
__global__ void k_mma_int8(const unsigned char* A, const unsigned char* B, const int* C, int* D) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  auto pa = [&](int row, int col) {  // four consecutive columns of A
    return static_cast<uint32_t>(A[row * 32 + col]) | (static_cast<uint32_t>(A[row * 32 + col + 1]) << 8) |
           (static_cast<uint32_t>(A[row * 32 + col + 2]) << 16) | (static_cast<uint32_t>(A[row * 32 + col + 3]) << 24);
  };
  auto pb = [&](int row, int col) {  // four consecutive rows of B
    return static_cast<uint32_t>(B[row * 8 + col]) | (static_cast<uint32_t>(B[(row + 1) * 8 + col]) << 8) |
           (static_cast<uint32_t>(B[(row + 2) * 8 + col]) << 16) |
           (static_cast<uint32_t>(B[(row + 3) * 8 + col]) << 24);
  };
  const uint32_t a[4] = {pa(g, 4 * t), pa(g + 8, 4 * t), pa(g, 4 * t + 16), pa(g + 8, 4 * t + 16)};
  const uint32_t b[2] = {pb(4 * t, g), pb(4 * t + 16, g)};
  const int c[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t], C[(g + 8) * 8 + 2 * t + 1]};
  int d[4];
  if constexpr (Signed) {
    tl::mma_m16n8k32_s8s32(d, a, b, c);
  } else {
    tl::mma_m16n8k32_u8s32(d, a, b, c);
  }
  D[g * 8 + 2 * t] = d[0];
  D[g * 8 + 2 * t + 1] = d[1];
  D[(g + 8) * 8 + 2 * t] = d[2];
  D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

// A: 16x8 row-major float, B: 8x8 row-major, C, D: 16x8.
__global__ void k_mma_tf32(const float* A, const float* B, const float* C, float* D, float* D2, const float* R,
                           uint32_t* Rt) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const float fa[4] = {A[g * 8 + t], A[(g + 8) * 8 + t], A[g * 8 + t + 4], A[(g + 8) * 8 + t + 4]};
  const float fb[2] = {B[t * 8 + g], B[(t + 4) * 8 + g]};
  const float c[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t], C[(g + 8) * 8 + 2 * t + 1]};
  const uint32_t a[4] = {tl::float_to_tf32(fa[0]), tl::float_to_tf32(fa[1]), tl::float_to_tf32(fa[2]),
                         tl::float_to_tf32(fa[3])};
  const uint32_t b[2] = {tl::float_to_tf32(fb[0]), tl::float_to_tf32(fb[1])};
  float d[4], d2[4];
  tl::mma_m16n8k8_tf32f32(d, a, b, c);
  tl::mma_m16n8k8_tf32f32(d2, fa, fb, c);
  D[g * 8 + 2 * t] = d[0];
  D[g * 8 + 2 * t + 1] = d[1];
  D[(g + 8) * 8 + 2 * t] = d[2];
  D[(g + 8) * 8 + 2 * t + 1] = d[3];
  D2[g * 8 + 2 * t] = d2[0];
  D2[g * 8 + 2 * t + 1] = d2[1];
  D2[(g + 8) * 8 + 2 * t] = d2[2];
  D2[(g + 8) * 8 + 2 * t + 1] = d2[3];
  if (lane < 8) Rt[lane] = tl::float_to_tf32(R[lane]);
}

static uint32_t ref_tf32_rna(float f) {  // round to nearest, ties away, to 10 mantissa bits
  const uint32_t u = fbits(f);
  if ((u & 0x7f800000u) == 0x7f800000u) return u;
  return (u + 0x1000u) & ~0x1fffu;
}

template <typename T>
static void run_mma_16bit(const char* name, uint16_t (*to_bits)(long double)) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-4, 4), cdist(-50, 50);
  std::vector<float> Af(256), Bf(128), C(128);
  std::vector<uint16_t> A(256), B(128);
  for (int i = 0; i < 256; ++i) {
    Af[i] = static_cast<float>(small(rng));
    A[i] = to_bits(Af[i]);
  }
  for (int i = 0; i < 128; ++i) {
    Bf[i] = static_cast<float>(small(rng));
    B[i] = to_bits(Bf[i]);
  }
  for (int i = 0; i < 128; ++i) C[i] = static_cast<float>(cdist(rng));
  std::vector<float> want(128);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      float s = C[m * 8 + n];
      for (int k = 0; k < 16; ++k) s += Af[m * 16 + k] * Bf[k * 8 + n];
      want[m * 8 + n] = s;  // small integers: exact
    }
  DevBuf<uint16_t> dA(A), dB(B);
  DevBuf<float> dC(C), dD(128), dL(128), dLt(128), dH(128);
  k_mma_16bit<T><<<1, 32>>>(dA.as<T>(), dB.as<T>(), dC.ptr, dD.ptr, dL.ptr, dLt.ptr, dH.ptr);
  sync_check("k_mma_16bit");
  check(std::string("mma_m16n8k16 ") + name + " f32-acc vs CPU matmul (documented layout)", dD.download() == want);
  check(std::string("ldmatrix_x4 + ldmatrix_x2_trans (row-major B) feed mma_m16n8k16 ") + name, dL.download() == want);
  check(std::string("ldmatrix_x4 + ldmatrix_x2 (K-major B) feed mma_m16n8k16 ") + name, dLt.download() == want);
  if (same_type<T, tl::half>::value) check("mma_m16n8k16_f16f16 (f16 accumulators)", dH.download() == want);
}

template <bool Signed>
static void run_mma_int8() {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> v8(Signed ? -128 : 0, Signed ? 127 : 255), cdist(-100000, 100000);
  std::vector<unsigned char> A(16 * 32), B(32 * 8);
  std::vector<int> Ai(16 * 32), Bi(32 * 8), C(128), want(128);
  for (int i = 0; i < 512; ++i) {
    Ai[i] = v8(rng);
    A[i] = static_cast<unsigned char>(Ai[i]);
  }
  for (int i = 0; i < 256; ++i) {
    Bi[i] = v8(rng);
    B[i] = static_cast<unsigned char>(Bi[i]);
  }
  for (int i = 0; i < 128; ++i) C[i] = cdist(rng);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      int s = C[m * 8 + n];
      for (int k = 0; k < 32; ++k) s += Ai[m * 32 + k] * Bi[k * 8 + n];
      want[m * 8 + n] = s;
    }
  DevBuf<unsigned char> dA(A), dB(B);
  DevBuf<int> dC(C), dD(128);
  k_mma_int8<Signed><<<1, 32>>>(dA.ptr, dB.ptr, dC.ptr, dD.ptr);
  sync_check("k_mma_int8");
  check(Signed ? "mma_m16n8k32_s8s32 vs CPU matmul (documented layout)" : "mma_m16n8k32_u8s32 vs CPU matmul",
        dD.download() == want);
}

static void test_mma() {
  run_mma_16bit<tl::half>("f16", ref_to_half);
  run_mma_16bit<tl::bfloat16>("bf16", ref_to_bf16);
  run_mma_int8<true>();
  run_mma_int8<false>();

  // tf32: small integers are exact -> exact result; general floats vs a rounded-input reference.
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> small(-8, 8);
  std::uniform_real_distribution<float> uf(-1.0f, 1.0f);
  std::vector<float> A(128), B(64), C(128), Ag(128), Bg(64);
  for (int i = 0; i < 128; ++i) {
    A[i] = static_cast<float>(small(rng));
    C[i] = static_cast<float>(small(rng));
    Ag[i] = uf(rng);
  }
  for (int i = 0; i < 64; ++i) {
    B[i] = static_cast<float>(small(rng));
    Bg[i] = uf(rng);
  }
  const std::vector<float> R = {1.0f + std::ldexp(1.0f, -11),
                                1.0f + std::ldexp(1.0f, -11) - std::ldexp(1.0f, -23),
                                -(1.0f + 3 * std::ldexp(1.0f, -11)),
                                3.14159265f,
                                1e-30f,
                                INFINITY,
                                -2.0f,
                                0.1f};
  std::vector<float> want(128), want_g(128);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      float s = C[m * 8 + n];
      double sg = C[m * 8 + n];
      for (int k = 0; k < 8; ++k) {
        s += A[m * 8 + k] * B[k * 8 + n];
        sg += static_cast<double>(bitsf(ref_tf32_rna(Ag[m * 8 + k]))) * bitsf(ref_tf32_rna(Bg[k * 8 + n]));
      }
      want[m * 8 + n] = s;
      want_g[m * 8 + n] = static_cast<float>(sg);
    }
  DevBuf<float> dA(A), dB(B), dC(C), dD(128), dD2(128), dR(R);
  DevBuf<uint32_t> dRt(8);
  k_mma_tf32<<<1, 32>>>(dA.ptr, dB.ptr, dC.ptr, dD.ptr, dD2.ptr, dR.ptr, dRt.ptr);
  sync_check("k_mma_tf32");
  check("mma_m16n8k8_tf32f32 (tf32 bits) vs CPU matmul (documented layout)", dD.download() == want);
  check("mma_m16n8k8_tf32f32 (float overload) matches", dD2.download() == want);
  const auto rt = dRt.download();
  bool ok_rt = true;
  for (int i = 0; i < 8; ++i) ok_rt = ok_rt && (rt[i] & 0x1fffu) == 0 && rt[i] == ref_tf32_rna(R[i]);
  check("float_to_tf32 rounds to nearest, ties away (cvt.rna)", ok_rt);
  DevBuf<float> dAg(Ag), dBg(Bg);
  k_mma_tf32<<<1, 32>>>(dAg.ptr, dBg.ptr, dC.ptr, dD.ptr, dD2.ptr, dR.ptr, dRt.ptr);
  sync_check("k_mma_tf32 (random)");
  const auto got_g = dD2.download();
  bool ok_g = true;
  for (int i = 0; i < 128; ++i) ok_g = ok_g && close_to(got_g[i], want_g[i], 1e-5, 1e-5);
  check("mma_m16n8k8_tf32f32 on general floats (inputs rounded to tf32)", ok_g);
}

// ---------------------------------------------------------------------------
// 6. reductions
// ---------------------------------------------------------------------------

/// Test value of lane / thread i: small integers, exact in every type.
__host__ __device__ int reduce_value(int i) { return (i * 37 + 11) % 23 - 11; }

template <int W, typename T>
__device__ void warp_reduce_all(T* out, int lane) {
  const T v = static_cast<T>(reduce_value(lane));
  out[lane * 3 + 0] = tl::warp_reduce_sum<W>(v);
  out[lane * 3 + 1] = tl::warp_reduce_max<W>(v);
  out[lane * 3 + 2] = tl::warp_reduce_min<W>(v);
}

// Output layout: [width index 0..5][lane][sum, max, min], widths 32,16,8,4,2,1.
template <typename T>
__global__ void k_warp_reduce(T* out) {
  const int lane = threadIdx.x;
  warp_reduce_all<32>(out + 0 * 96, lane);
  warp_reduce_all<16>(out + 1 * 96, lane);
  warp_reduce_all<8>(out + 2 * 96, lane);
  warp_reduce_all<4>(out + 3 * 96, lane);
  warp_reduce_all<2>(out + 4 * 96, lane);
  warp_reduce_all<1>(out + 5 * 96, lane);
  // Only the group of lanes 8..15 takes part: a group needs only its own lanes.
  if (lane >= 8 && lane < 16) out[6 * 96 + lane] = tl::warp_reduce_sum<8>(static_cast<T>(reduce_value(lane)));
}

template <typename T>
static bool check_warp_reduce(const std::vector<T>& o) {
  const int widths[6] = {32, 16, 8, 4, 2, 1};
  for (int w = 0; w < 6; ++w) {
    const int W = widths[w];
    for (int lane = 0; lane < 32; ++lane) {
      const int base = lane / W * W;
      double s = 0, mx = -1e9, mn = 1e9;
      for (int i = base; i < base + W; ++i) {
        const double v = reduce_value(i);
        s += v;
        mx = std::max(mx, v);
        mn = std::min(mn, v);
      }
      const T* r = &o[w * 96 + lane * 3];
      if (static_cast<double>(r[0]) != s || static_cast<double>(r[1]) != mx || static_cast<double>(r[2]) != mn)
        return false;
    }
  }
  double s = 0;
  for (int i = 8; i < 16; ++i) s += reduce_value(i);
  for (int lane = 8; lane < 16; ++lane)
    if (static_cast<double>(o[6 * 96 + lane]) != s) return false;
  return true;
}

template <typename T>
static void run_warp_reduce(const char* name) {
  DevBuf<T> out(7 * 96);
  k_warp_reduce<T><<<1, 32>>>(out.ptr);
  sync_check("k_warp_reduce");
  check(std::string("warp_reduce_sum/max/min<W> for W=32..1, ") + name, check_warp_reduce(out.download()));
}

template <>
void run_warp_reduce<tl::half>(const char* name) {
  DevBuf<tl::half> out(7 * 96);
  k_warp_reduce<tl::half><<<1, 32>>>(out.ptr);
  sync_check("k_warp_reduce<half>");
  const auto raw = out.download();
  std::vector<float> o(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) o[i] = ref_half_to_float(raw[i].bits);
  check(std::string("warp_reduce_sum/max/min<W> for W=32..1, ") + name, check_warp_reduce(o));
}

template <>
void run_warp_reduce<tl::bfloat16>(const char* name) {
  DevBuf<tl::bfloat16> out(7 * 96);
  k_warp_reduce<tl::bfloat16><<<1, 32>>>(out.ptr);
  sync_check("k_warp_reduce<bf16>");
  const auto raw = out.download();
  std::vector<float> o(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) o[i] = ref_bf16_to_float(raw[i].bits);
  check(std::string("warp_reduce_sum/max/min<W> for W=32..1, ") + name, check_warp_reduce(o));
}

// NaN-propagating warp max/min: lane `nan_lane` holds NaN (none when -1); every lane of
// each W-group gets NaN exactly when the group holds the NaN lane.
template <int W, typename T>
__global__ void k_warp_reduce_nan(float* out, int nan_lane) {
  const int lane = threadIdx.x;
  const float v = lane == nan_lane ? __int_as_float(0x7fc00000) : static_cast<float>(reduce_value(lane));
  out[lane * 2 + 0] = static_cast<float>(tl::warp_reduce_max_nan<W>(static_cast<T>(v)));
  out[lane * 2 + 1] = static_cast<float>(tl::warp_reduce_min_nan<W>(static_cast<T>(v)));
}

template <int W, typename T>
static void run_warp_reduce_nan(const char* name) {
  bool ok = true;
  for (int nan_lane : {-1, 0, 13, 31}) {
    DevBuf<float> out(64);
    k_warp_reduce_nan<W, T><<<1, 32>>>(out.ptr, nan_lane);
    sync_check("k_warp_reduce_nan");
    const auto o = out.download();
    for (int lane = 0; lane < 32; ++lane) {
      const int base = lane / W * W;
      const bool has_nan = nan_lane >= base && nan_lane < base + W;
      double mx = -1e9, mn = 1e9;
      for (int i = base; i < base + W; ++i) {
        mx = std::max(mx, static_cast<double>(reduce_value(i)));
        mn = std::min(mn, static_cast<double>(reduce_value(i)));
      }
      if (has_nan) {
        ok &= std::isnan(o[lane * 2]) && std::isnan(o[lane * 2 + 1]);
      } else {
        // reduce_value's integers in [-11, 11] are exact in every T; the host must not convert
        // to tl::half itself (its conversions are device functions: calling one from host code
        // ended the process with status 1 and no message on the H200)
        ok &= o[lane * 2] == static_cast<float>(mx) && o[lane * 2 + 1] == static_cast<float>(mn);
      }
    }
  }
  check(std::string("warp_reduce_max_nan/min_nan<") + std::to_string(W) + ">, " + name, ok);
}

// Each thread writes [sum, max, min, sum of a second round] computed over threads 0..num_threads-1.
template <typename T>
__global__ void k_block_reduce(float* out, int num_threads) {
  __shared__ T ws[tl::kBlockReduceWorkspace];
  const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const T v = static_cast<T>(reduce_value(tid));
  const T s = tl::block_allreduce_sum(v, ws, num_threads);
  const T mx = tl::block_allreduce_max(v, ws, num_threads);
  const T mn = tl::block_allreduce_min(v, ws, num_threads);
  const T s2 = tl::block_allreduce_sum(static_cast<T>(tid % 3), ws, num_threads);  // back-to-back reuse
  out[tid * 4 + 0] = static_cast<float>(s);
  out[tid * 4 + 1] = static_cast<float>(mx);
  out[tid * 4 + 2] = static_cast<float>(mn);
  out[tid * 4 + 3] = static_cast<float>(s2);
}

template <typename T>
static void run_block_reduce(const char* name, dim3 block, int num_threads) {
  const int nthreads = static_cast<int>(block.x * block.y * block.z);
  DevBuf<float> out(nthreads * 4);
  k_block_reduce<T><<<1, block>>>(out.ptr, num_threads);
  sync_check("k_block_reduce");
  const auto o = out.download();
  double s = 0, mx = -1e9, mn = 1e9, s2 = 0;
  for (int i = 0; i < num_threads; ++i) {
    s += reduce_value(i);
    mx = std::max<double>(mx, reduce_value(i));
    mn = std::min<double>(mn, reduce_value(i));
    s2 += i % 3;
  }
  bool ok = true;
  for (int t = 0; t < nthreads; ++t)
    ok = ok && o[t * 4] == s && o[t * 4 + 1] == mx && o[t * 4 + 2] == mn && o[t * 4 + 3] == s2;
  char buf[160];
  std::snprintf(buf, sizeof buf, "block_allreduce_sum/max/min %s, block %ux%ux%u, num_threads %d", name, block.x,
                block.y, block.z, num_threads);
  check(buf, ok, ok ? "" : fmt("thread 0 got sum %g (want %g)", o[0], s));
}

static void test_reduce() {
  run_warp_reduce<float>("float");
  run_warp_reduce<double>("double");
  run_warp_reduce<int>("int32");
  run_warp_reduce<long long>("int64 (long long)");
  run_warp_reduce<int64_t>("int64_t");
  run_warp_reduce<tl::half>("half");
  run_warp_reduce<tl::bfloat16>("bfloat16");
  run_warp_reduce_nan<32, float>("float");
  run_warp_reduce_nan<8, float>("float");
  run_warp_reduce_nan<32, tl::half>("half");
  run_warp_reduce_nan<4, tl::bfloat16>("bfloat16");
  for (int n : {1, 17, 32, 100, 128, 256, 384}) {
    run_block_reduce<float>("float", dim3(n), n);
    run_block_reduce<int>("int32", dim3(n), n);
  }
  run_block_reduce<double>("double", dim3(384), 384);
  run_block_reduce<int64_t>("int64", dim3(100), 100);
  run_block_reduce<tl::half>("half", dim3(384), 384);
  run_block_reduce<tl::bfloat16>("bfloat16", dim3(100), 100);
  run_block_reduce<float>("float 2-D block", dim3(10, 7), 70);
  run_block_reduce<float>("float 3-D block", dim3(8, 4, 3), 96);
  run_block_reduce<float>("float, first 50 of 128 threads", dim3(128), 50);
  run_block_reduce<int>("int32, first 5 of 40 threads", dim3(40), 5);
  run_block_reduce<float>("float 1024 threads", dim3(1024), 1024);
}

// ---------------------------------------------------------------------------
// 7. atomics
// ---------------------------------------------------------------------------

// Every thread adds `inc` to *acc and records the value it saw.
template <typename T>
__global__ void k_atomic_add(T* acc, T* olds, float inc) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  olds[i] = tl::atomic_add(acc, inc);
}

template <typename T>
__global__ void k_atomic_add_shared(T* result, int per_thread) {
  __shared__ T acc;
  if (threadIdx.x == 0) acc = static_cast<T>(0);
  __syncthreads();
  for (int k = 0; k < per_thread; ++k) tl::atomic_add(&acc, 1);
  __syncthreads();
  if (threadIdx.x == 0) *result = acc;
}

// max / min over values v_i = reduce-style pattern scaled; records olds.
template <typename T>
__global__ void k_atomic_minmax(T* mx, T* mn, T* olds_max, const float* vals) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  olds_max[i] = tl::atomic_max(mx, vals[i]);
  tl::atomic_min(mn, vals[i]);
}

__global__ void k_atomic_misc(float* f, int8_t* c, int16_t* s, uint16_t* h_bits) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  // Four adjacent int8 counters in one word, each hammered by a quarter of the threads.
  tl::atomic_add(c + (i & 3), 1);
  tl::atomic_add(s + (i & 1), static_cast<int16_t>(-1));
  // NaN stays: max / min into a NaN leave it.
  tl::atomic_max(f + 0, 1.0f);
  tl::atomic_min(f + 1, 1.0f);
  // Mixed operand types: double value into float, int into half.
  tl::atomic_add(f + 2, 0.5);
  tl::atomic_add(reinterpret_cast<tl::half*>(h_bits), 1);
}

template <typename T>
static double to_d(T v) {
  return static_cast<double>(v);
}
template <>
double to_d<tl::half>(tl::half v) {
  return ref_half_to_float(v.bits);
}
template <>
double to_d<tl::bfloat16>(tl::bfloat16 v) {
  return ref_bf16_to_float(v.bits);
}

template <typename T>
static T from_d(double v);
template <>
float from_d<float>(double v) {
  return static_cast<float>(v);
}
template <>
double from_d<double>(double v) {
  return v;
}
template <>
int from_d<int>(double v) {
  return static_cast<int>(v);
}
template <>
long long from_d<long long>(double v) {
  return static_cast<long long>(v);
}
template <>
int64_t from_d<int64_t>(double v) {
  return static_cast<int64_t>(v);
}
template <>
tl::half from_d<tl::half>(double v) {
  return tl::half_from_bits(ref_to_half(v));
}
template <>
tl::bfloat16 from_d<tl::bfloat16>(double v) {
  return tl::bfloat16_from_bits(ref_to_bf16(v));
}

template <typename T>
static void run_atomic_add(const char* name, int blocks, int threads, float inc) {
  const int n = blocks * threads;
  DevBuf<T> acc(1), olds(n);
  k_atomic_add<T><<<blocks, threads>>>(acc.ptr, olds.ptr, inc);
  sync_check("k_atomic_add");
  const double total = to_d(acc.download()[0]);
  const auto o = olds.download();
  // Every add was exact, so the old values are exactly 0, inc, 2*inc, ... in some order.
  std::vector<long long> seen;
  for (const T& v : o) seen.push_back(static_cast<long long>(std::llround(to_d(v) / inc)));
  std::sort(seen.begin(), seen.end());
  bool perm = true;
  for (int i = 0; i < n; ++i) perm = perm && seen[i] == i;
  char buf[160];
  std::snprintf(buf, sizeof buf, "atomic_add %s, %d threads contending on one address", name, n);
  check(buf, total == static_cast<double>(n) * inc && perm,
        fmt("total %g, want %g", total, static_cast<double>(n) * inc));
}

template <typename T>
static void run_atomic_minmax(const char* name, int blocks, int threads) {
  const int n = blocks * threads;
  std::vector<float> vals(n);
  // Values exact in every tested type (bf16 has 8 significant bits): multiples of 8 up to +-1016.
  for (int i = 0; i < n; ++i) vals[i] = static_cast<float>(8 * ((i * 7919) % 255 - 127));
  DevBuf<float> dv(vals);
  const double init = 2048.0;  // exact in every tested type, beyond every value
  DevBuf<T> mx(std::vector<T>{from_d<T>(-init)}), mn(std::vector<T>{from_d<T>(init)}), olds(n);
  k_atomic_minmax<T><<<blocks, threads>>>(mx.ptr, mn.ptr, olds.ptr, dv.ptr);
  sync_check("k_atomic_minmax");
  const double want_max = *std::max_element(vals.begin(), vals.end());
  const double want_min = *std::min_element(vals.begin(), vals.end());
  const auto o = olds.download();
  bool olds_ok = true;
  for (int i = 0; i < n; ++i) {
    const double v = to_d(o[i]);
    olds_ok = olds_ok && v <= want_max &&
              (v == -init || std::find(vals.begin(), vals.end(), static_cast<float>(v)) != vals.end());
  }
  check(std::string("atomic_max / atomic_min ") + name + ", " + std::to_string(n) + " threads contending",
        to_d(mx.download()[0]) == want_max && to_d(mn.download()[0]) == want_min && olds_ok);
}

static void test_atomic() {
  run_atomic_add<float>("float", 64, 256, 1.0f);
  run_atomic_add<double>("double", 64, 256, 0.5f);
  run_atomic_add<int>("int32", 64, 256, 1.0f);
  run_atomic_add<unsigned>("uint32", 64, 256, 1.0f);
  run_atomic_add<long long>("int64 (long long)", 64, 256, 1.0f);
  run_atomic_add<int64_t>("int64_t", 64, 256, 1.0f);
  run_atomic_add<tl::half>("half", 8, 256, 1.0f);                   // exact up to 2048
  run_atomic_add<tl::bfloat16>("bfloat16", 1, 256, 1.0f);           // exact up to 256
  run_atomic_add<tl::bfloat16>("bfloat16 (x0.25)", 1, 256, 0.25f);  // every partial sum k/4 is exact
  {
    DevBuf<int64_t> acc(1), olds(4096);
    k_atomic_add<int64_t><<<16, 256>>>(acc.ptr, olds.ptr, -3.0f);
    sync_check("k_atomic_add<int64_t> negative");
    check("atomic_add int64 negative increments", acc.download()[0] == -3 * 4096);
  }
  {
    DevBuf<float> rf(1);
    DevBuf<tl::half> rh(1);
    DevBuf<int> ri(1);
    k_atomic_add_shared<float><<<1, 384>>>(rf.ptr, 10);
    k_atomic_add_shared<tl::half><<<1, 256>>>(rh.ptr, 4);
    k_atomic_add_shared<int><<<1, 100>>>(ri.ptr, 7);
    sync_check("k_atomic_add_shared");
    check("atomic_add on shared memory (float, half, int)",
          rf.download()[0] == 3840.0f && to_d(rh.download()[0]) == 1024.0 && ri.download()[0] == 700);
  }
  run_atomic_minmax<float>("float", 32, 256);
  run_atomic_minmax<double>("double", 32, 256);
  run_atomic_minmax<int>("int32", 32, 256);
  run_atomic_minmax<long long>("int64 (long long)", 32, 256);
  run_atomic_minmax<int64_t>("int64_t", 32, 256);
  run_atomic_minmax<tl::half>("half", 32, 256);
  run_atomic_minmax<tl::bfloat16>("bfloat16", 32, 256);
  {
    DevBuf<float> f(std::vector<float>{NAN, NAN, 0.0f});
    DevBuf<int8_t> c(4);
    DevBuf<int16_t> s(2);
    DevBuf<uint16_t> h(1);
    k_atomic_misc<<<8, 256>>>(f.ptr, c.ptr, s.ptr, h.ptr);
    sync_check("k_atomic_misc");
    const auto vf = f.download();
    const auto vc = c.download();
    const auto vs = s.download();
    // 2048 threads: each int8 counter gets 512 adds -> wraps to 0; check modulo 256.
    check("atomic_add int8 (sub-word CAS, 4 neighbours contending)",
          vc[0] == 0 && vc[1] == 0 && vc[2] == 0 && vc[3] == 0);
    check("atomic_add int16 (16-bit CAS)", vs[0] == -1024 && vs[1] == -1024);
    check("atomic_max / atomic_min leave a stored NaN", std::isnan(vf[0]) && std::isnan(vf[1]));
    check("atomic_add converts the operand (double -> float, int -> half)",
          vf[2] == 1024.0f && ref_half_to_float(h.download()[0]) == 2048.0f);
  }
  {
    // int8 without wrap-around: 100 threads each.
    DevBuf<int8_t> c(4);
    DevBuf<float> f(3);
    DevBuf<int16_t> s(2);
    DevBuf<uint16_t> h(1);
    k_atomic_misc<<<1, 400>>>(f.ptr, c.ptr, s.ptr, h.ptr);
    sync_check("k_atomic_misc 400");
    const auto vc = c.download();
    check("atomic_add int8 counts exactly", vc[0] == 100 && vc[1] == 100 && vc[2] == 100 && vc[3] == 100);
  }
}

// ---------------------------------------------------------------------------

// ----------------------------------------------------------------------- float8 hardware conversions
// sm_89+'s cvt.rn.satfinite.{e4m3,e5m2}x2.f32 and cvt.rn.f16x2.{e4m3,e5m2}x2 (float8.h's
// float_to_f8 / f8_to_float, this file being compiled with TL_FLOAT8_HW_CVT) against its
// integer conversions (float_bits_to_f8 / f8_to_float_bits): every 8-bit code
// widened, and narrowing of random floats, every code's neighbourhood and the midpoints
// between neighbouring codes (the ties). NaN inputs only need a NaN code back.

__global__ void k_f8_narrow(const float* in, unsigned char* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned int b = tl::detail::float_bits(in[i]);
  out[4 * i + 0] = tl::detail::float_bits_to_f8<tl::detail::e4m3fn_format>(b);
  out[4 * i + 1] = tl::detail::float_to_f8<tl::detail::e4m3fn_format>(in[i]);  // cvt (TL_FLOAT8_HW_CVT)
  out[4 * i + 2] = tl::detail::float_bits_to_f8<tl::detail::e5m2_format>(b);
  out[4 * i + 3] = tl::detail::float_to_f8<tl::detail::e5m2_format>(in[i]);
}

__global__ void k_f8_widen(unsigned int* out) {
  const unsigned char c = static_cast<unsigned char>(threadIdx.x);
  out[4 * threadIdx.x + 0] = tl::detail::f8_to_float_bits<tl::detail::e4m3fn_format>(c);
  out[4 * threadIdx.x + 1] = tl::detail::float_bits(tl::detail::f8_to_float<tl::detail::e4m3fn_format>(c));
  out[4 * threadIdx.x + 2] = tl::detail::f8_to_float_bits<tl::detail::e5m2_format>(c);
  out[4 * threadIdx.x + 3] = tl::detail::float_bits(tl::detail::f8_to_float<tl::detail::e5m2_format>(c));
}

static bool f8_is_nan(unsigned char c, bool e4m3) {
  const unsigned m = c & 0x7fu;
  return e4m3 ? m == 0x7fu : m > 0x7cu;
}

static void test_float8_hw() {
  DevBuf<unsigned int> dw(4 * 256);
  k_f8_widen<<<1, 256>>>(dw.ptr);
  sync_check("k_f8_widen");
  const auto w = dw.download();
  int bad_w = 0;
  for (int c = 0; c < 256; ++c) {
    for (int f = 0; f < 2; ++f) {
      const uint32_t sw = w[4 * c + 2 * f], hw = w[4 * c + 2 * f + 1];
      const bool both_nan = std::isnan(bitsf(sw)) && std::isnan(bitsf(hw));
      bad_w += !(sw == hw || both_nan);
    }
  }
  check("float8 hardware conversions: widening every code (e4m3, e5m2)", bad_w == 0,
        std::to_string(bad_w) + " mismatches");

  std::mt19937_64 rng(808);
  std::vector<float> in = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 448.0f, 464.0f, 480.0f, 57344.0f, 61440.0f,
                           1e-12f, -1e-12f, 3.4e38f};
  for (int i = 0; i < 1 << 20; ++i) in.push_back(bitsf(static_cast<uint32_t>(rng())));
  for (int f = 0; f < 2; ++f) {  // each code, its midpoint with the next, and their float neighbours
    for (int c = 0; c < 0x7f; ++c) {
      const float a = bitsf(w[4 * c + 2 * f]), b = bitsf(w[4 * (c + 1) + 2 * f]);
      if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) continue;
      const float mid = static_cast<float>((static_cast<double>(a) + b) / 2);
      for (float v : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY), std::nextafter(a, INFINITY)}) {
        in.push_back(v);
        in.push_back(-v);
      }
    }
  }
  DevBuf<float> din(in);
  DevBuf<unsigned char> dn(4 * in.size());
  const int n = static_cast<int>(in.size());
  k_f8_narrow<<<(n + 255) / 256, 256>>>(din.ptr, dn.ptr, n);
  sync_check("k_f8_narrow");
  const auto r = dn.download();
  int bad[2] = {0, 0};
  std::string first;
  for (int i = 0; i < n; ++i) {
    for (int f = 0; f < 2; ++f) {
      const unsigned char sw = r[4 * i + 2 * f], hw = r[4 * i + 2 * f + 1];
      const bool ok = std::isnan(in[i]) ? f8_is_nan(sw, f == 0) && f8_is_nan(hw, f == 0) : sw == hw;
      if (!ok) {
        ++bad[f];
        if (first.empty()) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "first at %.9g (%s): software code 0x%02x, hardware 0x%02x", in[i],
                        f == 0 ? "e4m3" : "e5m2", sw, hw);
          first = buf;
        }
      }
    }
  }
  check("float8 hardware conversions: narrowing to e4m3 (" + std::to_string(n) + " floats)", bad[0] == 0, first);
  check("float8 hardware conversions: narrowing to e5m2 (" + std::to_string(n) + " floats)", bad[1] == 0, first);
}

int main() {
  int dev = 0;
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  test_types();
  test_math();
  test_memory();
  test_ldmatrix();
  test_mma();
  test_reduce();
  test_atomic();
  if (prop.major * 10 + prop.minor >= 89) test_float8_hw();
  if (g_failures == 0) {
    std::printf("ALL PASS (%d checks)\n", g_checks);
  } else {
    std::printf("%d of %d checks FAILED\n", g_failures, g_checks);
  }
  return g_failures;
}
