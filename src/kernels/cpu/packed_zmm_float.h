// The float groups of the AVX-512 packed products (packed.h's 16-row F16 / BF16 layouts), shared by
// packed_avx512.cpp and kernels_avx512bf16.cpp, which differ in how a BF16 weight vector is
// multiplied. V says how: V::Act (activation element), V::W (a loaded weight vector), V::kIn
// (inputs per weight vector), V::load(p), V::madd(acc, w, a) (acc += w . activations at a,
// broadcast to every row). Include from AVX-512 files only.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/packed.h"
#include "kernels/cpu/packed_act.h"

namespace ferrum::kernels {

// Tokens per call: as many as the registers hold.
constexpr int kTileFloat = 8;

// Per 2 weight vectors: one multiply-add each per token, into even- and odd-vector accumulators
// (two chains: a lone token is not bound by the latency). The sequence per token does not depend on
// NT, so a token alone or in a batch gets the same bits.
template <class V, int NT>
void group_float(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const typename V::Act* a[NT];
  __m512 e[NT], o[NT];
  for (int t = 0; t < NT; ++t) {
    a[t] = reinterpret_cast<const typename V::Act*>(act + t * stride);
    e[t] = o[t] = _mm512_setzero_ps();
  }
  StreamPrefetch pf(g);
  for (int64_t k = 0; k < n; k += 2 * V::kIn) {
    if constexpr (NT >= kPrefetchTokens) pf.upto(g + 32 * (k + 2 * V::kIn));
    const typename V::W w0 = V::load(g + 32 * k), w1 = V::load(g + 32 * (k + V::kIn));
    for (int t = 0; t < NT; ++t) {
      e[t] = V::madd(e[t], w0, a[t] + k);
      o[t] = V::madd(o[t], w1, a[t] + k + V::kIn);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ldy, _mm512_add_ps(e[t], o[t]));
}

template <class V>
void float_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  with_nt<kTileFloat>(nt, [&](auto k) { group_float<V, decltype(k)::value>(g, n, a, s, y, l); });
}

}  // namespace ferrum::kernels
