// AVX-512 attention tile steps (head sizes that are multiples of 16). Keys are converted from the
// cache type 16 tokens x one dimension at a time (the cache stores them so); scores and outputs are
// blocked 4 rows x 64 columns in registers. A row's arithmetic is the same in a block of 4 and
// alone (see attention_tile.h).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/exp_avx512.h"

namespace ferrum::kernels {
namespace {

// 16 consecutive elements of a float cache type at e, as floats.
template <KvType T>
inline __m512 load16(const uint8_t* e) {
  static_assert(T != KvType::INT8, "INT8 caches take the integer steps");
  if constexpr (T == KvType::F32) return _mm512_loadu_ps(e);
  if constexpr (T == KvType::F16)
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e)));
  if constexpr (T == KvType::BF16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
}

// Tile columns [16 g, 16 g + 16) that are in [a, b), as a mask.
inline __mmask16 group_mask(int g, int a, int b) {
  const int lo = std::max(a - 16 * g, 0), hi = std::min(b - 16 * g, 16);
  return lo >= hi ? 0 : static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
}

// A group's keys are stored transposed: dimension d of its 16 tokens is one vector.
template <KvType T>
void load_keys_t(const uint8_t* const* groups, int a, int b, int h, int hd, float* kt) {
  const size_t es = kv_element_bytes(T);
  for (int g = 0; g < kTileGroups; ++g) {
    const __mmask16 m = group_mask(g, a, b);
    float* out = kt + 16 * g;
    if (m == 0) {
      for (int d = 0; d < hd; ++d) _mm512_storeu_ps(out + d * kKeyTile, _mm512_setzero_ps());
      continue;
    }
    const uint8_t* e = groups[g] + kv_key_offset(h, 0, 0, hd) * es;
    for (int d = 0; d < hd; ++d)
      _mm512_storeu_ps(out + d * kKeyTile, _mm512_maskz_mov_ps(m, load16<T>(e + d * kKvGroup * es)));
  }
}

void load_keys(const uint8_t* const* groups, int a, int b, KvType t, int h, int n_head_kv, int hd,
               float* kt) {
  if (t == KvType::INT8) return generic_tile_ops().load_keys(groups, a, b, t, h, n_head_kv, hd, kt);
  with_float_kv_type(t, [&]<KvType T>() { load_keys_t<T>(groups, a, b, h, hd, kt); });
}

template <KvType T>
void load_values_t(const uint8_t* const* groups, int a, int b, int h, int hd, float* vt) {
  for (int j = 0; j < b; ++j) {
    if (j < a) {
      for (int d0 = 0; d0 < hd; d0 += 16) _mm512_storeu_ps(vt + j * hd + d0, _mm512_setzero_ps());
      continue;
    }
    const uint8_t* e = kv_value_row<T>(groups, j, h, hd);
    for (int d0 = 0; d0 < hd; d0 += 16)
      _mm512_storeu_ps(vt + j * hd + d0, load16<T>(e + d0 * kv_element_bytes(T)));
  }
}

void load_values(const uint8_t* const* groups, int a, int b, KvType t, int h, int n_head_kv, int hd,
                 float* vt) {
  if (t == KvType::INT8) return generic_tile_ops().load_values(groups, a, b, t, h, n_head_kv, hd, vt);
  with_float_kv_type(t, [&]<KvType T>() { load_values_t<T>(groups, a, b, h, hd, vt); });
}

// NR query rows x the tile's 64 keys: 4 zmm accumulators per row.
template <int NR>
void scores_rows(const float* q, const float* kt, int hd, float scale, float* s) {
  __m512 acc[NR][4];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int d = 0; d < hd; ++d) {
    const float* k = kt + d * kKeyTile;
    const __m512 k0 = _mm512_loadu_ps(k), k1 = _mm512_loadu_ps(k + 16), k2 = _mm512_loadu_ps(k + 32),
                 k3 = _mm512_loadu_ps(k + 48);
    for (int r = 0; r < NR; ++r) {
      const __m512 qd = _mm512_set1_ps(q[r * hd + d]);
      acc[r][0] = _mm512_fmadd_ps(qd, k0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(qd, k1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(qd, k2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(qd, k3, acc[r][3]);
    }
  }
  const __m512 vs = _mm512_set1_ps(scale);
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) _mm512_storeu_ps(s + r * kKeyTile + 16 * c, _mm512_mul_ps(acc[r][c], vs));
}

void scores(const float* q, int R, const float* kt, int hd, float scale, float* s) {
  int r = 0;
  for (; r + 4 <= R; r += 4) scores_rows<4>(q + r * hd, kt, hd, scale, s + r * kKeyTile);
  for (; r < R; ++r) scores_rows<1>(q + r * hd, kt, hd, scale, s + r * kKeyTile);
}

// NR query rows x the 16 keys of a cache group, converted as load_keys converts them.
template <KvType T, int NR>
void scores_group_rows(const float* q, const uint8_t* group, int hd, float scale, float* s) {
  const size_t es = kv_element_bytes(T);
  const uint8_t* e = group + kv_key_offset(0, 0, 0, hd) * es;
  __m512 acc[NR];
  for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
  for (int d = 0; d < hd; ++d) {
    const __m512 k = load16<T>(e + d * kKvGroup * es);
    for (int r = 0; r < NR; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(q[r * hd + d]), k, acc[r]);
  }
  for (int r = 0; r < NR; ++r)
    _mm512_storeu_ps(s + r * kKeyTile, _mm512_mul_ps(acc[r], _mm512_set1_ps(scale)));
}

// INT8: NR quantized rows x the 16 keys. A 64-byte quad holds 4 dimensions of the 16 keys
// grouped by key (kv_format.h), so one vpdpbusd adds 4 products per key; C independent sums per
// row hide its latency (integer sums: the order does not change them).
template <int NR>
void scores_group_int8(const QueryRows& q, const uint8_t* e, const float* kscale, int hd, float scale,
                       float* s) {
  constexpr int C = NR >= 4 ? 2 : 4;
  __m512i acc[NR][C];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_si512();
  for (int d = 0; d < hd; d += 4 * C)
    for (int c = 0; c < C && d + 4 * c < hd; ++c) {
      const __m512i k = _mm512_loadu_si512(e + (d + 4 * c) * kKvGroup);
      for (int r = 0; r < NR; ++r) {
        int32_t q4;
        std::memcpy(&q4, q.q8 + r * hd + d + 4 * c, 4);
        acc[r][c] = _mm512_dpbusd_epi32(acc[r][c], k, _mm512_set1_epi32(q4));
      }
    }
  const __m512 ks = _mm512_loadu_ps(kscale);
  for (int r = 0; r < NR; ++r) {
    __m512i dot = _mm512_set1_epi32(-kInt8KeyBias * q.q8sum[r]);
    for (int c = 0; c < C; ++c) dot = _mm512_add_epi32(dot, acc[r][c]);
    const __m512 f = _mm512_mul_ps(ks, _mm512_set1_ps(q.qs[r] * scale));
    _mm512_storeu_ps(s + r * kKeyTile, _mm512_mul_ps(_mm512_cvtepi32_ps(dot), f));
  }
}

void scores_group(QueryRows q, int R, const uint8_t* group, KvType t, int h, int n_head_kv, int hd,
                  float scale, float* s) {
  if (t == KvType::INT8) {
    const uint8_t* e = group + kv_int8_key_offset(h, 0, 0, hd);
    const float* ks = kv_scales(group, h, hd);
    int r = 0;
    for (; r + 4 <= R; r += 4) scores_group_int8<4>(q.from(r), e, ks, hd, scale, s + r * kKeyTile);
    for (; r < R; ++r) scores_group_int8<1>(q.from(r), e, ks, hd, scale, s + r * kKeyTile);
    return;
  }
  with_float_kv_type(t, [&]<KvType T>() {
    const uint8_t* g = group + kv_key_offset(h, 0, 0, hd) * kv_element_bytes(T);
    int r = 0;
    for (; r + 4 <= R; r += 4) scores_group_rows<T, 4>(q.f + r * hd, g, hd, scale, s + r * kKeyTile);
    for (; r < R; ++r) scores_group_rows<T, 1>(q.f + r * hd, g, hd, scale, s + r * kKeyTile);
  });
}

void softmax_step(float* s, int R, float* m, float* l, float* c) {
  for (int r = 0; r < R; ++r) {
    float* x = s + r * kKeyTile;
    const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16), x2 = _mm512_loadu_ps(x + 32),
                 x3 = _mm512_loadu_ps(x + 48);
    const float tile_max = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(x0, x1), _mm512_max_ps(x2, x3)));
    const float mx = tile_max > m[r] ? tile_max : m[r];
    const __m512 vm = _mm512_set1_ps(mx);
    const __m512 e0 = exp16(_mm512_sub_ps(x0, vm)), e1 = exp16(_mm512_sub_ps(x1, vm));
    const __m512 e2 = exp16(_mm512_sub_ps(x2, vm)), e3 = exp16(_mm512_sub_ps(x3, vm));
    _mm512_storeu_ps(x, e0);
    _mm512_storeu_ps(x + 16, e1);
    _mm512_storeu_ps(x + 32, e2);
    _mm512_storeu_ps(x + 48, e3);
    const float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(e0, e1), _mm512_add_ps(e2, e3)));
    c[r] = std::exp(m[r] - mx);
    l[r] = l[r] * c[r] + sum;
    m[r] = mx;
  }
}

// NR rows x up to 64 output columns from column i (masks for the head's last columns).
template <int NR>
void accumulate_rows(const float* p, const float* vt, int n, int hd, int i, const float* c, float* acc) {
  __mmask16 mk[4];
  for (int k = 0; k < 4; ++k) {
    const int left = hd - i - 16 * k;
    mk[k] = left >= 16 ? 0xFFFF : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
  }
  __m512 a[NR][4];
  for (int r = 0; r < NR; ++r) {
    const __m512 cr = _mm512_set1_ps(c[r]);
    for (int k = 0; k < 4; ++k)
      a[r][k] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk[k], acc + r * hd + i + 16 * k), cr);
  }
  for (int j = 0; j < n; ++j) {
    const float* v = vt + j * hd + i;
    const __m512 v0 = _mm512_maskz_loadu_ps(mk[0], v), v1 = _mm512_maskz_loadu_ps(mk[1], v + 16);
    const __m512 v2 = _mm512_maskz_loadu_ps(mk[2], v + 32), v3 = _mm512_maskz_loadu_ps(mk[3], v + 48);
    for (int r = 0; r < NR; ++r) {
      const __m512 w = _mm512_set1_ps(p[r * kKeyTile + j]);
      a[r][0] = _mm512_fmadd_ps(w, v0, a[r][0]);
      a[r][1] = _mm512_fmadd_ps(w, v1, a[r][1]);
      a[r][2] = _mm512_fmadd_ps(w, v2, a[r][2]);
      a[r][3] = _mm512_fmadd_ps(w, v3, a[r][3]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < 4; ++k) _mm512_mask_storeu_ps(acc + r * hd + i + 16 * k, mk[k], a[r][k]);
}

void accumulate(const float* p, int R, const float* vt, int n, int hd, const float* c, float* acc) {
  for (int i = 0; i < hd; i += 64) {
    int r = 0;
    for (; r + 4 <= R; r += 4) accumulate_rows<4>(p + r * kKeyTile, vt, n, hd, i, c + r, acc + r * hd);
    for (; r < R; ++r) accumulate_rows<1>(p + r * kKeyTile, vt, n, hd, i, c + r, acc + r * hd);
  }
}

// NR rows x 16 NV output columns from column i, value rows converted from the cache in registers
// (NV a constant, so the accumulators stay in registers).
template <KvType T, int NR, int NV>
void accumulate_cached(const float* p, const uint8_t* const* groups, int a, int n, int h, int hd, int i,
                       const float* c, float* acc) {
  __m512 acc_r[NR][NV];
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k) {
      acc_r[r][k] = _mm512_loadu_ps(acc + r * hd + i + 16 * k);
      if (c) acc_r[r][k] = _mm512_mul_ps(acc_r[r][k], _mm512_set1_ps(c[r]));
    }
  for (int j = a; j < n; ++j) {
    const uint8_t* e = kv_value_row<T>(groups, j, h, hd) + i * kv_element_bytes(T);
    __m512 v[NV];
    for (int k = 0; k < NV; ++k) v[k] = load16<T>(e + 16 * k * kv_element_bytes(T));
    for (int r = 0; r < NR; ++r) {
      const __m512 w = _mm512_set1_ps(p[r * kKeyTile + j]);
      for (int k = 0; k < NV; ++k) acc_r[r][k] = _mm512_fmadd_ps(w, v[k], acc_r[r][k]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k) _mm512_storeu_ps(acc + r * hd + i + 16 * k, acc_r[r][k]);
}

// NR rows, all hd columns: 64 at a time, then the 16-column rest.
template <KvType T, int NR>
void accumulate_cached_rows(const float* p, const uint8_t* const* groups, int a, int n, int h, int hd,
                            const float* c, float* acc) {
  int i = 0;
  for (; i + 64 <= hd; i += 64) accumulate_cached<T, NR, 4>(p, groups, a, n, h, hd, i, c, acc);
  for (; i < hd; i += 16) accumulate_cached<T, NR, 1>(p, groups, a, n, h, hd, i, c, acc);
}

// INT8 values (attention_tile.h, kProbLevels). NR rows' x_j = p_j * vs_j of one group's columns
// (mask m) rounded to 16 bits, as int32 pairs (even token low, odd token high), and their ps.
template <int NR>
inline void quantize_probs(const float* p, const float* vs, __mmask16 m, int32_t (*pairs)[kKvGroup / 2],
                           float* ps) {
  const __m512 s = _mm512_maskz_loadu_ps(m, vs);
  for (int r = 0; r < NR; ++r) {
    const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, p + r * kKeyTile), s);
    const float mx = _mm512_reduce_max_ps(x);
    const float inv = mx > 0.0f ? kProbLevels / mx : 0.0f;
    const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(x, _mm512_set1_ps(inv)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(pairs[r]), _mm512_cvtepi32_epi16(q));
    ps[r] = mx / kProbLevels;
  }
}

// NR rows x 16 NV output columns from column i: integer sums over token pairs [jp0, jp1) of a group
// (values at e: the head's interleaved pairs), one vpdpwssd per 2 tokens x 16 columns x row.
template <int NR, int NV>
void accumulate_int8(const int32_t (*pairs)[kKvGroup / 2], const float* ps, const uint8_t* e, int jp0,
                     int jp1, int hd, int i, float* acc) {
  __m512i sum[NR][NV];
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k) sum[r][k] = _mm512_setzero_si512();
  for (int jp = jp0; jp < jp1; ++jp) {
    const uint8_t* v = e + jp * 2 * hd + 2 * i;
    __m512i w[NV];
    for (int k = 0; k < NV; ++k)
      w[k] = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 32 * k)));
    for (int r = 0; r < NR; ++r) {
      const __m512i pr = _mm512_set1_epi32(pairs[r][jp]);
      for (int k = 0; k < NV; ++k) sum[r][k] = _mm512_dpwssd_epi32(sum[r][k], w[k], pr);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k) {
      float* o = acc + r * hd + i + 16 * k;
      _mm512_storeu_ps(
          o, _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[r][k]), _mm512_set1_ps(ps[r]), _mm512_loadu_ps(o)));
    }
}

// NR rows, columns [a, n), group by group.
template <int NR>
void accumulate_int8_rows(const float* p, const uint8_t* const* groups, int a, int n, int h, int n_head_kv,
                          int hd, float* acc) {
  for (int g = a / kKvGroup; g * kKvGroup < n; ++g) {
    const int lo = std::max(a - kKvGroup * g, 0), hi = std::min(n - kKvGroup * g, kKvGroup);
    int32_t pairs[NR][kKvGroup / 2];
    float ps[NR];
    quantize_probs<NR>(p + kKvGroup * g, kv_scales(groups[g], h, hd), group_mask(g, a, n), pairs, ps);
    const uint8_t* e = groups[g] + kv_int8_value_offset(h, 0, 0, hd);
    int i = 0;
    for (; i + 64 <= hd; i += 64) accumulate_int8<NR, 4>(pairs, ps, e, lo / 2, (hi + 1) / 2, hd, i, acc);
    for (; i < hd; i += 16) accumulate_int8<NR, 1>(pairs, ps, e, lo / 2, (hi + 1) / 2, hd, i, acc);
  }
}

void rescale(int R, int hd, const float* c, float* acc) {
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < hd; i += 16)
      _mm512_storeu_ps(acc + r * hd + i,
                       _mm512_mul_ps(_mm512_loadu_ps(acc + r * hd + i), _mm512_set1_ps(c[r])));
}

void accumulate_rows(const float* p, int R, const uint8_t* const* groups, int a, int n, KvType t, int h,
                     int n_head_kv, int hd, const float* c, float* acc) {
  if (t == KvType::INT8) {
    if (c) rescale(R, hd, c, acc);
    int r = 0;
    for (; r + 4 <= R; r += 4)
      accumulate_int8_rows<4>(p + r * kKeyTile, groups, a, n, h, n_head_kv, hd, acc + r * hd);
    for (; r < R; ++r)
      accumulate_int8_rows<1>(p + r * kKeyTile, groups, a, n, h, n_head_kv, hd, acc + r * hd);
    return;
  }
  with_float_kv_type(t, [&]<KvType T>() {
    int r = 0;
    for (; r + 4 <= R; r += 4)
      accumulate_cached_rows<T, 4>(p + r * kKeyTile, groups, a, n, h, hd, c ? c + r : c, acc + r * hd);
    for (; r < R; ++r)
      accumulate_cached_rows<T, 1>(p + r * kKeyTile, groups, a, n, h, hd, c ? c + r : c, acc + r * hd);
  });
}

const AttentionTileOps kAvx512 = {load_keys,    load_values, scores,         scores_group,
                                  softmax_step, accumulate,  accumulate_rows};

}  // namespace

const AttentionTileOps& avx512_tile_ops() {
  return kAvx512;
}

}  // namespace ferrum::kernels
