// AVX2 + FMA attention tile steps (head sizes that are multiples of 8), every cache type; INT8 with
// the integer steps of attention_tile.h (vpmaddubsw / vpmaddwd). Keys are converted from the cache 8 tokens x
// one dimension at a time (a cache group stores dimension d of its 16 tokens together); with 16 ymm registers
// scores are blocked 2 rows x 32 keys and outputs 2 rows x 32 columns. A row's arithmetic is the same blocked
// or alone, and the same as the generic and AVX-512 steps' (one chain of fused multiply-adds per score in
// order of the dimension, per output element in order of the key).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/exp_avx2.h"

namespace ferrum::kernels {
namespace {

// 8 consecutive elements of a float cache type at e, as floats.
template <KvType T>
inline __m256 load8(const uint8_t* e) {
  static_assert(T != KvType::INT8, "INT8 caches take the integer steps");
  if constexpr (T == KvType::F32) return _mm256_loadu_ps(reinterpret_cast<const float*>(e));
  if constexpr (T == KvType::F16)
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(e)));
  if constexpr (T == KvType::BF16) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(e)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
}

// All-ones in the lanes k of tile columns [base, base + 8) with a <= base + k < b.
inline __m256 lane_mask(int base, int a, int b) {
  const __m256i k = _mm256_add_epi32(_mm256_set1_epi32(base), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i ge_a = _mm256_cmpgt_epi32(k, _mm256_set1_epi32(a - 1)),
                lt_b = _mm256_cmpgt_epi32(_mm256_set1_epi32(b), k);
  return _mm256_castsi256_ps(_mm256_and_si256(ge_a, lt_b));
}

template <KvType T>
void load_keys_t(const uint8_t* const* groups, int a, int b, int h, int hd, float* kt) {
  const size_t es = kv_element_bytes(T);
  for (int g = 0; g < kTileGroups; ++g)
    for (int half = 0; half < 2; ++half) {
      const int base = kKvGroup * g + 8 * half;
      float* out = kt + base;
      if (base + 8 <= a || base >= b) {
        for (int d = 0; d < hd; ++d) _mm256_storeu_ps(out + d * kKeyTile, _mm256_setzero_ps());
        continue;
      }
      const __m256 m = lane_mask(base, a, b);
      const uint8_t* e = groups[g] + (kv_key_offset(h, 0, 0, hd) + 8 * half) * es;
      for (int d = 0; d < hd; ++d)
        _mm256_storeu_ps(out + d * kKeyTile, _mm256_and_ps(m, load8<T>(e + d * kKvGroup * es)));
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
      for (int d0 = 0; d0 < hd; d0 += 8) _mm256_storeu_ps(vt + j * hd + d0, _mm256_setzero_ps());
      continue;
    }
    const uint8_t* e = kv_value_row<T>(groups, j, h, hd);
    for (int d0 = 0; d0 < hd; d0 += 8)
      _mm256_storeu_ps(vt + j * hd + d0, load8<T>(e + d0 * kv_element_bytes(T)));
  }
}

void load_values(const uint8_t* const* groups, int a, int b, KvType t, int h, int n_head_kv, int hd,
                 float* vt) {
  if (t == KvType::INT8) return generic_tile_ops().load_values(groups, a, b, t, h, n_head_kv, hd, vt);
  with_float_kv_type(t, [&]<KvType T>() { load_values_t<T>(groups, a, b, h, hd, vt); });
}

// NR query rows x 32 keys from key j0: 4 ymm accumulators per row.
template <int NR>
void scores_rows(const float* q, const float* kt, int hd, float scale, int j0, float* s) {
  __m256 acc[NR][4];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int d = 0; d < hd; ++d) {
    const float* k = kt + d * kKeyTile + j0;
    const __m256 k0 = _mm256_loadu_ps(k), k1 = _mm256_loadu_ps(k + 8), k2 = _mm256_loadu_ps(k + 16),
                 k3 = _mm256_loadu_ps(k + 24);
    for (int r = 0; r < NR; ++r) {
      const __m256 qd = _mm256_broadcast_ss(q + r * hd + d);
      acc[r][0] = _mm256_fmadd_ps(qd, k0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(qd, k1, acc[r][1]);
      acc[r][2] = _mm256_fmadd_ps(qd, k2, acc[r][2]);
      acc[r][3] = _mm256_fmadd_ps(qd, k3, acc[r][3]);
    }
  }
  const __m256 vs = _mm256_set1_ps(scale);
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) _mm256_storeu_ps(s + r * kKeyTile + j0 + 8 * c, _mm256_mul_ps(acc[r][c], vs));
}

void scores(const float* q, int R, const float* kt, int hd, float scale, float* s) {
  for (int j0 = 0; j0 < kKeyTile; j0 += 32) {
    int r = 0;
    for (; r + 2 <= R; r += 2) scores_rows<2>(q + r * hd, kt, hd, scale, j0, s + r * kKeyTile);
    for (; r < R; ++r) scores_rows<1>(q + r * hd, kt, hd, scale, j0, s + r * kKeyTile);
  }
}

// NR query rows x the 16 keys of a cache group, converted as load_keys converts them.
template <KvType T, int NR>
void scores_group_rows(const float* q, const uint8_t* group, int hd, float scale, float* s) {
  const size_t es = kv_element_bytes(T);
  const uint8_t* e = group;
  __m256 acc[NR][2];
  for (int r = 0; r < NR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int d = 0; d < hd; ++d) {
    const __m256 k0 = load8<T>(e + d * kKvGroup * es), k1 = load8<T>(e + (d * kKvGroup + 8) * es);
    for (int r = 0; r < NR; ++r) {
      const __m256 qd = _mm256_broadcast_ss(q + r * hd + d);
      acc[r][0] = _mm256_fmadd_ps(qd, k0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(qd, k1, acc[r][1]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 2; ++c)
      _mm256_storeu_ps(s + r * kKeyTile + 8 * c, _mm256_mul_ps(acc[r][c], _mm256_set1_ps(scale)));
}

// INT8: NR quantized rows x the 16 keys of a group. A 64-byte quad holds 4 dimensions of the 16 keys
// grouped by key (kv_format.h): per half of 8 keys, vpmaddubsw of the keys' magnitudes against the
// query bytes carrying the keys' signs (the stored bytes minus the bias, so no product saturates:
// 2 x 128 x 127 < 2^15), widened by vpmaddwd. The integer dot products are those of the other
// ISAs, so are the scores.
template <int NR>
void scores_group_int8(const QueryRows& q, const uint8_t* e, const float* kscale, int hd, float scale,
                       float* s) {
  __m256i acc[NR][2];
  for (int r = 0; r < NR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80)), ones = _mm256_set1_epi16(1);
  for (int d = 0; d < hd; d += 4)
    for (int half = 0; half < 2; ++half) {
      const __m256i k = _mm256_xor_si256(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e + d * kKvGroup + 32 * half)), bias);
      const __m256i mag = _mm256_abs_epi8(k);
      for (int r = 0; r < NR; ++r) {
        int32_t q4;
        std::memcpy(&q4, q.q8 + r * hd + d, 4);
        const __m256i signed_q = _mm256_sign_epi8(_mm256_set1_epi32(q4), k);
        acc[r][half] =
            _mm256_add_epi32(acc[r][half], _mm256_madd_epi16(_mm256_maddubs_epi16(mag, signed_q), ones));
      }
    }
  for (int r = 0; r < NR; ++r) {
    const __m256 f = _mm256_set1_ps(q.qs[r] * scale);
    for (int half = 0; half < 2; ++half)
      _mm256_storeu_ps(s + r * kKeyTile + 8 * half,
                       _mm256_mul_ps(_mm256_cvtepi32_ps(acc[r][half]),
                                     _mm256_mul_ps(_mm256_loadu_ps(kscale + 8 * half), f)));
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

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

void softmax_step(float* s, int R, float* m, float* l, float* c) {
  for (int r = 0; r < R; ++r) {
    float* x = s + r * kKeyTile;
    __m256 v[8];
    __m256 mx8 = _mm256_set1_ps(m[r]);
    for (int k = 0; k < 8; ++k) mx8 = _mm256_max_ps(mx8, v[k] = _mm256_loadu_ps(x + 8 * k));
    const float mx = hmax(mx8);
    const __m256 vm = _mm256_set1_ps(mx);
    __m256 sum = _mm256_setzero_ps();
    for (int k = 0; k < 8; ++k) {
      const __m256 e = exp8(_mm256_sub_ps(v[k], vm));
      _mm256_storeu_ps(x + 8 * k, e);
      sum = _mm256_add_ps(sum, e);
    }
    c[r] = std::exp(m[r] - mx);
    l[r] = l[r] * c[r] + hsum(sum);
    m[r] = mx;
  }
}

// NR rows x 8 NV output columns from column i, value rows from vt (c: the rows' rescaling).
template <int NR, int NV>
void accumulate_block(const float* p, const float* vt, int n, int hd, int i, const float* c, float* acc) {
  __m256 a[NR][NV];
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k)
      a[r][k] = _mm256_mul_ps(_mm256_loadu_ps(acc + r * hd + i + 8 * k), _mm256_set1_ps(c[r]));
  for (int j = 0; j < n; ++j) {
    const float* v = vt + j * hd + i;
    __m256 vv[NV];
    for (int k = 0; k < NV; ++k) vv[k] = _mm256_loadu_ps(v + 8 * k);
    for (int r = 0; r < NR; ++r) {
      const __m256 w = _mm256_broadcast_ss(p + r * kKeyTile + j);
      for (int k = 0; k < NV; ++k) a[r][k] = _mm256_fmadd_ps(w, vv[k], a[r][k]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k) _mm256_storeu_ps(acc + r * hd + i + 8 * k, a[r][k]);
}

template <int NR>
void accumulate_nr(const float* p, const float* vt, int n, int hd, const float* c, float* acc) {
  int i = 0;
  for (; i + 32 <= hd; i += 32) accumulate_block<NR, 4>(p, vt, n, hd, i, c, acc);
  for (; i < hd; i += 8) accumulate_block<NR, 1>(p, vt, n, hd, i, c, acc);
}

void accumulate(const float* p, int R, const float* vt, int n, int hd, const float* c, float* acc) {
  int r = 0;
  for (; r + 2 <= R; r += 2) accumulate_nr<2>(p + r * kKeyTile, vt, n, hd, c + r, acc + r * hd);
  for (; r < R; ++r) accumulate_nr<1>(p + r * kKeyTile, vt, n, hd, c + r, acc + r * hd);
}

// NR rows x 8 NV output columns from column i, value rows converted from the cache in registers.
template <KvType T, int NR, int NV>
void accumulate_cached(const float* p, const uint8_t* const* groups, int a, int n, int h, int hd, int i,
                       const float* c, float* acc) {
  __m256 acc_r[NR][NV];
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k) {
      acc_r[r][k] = _mm256_loadu_ps(acc + r * hd + i + 8 * k);
      if (c) acc_r[r][k] = _mm256_mul_ps(acc_r[r][k], _mm256_set1_ps(c[r]));
    }
  for (int j = a; j < n; ++j) {
    const uint8_t* e = kv_value_row<T>(groups, j, h, hd) + i * kv_element_bytes(T);
    __m256 v[NV];
    for (int k = 0; k < NV; ++k) v[k] = load8<T>(e + 8 * k * kv_element_bytes(T));
    for (int r = 0; r < NR; ++r) {
      const __m256 w = _mm256_broadcast_ss(p + r * kKeyTile + j);
      for (int k = 0; k < NV; ++k) acc_r[r][k] = _mm256_fmadd_ps(w, v[k], acc_r[r][k]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k) _mm256_storeu_ps(acc + r * hd + i + 8 * k, acc_r[r][k]);
}

template <KvType T, int NR>
void accumulate_cached_rows(const float* p, const uint8_t* const* groups, int a, int n, int h, int hd,
                            const float* c, float* acc) {
  int i = 0;
  for (; i + 32 <= hd; i += 32) accumulate_cached<T, NR, 4>(p, groups, a, n, h, hd, i, c, acc);
  for (; i < hd; i += 8) accumulate_cached<T, NR, 1>(p, groups, a, n, h, hd, i, c, acc);
}

// INT8 values (attention_tile.h, kProbLevels). NR rows' x_j = p_j * vs_j of one group's columns
// [lo, hi) rounded to 16 bits, as int32 pairs (even token low, odd token high), and their ps.
template <int NR>
inline void quantize_probs(const float* p, const float* vs, int lo, int hi, int32_t (*pairs)[kKvGroup / 2],
                           float* ps) {
  const __m256 m0 = lane_mask(0, lo, hi), m1 = lane_mask(8, lo, hi);
  for (int r = 0; r < NR; ++r) {
    const __m256 x0 =
        _mm256_and_ps(m0, _mm256_mul_ps(_mm256_loadu_ps(p + r * kKeyTile), _mm256_loadu_ps(vs)));
    const __m256 x1 =
        _mm256_and_ps(m1, _mm256_mul_ps(_mm256_loadu_ps(p + r * kKeyTile + 8), _mm256_loadu_ps(vs + 8)));
    const float mx = std::max(0.0f, hmax(_mm256_max_ps(x0, x1)));
    const __m256 inv = _mm256_set1_ps(mx > 0.0f ? kProbLevels / mx : 0.0f);
    const __m256i q = _mm256_packs_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(x0, inv)),
                                         _mm256_cvtps_epi32(_mm256_mul_ps(x1, inv)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(pairs[r]), _mm256_permute4x64_epi64(q, 0xD8));
    ps[r] = mx / kProbLevels;
  }
}

// NR rows x 8 NV output columns from column i: integer sums over token pairs [jp0, jp1) of a group
// (values at e: the head's interleaved pairs), one vpmaddwd per 2 tokens x 8 columns x row.
template <int NR, int NV>
void accumulate_int8(const int32_t (*pairs)[kKvGroup / 2], const float* ps, const uint8_t* e, int jp0,
                     int jp1, int hd, int i, float* acc) {
  __m256i sum[NR][NV];
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k) sum[r][k] = _mm256_setzero_si256();
  for (int jp = jp0; jp < jp1; ++jp) {
    const uint8_t* v = e + jp * 2 * hd + 2 * i;
    __m256i w[NV];
    for (int k = 0; k < NV; ++k)
      w[k] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 16 * k)));
    for (int r = 0; r < NR; ++r) {
      const __m256i pr = _mm256_set1_epi32(pairs[r][jp]);
      for (int k = 0; k < NV; ++k) sum[r][k] = _mm256_add_epi32(sum[r][k], _mm256_madd_epi16(w[k], pr));
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k) {
      float* o = acc + r * hd + i + 8 * k;
      _mm256_storeu_ps(
          o, _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[r][k]), _mm256_set1_ps(ps[r]), _mm256_loadu_ps(o)));
    }
}

template <int NR>
void accumulate_int8_rows(const float* p, const uint8_t* const* groups, int a, int n, int h, int hd,
                          float* acc) {
  for (int g = a / kKvGroup; g * kKvGroup < n; ++g) {
    const int lo = std::max(a - kKvGroup * g, 0), hi = std::min(n - kKvGroup * g, kKvGroup);
    int32_t pairs[NR][kKvGroup / 2];
    float ps[NR];
    quantize_probs<NR>(p + kKvGroup * g, kv_scales(groups[g], h, hd), lo, hi, pairs, ps);
    const uint8_t* e = groups[g] + kv_int8_value_offset(h, 0, 0, hd);
    int i = 0;
    for (; i + 32 <= hd; i += 32) accumulate_int8<NR, 4>(pairs, ps, e, lo / 2, (hi + 1) / 2, hd, i, acc);
    for (; i < hd; i += 8) accumulate_int8<NR, 1>(pairs, ps, e, lo / 2, (hi + 1) / 2, hd, i, acc);
  }
}

void accumulate_rows(const float* p, int R, const uint8_t* const* groups, int a, int n, KvType t, int h,
                     int n_head_kv, int hd, const float* c, float* acc) {
  if (t == KvType::INT8) {
    if (c)
      for (int r = 0; r < R; ++r)
        for (int i = 0; i < hd; i += 8)
          _mm256_storeu_ps(acc + r * hd + i,
                           _mm256_mul_ps(_mm256_loadu_ps(acc + r * hd + i), _mm256_set1_ps(c[r])));
    int r = 0;
    for (; r + 2 <= R; r += 2) accumulate_int8_rows<2>(p + r * kKeyTile, groups, a, n, h, hd, acc + r * hd);
    for (; r < R; ++r) accumulate_int8_rows<1>(p + r * kKeyTile, groups, a, n, h, hd, acc + r * hd);
    return;
  }
  with_float_kv_type(t, [&]<KvType T>() {
    int r = 0;
    for (; r + 2 <= R; r += 2)
      accumulate_cached_rows<T, 2>(p + r * kKeyTile, groups, a, n, h, hd, c ? c + r : c, acc + r * hd);
    for (; r < R; ++r)
      accumulate_cached_rows<T, 1>(p + r * kKeyTile, groups, a, n, h, hd, c ? c + r : c, acc + r * hd);
  });
}

const AttentionTileOps kAvx2 = {load_keys,    load_values, scores,         scores_group,
                                softmax_step, accumulate,  accumulate_rows};

}  // namespace

const AttentionTileOps& avx2_tile_ops() {
  return kAvx2;
}

}  // namespace ferrum::kernels
