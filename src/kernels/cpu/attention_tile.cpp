// Generic C++ attention tile steps (scalar machines, head sizes the SIMD steps do not take), and the choice
// of the steps for the active ISA.
#include "kernels/cpu/attention_tile.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/kernels.h"

namespace ferrum::kernels {
namespace {

void load_keys(const uint8_t* const* groups, int a, int b, KvType t, int h, int n_head_kv, int hd,
               float* kt) {
  float row[kMaxHeadDim];
  for (int j = 0; j < kKeyTile; ++j) {
    const bool used = j >= a && j < b;
    if (used) kv_load_key(t, groups[j / kKvGroup], j % kKvGroup, h, n_head_kv, hd, row);
    for (int d = 0; d < hd; ++d) kt[d * kKeyTile + j] = used ? row[d] : 0.0f;
  }
}

void load_values(const uint8_t* const* groups, int a, int b, KvType t, int h, int n_head_kv, int hd,
                 float* vt) {
  for (int j = 0; j < b; ++j) {
    if (j < a)
      std::memset(vt + j * hd, 0, hd * sizeof(float));
    else
      kv_load_value(t, groups[j / kKvGroup], j % kKvGroup, h, n_head_kv, hd, vt + j * hd);
  }
}

void scores(const float* q, int R, const float* kt, int hd, float scale, float* s) {
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < kKeyTile; ++j) {
      float acc = 0.0f;
      for (int d = 0; d < hd; ++d) acc = std::fma(q[r * hd + d], kt[d * kKeyTile + j], acc);
      s[r * kKeyTile + j] = acc * scale;
    }
}

// INT8 keys against quantized rows: exact integer dots, then the scales (see QueryRows).
void scores_group_int8(const QueryRows& q, int R, const uint8_t* group, int h, int n_head_kv, int hd,
                       float scale, float* s) {
  const float* ks = kv_scales(group, h, hd);
  for (int i = 0; i < kKvGroup; ++i)
    for (int r = 0; r < R; ++r) {
      int32_t dot = 0;
      for (int d = 0; d < hd; ++d)
        dot += (group[kv_int8_key_offset(h, d, i, hd)] - kInt8KeyBias) * q.q8[r * hd + d];
      s[r * kKeyTile + i] = static_cast<float>(dot) * (ks[i] * (q.qs[r] * scale));
    }
}

void scores_group(QueryRows qr, int R, const uint8_t* group, KvType t, int h, int n_head_kv, int hd,
                  float scale, float* s) {
  if (t == KvType::INT8) return scores_group_int8(qr, R, group, h, n_head_kv, hd, scale, s);
  const float* q = qr.f;
  float k[kMaxHeadDim];
  for (int i = 0; i < kKvGroup; ++i) {
    kv_load_key(t, group, i, h, n_head_kv, hd, k);
    for (int r = 0; r < R; ++r) {
      float acc = 0.0f;
      for (int d = 0; d < hd; ++d) acc = std::fma(q[r * hd + d], k[d], acc);
      s[r * kKeyTile + i] = acc * scale;
    }
  }
}

void softmax_step(float* s, int R, float* m, float* l, float* c) {
  for (int r = 0; r < R; ++r) {
    float* x = s + r * kKeyTile;
    float mx = m[r];
    for (int j = 0; j < kKeyTile; ++j) mx = x[j] > mx ? x[j] : mx;
    float sum = 0.0f;
    for (int j = 0; j < kKeyTile; ++j) {
      x[j] = std::exp(x[j] - mx);
      sum += x[j];
    }
    c[r] = std::exp(m[r] - mx);
    l[r] = l[r] * c[r] + sum;
    m[r] = mx;
  }
}

void accumulate(const float* p, int R, const float* vt, int n, int hd, const float* c, float* acc) {
  for (int r = 0; r < R; ++r) {
    float* o = acc + r * hd;
    for (int i = 0; i < hd; ++i) o[i] *= c[r];
    for (int j = 0; j < n; ++j) {
      const float w = p[r * kKeyTile + j];
      for (int i = 0; i < hd; ++i) o[i] = std::fma(w, vt[j * hd + i], o[i]);
    }
  }
}

// One row's x_j = p_j * vs_j of group columns [lo, hi) rounded to 16 bits (see kProbLevels);
// returns ps (0 when the row sees none of them).
float quantize_probs(const float* p, const float* vs, int lo, int hi, int16_t* P) {
  float x[kKvGroup] = {}, mx = 0.0f;
  for (int i = lo; i < hi; ++i) mx = std::max(mx, x[i] = p[i] * vs[i]);
  const float inv = mx > 0.0f ? kProbLevels / mx : 0.0f;
  for (int i = 0; i < kKvGroup; ++i) P[i] = static_cast<int16_t>(std::nearbyint(x[i] * inv));
  return mx / kProbLevels;
}

void accumulate_rows_int8(const float* p, int R, const uint8_t* const* groups, int a, int n, int h,
                          int n_head_kv, int hd, float* acc) {
  int32_t sum[kMaxHeadDim];
  for (int g = a / kKvGroup; g * kKvGroup < n; ++g) {
    const int lo = std::max(a - kKvGroup * g, 0), hi = std::min(n - kKvGroup * g, kKvGroup);
    const float* vs = kv_scales(groups[g], h, hd);
    for (int r = 0; r < R; ++r) {
      int16_t P[kKvGroup];
      const float ps = quantize_probs(p + r * kKeyTile + kKvGroup * g, vs, lo, hi, P);
      std::fill_n(sum, hd, 0);
      for (int i = lo; i < hi; ++i)
        for (int d = 0; d < hd; ++d)
          sum[d] += P[i] * static_cast<int8_t>(groups[g][kv_int8_value_offset(h, i, d, hd)]);
      for (int d = 0; d < hd; ++d)
        acc[r * hd + d] = std::fma(static_cast<float>(sum[d]), ps, acc[r * hd + d]);
    }
  }
}

void accumulate_rows(const float* p, int R, const uint8_t* const* groups, int a, int n, KvType t, int h,
                     int n_head_kv, int hd, const float* c, float* acc) {
  float v[kMaxHeadDim];
  if (c)
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < hd; ++i) acc[r * hd + i] *= c[r];
  if (t == KvType::INT8) return accumulate_rows_int8(p, R, groups, a, n, h, n_head_kv, hd, acc);
  for (int j = a; j < n; ++j) {
    kv_load_value(t, groups[j / kKvGroup], j % kKvGroup, h, n_head_kv, hd, v);
    for (int r = 0; r < R; ++r) {
      const float w = p[r * kKeyTile + j];
      for (int i = 0; i < hd; ++i) acc[r * hd + i] = std::fma(w, v[i], acc[r * hd + i]);
    }
  }
}

const AttentionTileOps kGeneric = {load_keys,    load_values, scores,         scores_group,
                                   softmax_step, accumulate,  accumulate_rows};

}  // namespace

void quantize_query_rows(const float* q, int R, int hd, int8_t* q8, float* qs, int32_t* q8sum) {
  for (int r = 0; r < R; ++r) {
    const float* x = q + static_cast<size_t>(r) * hd;
    float amax = 0.0f;
    for (int d = 0; d < hd; ++d) amax = std::max(amax, std::fabs(x[d]));
    const float sc = amax / 127.0f, inv = sc > 0 ? 1.0f / sc : 0.0f;
    int32_t sum = 0;
    for (int d = 0; d < hd; ++d) {
      const int v = static_cast<int>(std::nearbyint(x[d] * inv));
      q8[static_cast<size_t>(r) * hd + d] = static_cast<int8_t>(v);
      sum += v;
    }
    qs[r] = sc;
    q8sum[r] = sum;
  }
}

const AttentionTileOps& generic_tile_ops() {
  return kGeneric;
}

const AttentionTileOps& attention_tile_ops(int head_dim) {
  const IsaKernels& k = active_kernels();
  return k.tile_ops && head_dim % k.tile_head_multiple == 0 ? *k.tile_ops : kGeneric;
}

}  // namespace ferrum::kernels
