// AArch64 Advanced SIMD attention tile steps (baseline ARMv8.0, no extension; head sizes that are multiples
// of 4), every cache type; INT8 with the integer steps of attention_tile.h (smull / addp / sadalp). Keys are
// converted 4 tokens x one dimension at a time (a cache group stores dimension d of its 16 tokens together).
// With 32 vector registers, scores are blocked 4 rows x 16 keys and outputs 4 rows x 16 columns; the query
// (or probability) of 4 consecutive dimensions (keys) is loaded once and used lane by lane (fmla by element).
// A row's arithmetic is the same blocked or alone, and the same as the other ISAs' steps (one chain of fused
// multiply-adds per score in order of the dimension, per output element in order of the key).
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/attention_tile.h"
#include "kernels/cpu/exp_neon.h"

namespace ferrum::kernels {
namespace {

// 4 consecutive elements of a float cache type at e, as floats.
template <KvType T>
inline float32x4_t load4(const uint8_t* e) {
  static_assert(T != KvType::INT8, "INT8 caches take the integer steps");
  if constexpr (T == KvType::F32) return vld1q_f32(reinterpret_cast<const float*>(e));
  if constexpr (T == KvType::F16)
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(e))));
  if constexpr (T == KvType::BF16)
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(e)), 16));
}

// All-ones in the lanes k of tile columns [base, base + 4) with a <= base + k < b.
inline uint32x4_t lane_mask(int base, int a, int b) {
  static const int32_t kIota[4] = {0, 1, 2, 3};
  const int32x4_t k = vaddq_s32(vdupq_n_s32(base), vld1q_s32(kIota));
  return vandq_u32(vcgeq_s32(k, vdupq_n_s32(a)), vcltq_s32(k, vdupq_n_s32(b)));
}
inline float32x4_t masked(uint32x4_t m, float32x4_t v) {
  return vreinterpretq_f32_u32(vandq_u32(m, vreinterpretq_u32_f32(v)));
}

// Calls f.template operator()<L>() for L = 0..3 (lane indices must be constants).
template <typename F>
inline void for_lanes(F&& f) {
  f.template operator()<0>();
  f.template operator()<1>();
  f.template operator()<2>();
  f.template operator()<3>();
}

// Calls f.template operator()<N>() for the run-time n in [1, 4] (row blocks' remainders).
template <typename F>
inline void with_rows(int n, F&& f) {
  switch (n) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    case 4:
      return f.template operator()<4>();
  }
}

template <KvType T>
void load_keys_t(const uint8_t* const* groups, int a, int b, int h, int hd, float* kt) {
  const size_t es = kv_element_bytes(T);
  for (int g = 0; g < kTileGroups; ++g) {
    float* out = kt + kKvGroup * g;
    if (kKvGroup * (g + 1) <= a || kKvGroup * g >= b) {
      for (int d = 0; d < hd; ++d)
        for (int c = 0; c < 4; ++c) vst1q_f32(out + d * kKeyTile + 4 * c, vdupq_n_f32(0.0f));
      continue;
    }
    uint32x4_t m[4];
    for (int c = 0; c < 4; ++c) m[c] = lane_mask(kKvGroup * g + 4 * c, a, b);
    const uint8_t* e = groups[g] + kv_key_offset(h, 0, 0, hd) * es;
    for (int d = 0; d < hd; ++d)
      for (int c = 0; c < 4; ++c)
        vst1q_f32(out + d * kKeyTile + 4 * c, masked(m[c], load4<T>(e + (d * kKvGroup + 4 * c) * es)));
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
      for (int d0 = 0; d0 < hd; d0 += 4) vst1q_f32(vt + j * hd + d0, vdupq_n_f32(0.0f));
      continue;
    }
    const uint8_t* e = kv_value_row<T>(groups, j, h, hd);
    for (int d0 = 0; d0 < hd; d0 += 4) vst1q_f32(vt + j * hd + d0, load4<T>(e + d0 * kv_element_bytes(T)));
  }
}

void load_values(const uint8_t* const* groups, int a, int b, KvType t, int h, int n_head_kv, int hd,
                 float* vt) {
  if (t == KvType::INT8) return generic_tile_ops().load_values(groups, a, b, t, h, n_head_kv, hd, vt);
  with_float_kv_type(t, [&]<KvType T>() { load_values_t<T>(groups, a, b, h, hd, vt); });
}

// NR query rows x 16 keys, the keys of dimension d given by key(d, c) (4 vectors, c < 4): 4 x NR
// accumulators; each row's 4 query values of dimensions d..d+3 are loaded once and used by lane.
template <int NR, typename K>
inline void score_block(const float* q, int hd, float scale, K&& key, float* s) {
  float32x4_t acc[NR][4];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) acc[r][c] = vdupq_n_f32(0.0f);
  for (int d = 0; d < hd; d += 4) {
    float32x4_t qv[NR];
    for (int r = 0; r < NR; ++r) qv[r] = vld1q_f32(q + r * hd + d);
    for_lanes([&]<int L>() {
      float32x4_t k[4];
      for (int c = 0; c < 4; ++c) k[c] = key(d + L, c);
      for (int r = 0; r < NR; ++r)
        for (int c = 0; c < 4; ++c) acc[r][c] = vfmaq_laneq_f32(acc[r][c], k[c], qv[r], L);
    });
  }
  const float32x4_t vs = vdupq_n_f32(scale);
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) vst1q_f32(s + r * kKeyTile + 4 * c, vmulq_f32(acc[r][c], vs));
}

void scores(const float* q, int R, const float* kt, int hd, float scale, float* s) {
  for (int j0 = 0; j0 < kKeyTile; j0 += 16) {
    const auto key = [&](int d, int c) { return vld1q_f32(kt + d * kKeyTile + j0 + 4 * c); };
    int r = 0;
    for (; r + 4 <= R; r += 4) score_block<4>(q + r * hd, hd, scale, key, s + r * kKeyTile + j0);
    if (r < R)
      with_rows(R - r, [&]<int N>() { score_block<N>(q + r * hd, hd, scale, key, s + r * kKeyTile + j0); });
  }
}

// INT8: NR quantized rows x the 16 keys of a group. A 64-byte quad holds 4 dimensions of the 16 keys
// grouped by key (kv_format.h), 4 keys per vector: smull / smull2 of the keys (stored bytes minus the
// bias) against the row's 4 query bytes repeated, addp of neighbouring products (2 x 128 x 127 < 2^15:
// no overflow), then sadalp into one int32 lane per key. The integer dot products are those of the
// other ISAs, so are the scores.
template <int NR>
void scores_group_int8(const QueryRows& q, const uint8_t* e, const float* kscale, int hd, float scale,
                       float* s) {
  int32x4_t acc[NR][4];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) acc[r][c] = vdupq_n_s32(0);
  const uint8x16_t bias = vdupq_n_u8(kInt8KeyBias);
  for (int d = 0; d < hd; d += 4) {
    int8x16_t k[4];
    for (int c = 0; c < 4; ++c)
      k[c] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(e + d * kKvGroup + 16 * c), bias));
    for (int r = 0; r < NR; ++r) {
      int32_t q4;
      std::memcpy(&q4, q.q8 + r * hd + d, 4);
      const int8x16_t qq = vreinterpretq_s8_s32(vdupq_n_s32(q4));
      for (int c = 0; c < 4; ++c) {
        const int16x8_t lo = vmull_s8(vget_low_s8(k[c]), vget_low_s8(qq)), hi = vmull_high_s8(k[c], qq);
        acc[r][c] = vpadalq_s16(acc[r][c], vpaddq_s16(lo, hi));
      }
    }
  }
  for (int r = 0; r < NR; ++r) {
    const float32x4_t f = vdupq_n_f32(q.qs[r] * scale);
    for (int c = 0; c < 4; ++c)
      vst1q_f32(s + r * kKeyTile + 4 * c,
                vmulq_f32(vcvtq_f32_s32(acc[r][c]), vmulq_f32(vld1q_f32(kscale + 4 * c), f)));
  }
}

void scores_group(QueryRows q, int R, const uint8_t* group, KvType t, int h, int n_head_kv, int hd,
                  float scale, float* s) {
  if (t == KvType::INT8) {
    const uint8_t* e = group + kv_int8_key_offset(h, 0, 0, hd);
    const float* ks = kv_scales(group, h, hd);
    int r = 0;
    for (; r + 4 <= R; r += 4) scores_group_int8<4>(q.from(r), e, ks, hd, scale, s + r * kKeyTile);
    if (r < R)
      with_rows(R - r, [&]<int N>() { scores_group_int8<N>(q.from(r), e, ks, hd, scale, s + r * kKeyTile); });
    return;
  }
  // The keys converted as load_keys converts them, straight from the group.
  with_float_kv_type(t, [&]<KvType T>() {
    const size_t es = kv_element_bytes(T);
    const uint8_t* g = group + kv_key_offset(h, 0, 0, hd) * es;
    const auto key = [&](int d, int c) { return load4<T>(g + (d * kKvGroup + 4 * c) * es); };
    int r = 0;
    for (; r + 4 <= R; r += 4) score_block<4>(q.f + r * hd, hd, scale, key, s + r * kKeyTile);
    if (r < R)
      with_rows(R - r, [&]<int N>() { score_block<N>(q.f + r * hd, hd, scale, key, s + r * kKeyTile); });
  });
}

void softmax_step(float* s, int R, float* m, float* l, float* c) {
  for (int r = 0; r < R; ++r) {
    float* x = s + r * kKeyTile;
    float32x4_t v[kKeyTile / 4];
    float32x4_t mx4 = vdupq_n_f32(m[r]);
    for (int k = 0; k < kKeyTile / 4; ++k) mx4 = vmaxq_f32(mx4, v[k] = vld1q_f32(x + 4 * k));
    const float mx = vmaxvq_f32(mx4);
    const float32x4_t vm = vdupq_n_f32(mx);
    // Two partial sums (fixed order): the adds need not wait on each other.
    float32x4_t sum[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    for (int k = 0; k < kKeyTile / 4; ++k) {
      const float32x4_t e = exp4(vsubq_f32(v[k], vm));
      vst1q_f32(x + 4 * k, e);
      sum[k % 2] = vaddq_f32(sum[k % 2], e);
    }
    c[r] = std::exp(m[r] - mx);
    l[r] = l[r] * c[r] + vaddvq_f32(vaddq_f32(sum[0], sum[1]));
    m[r] = mx;
  }
}

// NR rows x 4 NV output columns from column i, keys j in [j0, n): value(j, k) gives the 4 values of
// columns i + 4k of key j. The rows' probabilities of 4 keys are loaded once and used by lane; the last
// n - j0 mod 4 keys take fmla by a scalar (also fused, so each element's chain is the same either way).
// c: the rows' rescaling (nullptr: none).
template <int NR, int NV, typename V>
inline void accumulate_block(const float* p, int j0, int n, int hd, int i, const float* c, V&& value,
                             float* acc) {
  float32x4_t a[NR][NV];
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k) {
      a[r][k] = vld1q_f32(acc + r * hd + i + 4 * k);
      if (c) a[r][k] = vmulq_f32(a[r][k], vdupq_n_f32(c[r]));
    }
  int j = j0;
  for (; j + 4 <= n; j += 4) {
    float32x4_t w[NR];
    for (int r = 0; r < NR; ++r) w[r] = vld1q_f32(p + r * kKeyTile + j);
    for_lanes([&]<int L>() {
      float32x4_t v[NV];
      for (int k = 0; k < NV; ++k) v[k] = value(j + L, k);
      for (int r = 0; r < NR; ++r)
        for (int k = 0; k < NV; ++k) a[r][k] = vfmaq_laneq_f32(a[r][k], v[k], w[r], L);
    });
  }
  for (; j < n; ++j) {
    float32x4_t v[NV];
    for (int k = 0; k < NV; ++k) v[k] = value(j, k);
    for (int r = 0; r < NR; ++r)
      for (int k = 0; k < NV; ++k) a[r][k] = vfmaq_n_f32(a[r][k], v[k], p[r * kKeyTile + j]);
  }
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NV; ++k) vst1q_f32(acc + r * hd + i + 4 * k, a[r][k]);
}

// NR rows, all hd columns: blocks of 16, then of 4.
template <int NR, typename V>
inline void accumulate_nr(const float* p, int j0, int n, int hd, const float* c, V&& value, float* acc) {
  int i = 0;
  for (; i + 16 <= hd; i += 16)
    accumulate_block<NR, 4>(
        p, j0, n, hd, i, c, [&](int j, int k) { return value(j, i + 4 * k); }, acc);
  for (; i < hd; i += 4)
    accumulate_block<NR, 1>(
        p, j0, n, hd, i, c, [&](int j, int) { return value(j, i); }, acc);
}

// All R rows in blocks of 4 (value(j, i): the 4 values of columns i.. of key j).
template <typename V>
inline void accumulate_all(const float* p, int R, int j0, int n, int hd, const float* c, V&& value,
                           float* acc) {
  int r = 0;
  for (; r + 4 <= R; r += 4)
    accumulate_nr<4>(p + r * kKeyTile, j0, n, hd, c ? c + r : c, value, acc + r * hd);
  if (r < R)
    with_rows(R - r, [&]<int N>() {
      accumulate_nr<N>(p + r * kKeyTile, j0, n, hd, c ? c + r : c, value, acc + r * hd);
    });
}

void accumulate(const float* p, int R, const float* vt, int n, int hd, const float* c, float* acc) {
  accumulate_all(
      p, R, 0, n, hd, c, [&](int j, int i) { return vld1q_f32(vt + j * hd + i); }, acc);
}

// INT8 values (attention_tile.h, kProbLevels). NR rows' x_j = p_j * vs_j of one group's columns
// [lo, hi) rounded to 16 bits (P[r][j]), and their ps.
template <int NR>
inline void quantize_probs(const float* p, const float* vs, int lo, int hi, int16_t (*P)[kKvGroup],
                           float* ps) {
  uint32x4_t m[4];
  for (int c = 0; c < 4; ++c) m[c] = lane_mask(4 * c, lo, hi);
  for (int r = 0; r < NR; ++r) {
    float32x4_t x[4];
    for (int c = 0; c < 4; ++c)
      x[c] = masked(m[c], vmulq_f32(vld1q_f32(p + r * kKeyTile + 4 * c), vld1q_f32(vs + 4 * c)));
    const float mx = std::max(0.0f, vmaxvq_f32(vmaxq_f32(vmaxq_f32(x[0], x[1]), vmaxq_f32(x[2], x[3]))));
    const float32x4_t inv = vdupq_n_f32(mx > 0.0f ? kProbLevels / mx : 0.0f);
    // fcvtns: round to nearest, ties to even (as nearbyint and cvtps2dq).
    for (int c = 0; c < 4; ++c) vst1_s16(P[r] + 4 * c, vqmovn_s32(vcvtnq_s32_f32(vmulq_f32(x[c], inv))));
    ps[r] = mx / kProbLevels;
  }
}

// NR rows x 4 NC output columns from column i: integer sums over the token pairs [jp0, jp1) of a group
// (values at e: the head's interleaved pairs). 8 bytes hold 4 columns of 2 tokens; sign-extended, smlal
// by the pair's probabilities (P_even, P_odd, P_even, P_odd) adds both tokens' products into separate
// lanes, which addp joins at the end (|P| <= 32767, 16 tokens: no int32 overflow).
template <int NR, int NC>
void accumulate_int8(const int16_t (*P)[kKvGroup], const float* ps, const uint8_t* e, int jp0, int jp1,
                     int hd, int i, float* acc) {
  int32x4_t sum[NR][NC][2];
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NC; ++k) sum[r][k][0] = sum[r][k][1] = vdupq_n_s32(0);
  for (int jp = jp0; jp < jp1; ++jp) {
    const int8_t* v = reinterpret_cast<const int8_t*>(e) + jp * 2 * hd + 2 * i;
    int16x8_t w[NC];
    for (int k = 0; k + 1 < NC; k += 2) {
      const int8x16_t b = vld1q_s8(v + 8 * k);
      w[k] = vmovl_s8(vget_low_s8(b));
      w[k + 1] = vmovl_high_s8(b);
    }
    if (NC % 2) w[NC - 1] = vmovl_s8(vld1_s8(v + 8 * (NC - 1)));
    for (int r = 0; r < NR; ++r) {
      int32_t pair;
      std::memcpy(&pair, P[r] + 2 * jp, 4);
      const int16x8_t pr = vreinterpretq_s16_s32(vdupq_n_s32(pair));
      for (int k = 0; k < NC; ++k) {
        sum[r][k][0] = vmlal_s16(sum[r][k][0], vget_low_s16(w[k]), vget_low_s16(pr));
        sum[r][k][1] = vmlal_high_s16(sum[r][k][1], w[k], pr);
      }
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < NC; ++k) {
      float* o = acc + r * hd + i + 4 * k;
      const int32x4_t s = vpaddq_s32(sum[r][k][0], sum[r][k][1]);
      vst1q_f32(o, vfmaq_f32(vld1q_f32(o), vcvtq_f32_s32(s), vdupq_n_f32(ps[r])));
    }
}

template <int NR>
void accumulate_int8_rows(const float* p, const uint8_t* const* groups, int a, int n, int h, int hd,
                          float* acc) {
  for (int g = a / kKvGroup; g * kKvGroup < n; ++g) {
    const int lo = std::max(a - kKvGroup * g, 0), hi = std::min(n - kKvGroup * g, kKvGroup);
    int16_t P[NR][kKvGroup];
    float ps[NR];
    quantize_probs<NR>(p + kKvGroup * g, kv_scales(groups[g], h, hd), lo, hi, P, ps);
    const uint8_t* e = groups[g] + kv_int8_value_offset(h, 0, 0, hd);
    int i = 0;
    for (; i + 16 <= hd; i += 16) accumulate_int8<NR, 4>(P, ps, e, lo / 2, (hi + 1) / 2, hd, i, acc);
    for (; i < hd; i += 4) accumulate_int8<NR, 1>(P, ps, e, lo / 2, (hi + 1) / 2, hd, i, acc);
  }
}

void accumulate_rows(const float* p, int R, const uint8_t* const* groups, int a, int n, KvType t, int h,
                     int n_head_kv, int hd, const float* c, float* acc) {
  if (t == KvType::INT8) {
    if (c)
      for (int r = 0; r < R; ++r)
        for (int i = 0; i < hd; i += 4)
          vst1q_f32(acc + r * hd + i, vmulq_f32(vld1q_f32(acc + r * hd + i), vdupq_n_f32(c[r])));
    int r = 0;
    for (; r + 2 <= R; r += 2) accumulate_int8_rows<2>(p + r * kKeyTile, groups, a, n, h, hd, acc + r * hd);
    if (r < R) accumulate_int8_rows<1>(p + r * kKeyTile, groups, a, n, h, hd, acc + r * hd);
    return;
  }
  with_float_kv_type(t, [&]<KvType T>() {
    const auto value = [&](int j, int i) {
      return load4<T>(kv_value_row<T>(groups, j, h, hd) + i * kv_element_bytes(T));
    };
    accumulate_all(p, R, a, n, hd, c, value, acc);
  });
}

const AttentionTileOps kNeon = {load_keys,    load_values, scores,         scores_group,
                                softmax_step, accumulate,  accumulate_rows};

}  // namespace

const AttentionTileOps& neon_tile_ops() {
  return kNeon;
}

}  // namespace ferrum::kernels
