#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>

namespace ferrum::kernels {

float dot_f32(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void attention(const AttentionParams& p, const float* q, int64_t ldq, int64_t n_tok, int64_t pos0, const float* k,
               const float* v, int64_t ldkv, float* out, int64_t ldo, ThreadPool& pool, AttentionScratch& scratch) {
  const int64_t kv_len = pos0 + n_tok;
  const int64_t per_thread = kv_len;
  if (static_cast<int64_t>(scratch.scores.size()) < per_thread * pool.size())
    scratch.scores.resize(per_thread * pool.size());
  const int group = p.n_head / p.n_head_kv;
  const int hd = p.head_dim;
  const int64_t n_items = n_tok * p.n_head;
  pool.parallel_for(n_items, [&](int64_t b, int64_t e, int ith) {
    float* sc = scratch.scores.data() + ith * per_thread;
    for (int64_t it = b; it < e; ++it) {
      const int64_t t = it / p.n_head;
      const int h = static_cast<int>(it % p.n_head);
      const int hk = h / group;
      const int64_t pos = pos0 + t;
      const int64_t lo = p.sliding_window > 0 ? std::max<int64_t>(0, pos - p.sliding_window + 1) : 0;
      const float* qh = q + t * ldq + static_cast<int64_t>(h) * hd;
      float mx = -INFINITY;
      for (int64_t j = lo; j <= pos; ++j) {
        const float s = dot_f32(qh, k + j * ldkv + static_cast<int64_t>(hk) * hd, hd) * p.scale;
        sc[j - lo] = s;
        mx = std::max(mx, s);
      }
      double sum = 0.0;
      const int64_t n = pos - lo + 1;
      for (int64_t j = 0; j < n; ++j) {
        const float e = std::exp(sc[j] - mx);
        sc[j] = e;
        sum += e;
      }
      const float inv = static_cast<float>(1.0 / sum);
      float* o = out + t * ldo + static_cast<int64_t>(h) * hd;
      std::fill(o, o + hd, 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        const float w = sc[j] * inv;
        const float* vj = v + (lo + j) * ldkv + static_cast<int64_t>(hk) * hd;
        for (int d = 0; d < hd; ++d) o[d] += w * vj[d];
      }
    }
  });
}

}  // namespace ferrum::kernels
