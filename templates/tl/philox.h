// SPDX-License-Identifier: Apache-2.0
/// \file Philox-4x32-10, the counter-based generator behind T.rng_*, shared by the CPU and
/// CUDA libraries so that a kernel draws the same numbers on both targets.
///
/// A thread's state is 12 words: the key (the 64-bit seed), a 128-bit counter (offset / 4 in
/// the low 64 bits, the sequence number in the high 64), the last block of four outputs and
/// the index of the next one. Each block of four 32-bit outputs is the Philox function of
/// the counter; the counter then steps by one. Floats: uniform in (0, 1] (as curand's),
/// normal by Box-Muller. The including header defines TL_RNG_FN (the function qualifier)
/// and provides tl::log, tl::sqrt, tl::cos for float and double.
#pragma once

namespace tl {

namespace detail {

TL_RNG_FN void philox_round(unsigned int (&c)[4], const unsigned int (&k)[2]) {
  const unsigned long long p0 = 0xD2511F53ull * c[0], p1 = 0xCD9E8D57ull * c[2];
  const unsigned int hi0 = static_cast<unsigned int>(p0 >> 32), lo0 = static_cast<unsigned int>(p0);
  const unsigned int hi1 = static_cast<unsigned int>(p1 >> 32), lo1 = static_cast<unsigned int>(p1);
  const unsigned int n0 = hi1 ^ c[1] ^ k[0], n2 = hi0 ^ c[3] ^ k[1];
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}

/// The four outputs of counter `ctr` under key `key` (10 rounds).
TL_RNG_FN void philox_block(const unsigned int* ctr, const unsigned int* key, unsigned int* out) {
  unsigned int c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  unsigned int k[2] = {key[0], key[1]};
  for (int r = 0; r < 10; ++r) {
    philox_round(c, k);
    if (r < 9) {
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
  }
  for (int i = 0; i < 4; ++i) out[i] = c[i];
}

/// The counter plus one (128-bit).
TL_RNG_FN void philox_step(unsigned int* ctr) {
  for (int i = 0; i < 4; ++i) {
    if (++ctr[i] != 0) break;
  }
}

}  // namespace detail

/// Starts a generator: key = seed, counter = (offset / 4, seq), next output offset % 4.
TL_RNG_FN void rng_init(unsigned int* s, unsigned long long seed, unsigned long long seq, unsigned long long off) {
  s[0] = static_cast<unsigned int>(seed);
  s[1] = static_cast<unsigned int>(seed >> 32);
  const unsigned long long block = off / 4;
  s[2] = static_cast<unsigned int>(block);
  s[3] = static_cast<unsigned int>(block >> 32);
  s[4] = static_cast<unsigned int>(seq);
  s[5] = static_cast<unsigned int>(seq >> 32);
  detail::philox_block(s + 2, s, s + 6);
  s[10] = static_cast<unsigned int>(off % 4);
}

/// The next 32 random bits.
TL_RNG_FN unsigned int rng_rand(unsigned int* s) {
  if (s[10] >= 4) {
    detail::philox_step(s + 2);
    detail::philox_block(s + 2, s, s + 6);
    s[10] = 0;
  }
  return s[6 + s[10]++];
}

/// Uniform in (0, 1] (24 bits, as curand_uniform).
TL_RNG_FN float rng_uniform(unsigned int* s) {
  return static_cast<float>(rng_rand(s) >> 8) * 5.9604644775390625e-8f + 5.9604644775390625e-8f;
}

/// Uniform in (0, 1] (53 bits).
TL_RNG_FN double rng_uniform_double(unsigned int* s) {
  const unsigned long long hi = rng_rand(s) >> 6, lo = rng_rand(s) >> 5;  // 26 + 27 bits
  return static_cast<double>((hi << 27) | lo) * 1.1102230246251565e-16 + 1.1102230246251565e-16;
}

/// Standard normal (Box-Muller on two uniforms).
TL_RNG_FN float rng_normal(unsigned int* s) {
  const float u1 = rng_uniform(s), u2 = rng_uniform(s);
  return tl::sqrt(-2.0f * tl::log(u1)) * tl::cos(6.2831853071795865f * u2);
}

/// Standard normal, in double.
TL_RNG_FN double rng_normal_double(unsigned int* s) {
  const double u1 = rng_uniform_double(s), u2 = rng_uniform_double(s);
  return tl::sqrt(-2.0 * tl::log(u1)) * tl::cos(6.283185307179586 * u2);
}

}  // namespace tl
