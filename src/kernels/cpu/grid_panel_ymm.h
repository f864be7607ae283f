// The grid i-quants' decoded panels (grid_panel.h) on 256-bit registers: decoding (each type's
// GridRows::decode from kernels_lowbit_ymm.h) and the panel activations; each tier's file adds its product.
// Included after kernels_lowbit_ymm.h by each x86 tier's low-bit file; internal linkage.
#pragma once

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/grid_panel.h"
#include "kernels/cpu/kernels_lowbit_ymm.h"
#include "kernels/cpu/static_for.h"

namespace ferrum::kernels {
namespace {

// Stores a 32-element chunk given as int16 elements 0-15 (lo) and 16-31 (hi) in the panels' pair
// order: the even pairs (dwords 0, 2, ..) then the odd ones.
inline void store_pair_order(__m256i lo, __m256i hi, int16_t* out) {
  const __m256 a = _mm256_castsi256_ps(lo), b = _mm256_castsi256_ps(hi);
  const __m256i even = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(a, b, 0x88)), 0xD8);
  const __m256i odd = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), even);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16), odd);
}

// 8 int16 s0..s7 -> 16 int16 s0 s0 s1 s1 .. s7 s7 (the row kernels' scale of byte i is int16 i / 2).
inline __m256i pair_scales(__m128i s) {
  const __m256i w = _mm256_cvtepu16_epi32(s);
  return _mm256_or_si256(w, _mm256_slli_epi32(w, 16));
}

// Rows r < nr of type W (at w + r*ws) into the panel: level x sign x scale per element, and each
// super-block's factor.
template <class W>
void decode_panel(const uint8_t* w, size_t ws, int nr, int64_t n, int16_t* panel, float* pd) {
  const int64_t nb = n / 256;
  for (int r = 0; r < nr; ++r) {
    const auto* blocks = reinterpret_cast<const typename W::Block*>(w + r * ws);
    int16_t* row = panel + r * n;
    for (int64_t b = 0; b < nb; ++b) {
      pd[r * nb + b] = W::decode(blocks[b], [&](int g, __m256i mag, __m256i sgn, __m256i sc) {
        const __m256i v = _mm256_sign_epi8(mag, sgn);
        const __m256i lo = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)),
                                              pair_scales(_mm256_castsi256_si128(sc)));
        const __m256i hi = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(v, 1)),
                                              pair_scales(_mm256_extracti128_si256(sc, 1)));
        store_pair_order(lo, hi, row + 256 * b + 32 * g);
      });
    }
  }
}

// A Q8_K block's levels as int16 in the panels' pair order.
void panel_act_ymm(const BlockQ8_K& q, int16_t* levels) {
  for (int g = 0; g < 8; ++g) {
    const __m256i v = load32(q.qs + 32 * g);
    store_pair_order(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)),
                     _mm256_cvtepi8_epi16(_mm256_extracti128_si256(v, 1)), levels + 32 * g);
  }
}

// The activations of a panel product: t's int16 values and super-block scales.
struct PanelActs {
  const uint8_t* act;
  size_t stride;
  int64_t n;
  const int16_t* q(int t) const { return reinterpret_cast<const int16_t*>(act + t * stride); }
  const float* d(int t) const { return reinterpret_cast<const float*>(act + t * stride + 2 * n); }
};

// NR panel rows x NT tokens with a tier's integer product V (an int32 vector type Int, kStep int16
// values per load, zero/load/dot, and lanes: the 8 int32 lanes of the row kernels from a sum): per
// super-block the lanes' integer sums, then their conversion and multiply-add with d * a.d.
template <class V, int NR, int NT>
struct PanelTile {
  static void run(const int16_t* p, const float* pd, int64_t n, const PanelActs& a, float* y, int64_t ldy) {
    const int64_t nb = n / 256;
    __m256 acc[NR][NT];
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      typename V::Int s[NR][NT];
      for (int r = 0; r < NR; ++r)
        for (int t = 0; t < NT; ++t) s[r][t] = V::zero();
      static_for<256 / V::kStep>([&](auto h) {
        const int64_t i = 256 * b + V::kStep * h;
        typename V::Int wv[NR], av[NT];
        for (int r = 0; r < NR; ++r) wv[r] = V::load(p + r * n + i);
        for (int t = 0; t < NT; ++t) av[t] = V::load(a.q(t) + i);
        for (int r = 0; r < NR; ++r)
          for (int t = 0; t < NT; ++t) s[r][t] = V::dot(s[r][t], wv[r], av[t]);
      });
      for (int r = 0; r < NR; ++r)
        for (int t = 0; t < NT; ++t)
          acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(V::lanes(s[r][t])),
                                      _mm256_set1_ps(pd[r * nb + b] * a.d(t)[b]), acc[r][t]);
    }
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t) y[t * ldy + r] = hsum(acc[r][t]);
  }
};

// Tile<R, T>::run for the rn <= MR rows and tn <= MT tokens left (every smaller tile instantiated).
template <template <int, int> class Tile, int R, int T>
void panel_tile(int rn, int tn, const int16_t* p, const float* pd, int64_t n, const PanelActs& a, float* y,
                int64_t ldy) {
  if constexpr (R > 1)
    if (rn < R) return panel_tile<Tile, R - 1, T>(rn, tn, p, pd, n, a, y, ldy);
  if constexpr (T > 1)
    if (tn < T) return panel_tile<Tile, R, T - 1>(rn, tn, p, pd, n, a, y, ldy);
  Tile<R, T>::run(p, pd, n, a, y, ldy);
}

// nr panel rows x nt tokens through tiles of at most MR x MT.
template <template <int, int> class Tile, int MR, int MT>
void panel_product(const int16_t* p, const float* pd, int nr, int64_t n, const PanelActs& a, int nt, float* y,
                   int64_t ldy) {
  const int64_t nb = n / 256;
  for (int t = 0; t < nt; t += MT) {
    const PanelActs at{a.act + t * a.stride, a.stride, n};
    for (int r = 0; r < nr; r += MR)
      panel_tile<Tile, MR, MT>(std::min(MR, nr - r), std::min(MT, nt - t), p + r * n, pd + r * nb, n, at,
                               y + t * ldy + r, ldy);
  }
}

using PanelProduct = void (*)(const int16_t*, const float*, int, int64_t, const PanelActs&, int, float*,
                              int64_t);

// LowbitRows::PanelFn for type W with a tier's product.
template <class W, PanelProduct Product>
void grid_panel(const uint8_t* w, size_t ws, int nr, int64_t n, const uint8_t* act, size_t stride, int nt,
                float* y, int64_t ldy, uint8_t* scratch) {
  auto* panel = reinterpret_cast<int16_t*>(scratch);
  auto* pd = reinterpret_cast<float*>(scratch + static_cast<size_t>(kPanelRows) * 2 * n);
  decode_panel<W>(w, ws, nr, n, panel, pd);
  Product(panel, pd, nr, n, PanelActs{act, stride, n}, nt, y, ldy);
}

template <PanelProduct Product>
void set_grid_panels(LowbitRows& rows) {
  rows.panel_act = panel_act_ymm;
  rows.iq2_xxs_panel = grid_panel<IQ2XXS, Product>;
  rows.iq2_xs_panel = grid_panel<IQ2XS, Product>;
  rows.iq2_s_panel = grid_panel<IQ2S, Product>;
  rows.iq3_xxs_panel = grid_panel<IQ3XXS, Product>;
  rows.iq3_s_panel = grid_panel<IQ3S, Product>;
  rows.iq1_s_panel = grid_panel<IQ1S, Product>;
  rows.iq1_m_panel = grid_panel<IQ1M, Product>;
}

}  // namespace
}  // namespace ferrum::kernels
