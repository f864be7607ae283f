#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/cpu/elementwise.h"

namespace ferrum::kernels {

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::F32:
      return "f32";
    case KvType::F16:
      return "f16";
    case KvType::BF16:
      return "bf16";
    case KvType::INT8:
      return "int8";
  }
  return "?";
}

size_t kv_row_bytes(KvType t, int n_head_kv, int head_dim) {
  const size_t n = static_cast<size_t>(n_head_kv) * head_dim;
  switch (t) {
    case KvType::F32:
      return n * 4;
    case KvType::F16:
    case KvType::BF16:
      return n * 2;
    case KvType::INT8:
      return n + static_cast<size_t>(n_head_kv) * 4;
  }
  return 0;
}

void kv_store_row(KvType t, const float* src, uint8_t* dst, int n_head_kv, int head_dim) {
  const int n = n_head_kv * head_dim;
  switch (t) {
    case KvType::F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case KvType::F16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case KvType::BF16: {
      auto* d = reinterpret_cast<uint16_t*>(dst);
      for (int i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    case KvType::INT8: {
      // Symmetric per (token, head): q = round(x / s), s = max|x| / 127.
      auto* q = reinterpret_cast<int8_t*>(dst);
      float* scales = reinterpret_cast<float*>(dst + n);
      for (int h = 0; h < n_head_kv; ++h) {
        const float* x = src + h * head_dim;
        float amax = 0.0f;
        for (int i = 0; i < head_dim; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float s = amax / 127.0f;
        const float inv = s > 0 ? 1.0f / s : 0.0f;
        for (int i = 0; i < head_dim; ++i)
          q[h * head_dim + i] = static_cast<int8_t>(std::nearbyint(x[i] * inv));
        std::memcpy(scales + h, &s, sizeof(float));
      }
      return;
    }
  }
}

void kv_load_head(KvType t, const uint8_t* row, int h, int n_head_kv, int head_dim, float* out) {
  switch (t) {
    case KvType::F32:
      std::memcpy(out, row + static_cast<size_t>(h) * head_dim * 4, head_dim * sizeof(float));
      return;
    case KvType::F16: {
      const auto* s = reinterpret_cast<const uint16_t*>(row) + static_cast<size_t>(h) * head_dim;
      for (int i = 0; i < head_dim; ++i) out[i] = f16_to_f32(s[i]);
      return;
    }
    case KvType::BF16: {
      const auto* s = reinterpret_cast<const uint16_t*>(row) + static_cast<size_t>(h) * head_dim;
      for (int i = 0; i < head_dim; ++i) out[i] = bf16_to_f32(s[i]);
      return;
    }
    case KvType::INT8: {
      const auto* q = reinterpret_cast<const int8_t*>(row) + static_cast<size_t>(h) * head_dim;
      float s;
      std::memcpy(&s, row + static_cast<size_t>(n_head_kv) * head_dim + h * 4, sizeof(float));
      for (int i = 0; i < head_dim; ++i) out[i] = q[i] * s;
      return;
    }
  }
}

float dot_f32(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

namespace {

// y += w * x over n floats.
inline void axpy(float* y, float w, const float* x, int n) {
  for (int i = 0; i < n; ++i) y[i] += w * x[i];
}

// Query token t of `job`, KV head hk: all query heads of the group at once.
void attend_group(const AttentionParams& p, const AttentionJob& job, int64_t t, int hk, float* buf,
                  int64_t max_len) {
  const int group = p.n_head / p.n_head_kv;
  const int hd = p.head_dim;
  const int64_t pos = job.pos0 + t;
  const int64_t lo = p.sliding_window > 0 ? std::max<int64_t>(0, pos - p.sliding_window + 1) : 0;
  const int64_t n = pos - lo + 1;
  float* scores = buf;                    // group * max_len
  float* row = scores + group * max_len;  // hd
  const bool f32 = job.kv.type == KvType::F32;
  const float* qg = job.q + t * job.ldq + static_cast<int64_t>(hk) * group * hd;

  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* kr = job.kv.k_row(lo + j);
    const float* k;
    if (f32) {
      k = reinterpret_cast<const float*>(kr) + static_cast<int64_t>(hk) * hd;
    } else {
      kv_load_head(job.kv.type, kr, hk, p.n_head_kv, hd, row);
      k = row;
    }
    for (int g = 0; g < group; ++g) {
      scores[g * max_len + j] = dot_f32(qg + g * hd, k, hd) * p.scale;
    }
  }
  for (int g = 0; g < group; ++g) {
    softmax(scores + g * max_len, n);
    std::fill_n(job.out + t * job.ldo + (static_cast<int64_t>(hk) * group + g) * hd, hd, 0.0f);
  }
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* vr = job.kv.v_row(lo + j);
    const float* v;
    if (f32) {
      v = reinterpret_cast<const float*>(vr) + static_cast<int64_t>(hk) * hd;
    } else {
      kv_load_head(job.kv.type, vr, hk, p.n_head_kv, hd, row);
      v = row;
    }
    for (int g = 0; g < group; ++g)
      axpy(job.out + t * job.ldo + (static_cast<int64_t>(hk) * group + g) * hd, scores[g * max_len + j], v,
           hd);
  }
}

}  // namespace

void attention(const AttentionParams& p, const AttentionJob* jobs, int n_jobs, ThreadPool& pool,
               AttentionScratch& scratch) {
  int64_t max_len = 0, n_items = 0;
  for (int i = 0; i < n_jobs; ++i) {
    max_len = std::max(max_len, jobs[i].pos0 + jobs[i].n_tok);
    n_items += jobs[i].n_tok * p.n_head_kv;
  }
  const int group = p.n_head / p.n_head_kv;
  const size_t per_thread = static_cast<size_t>(group) * max_len + p.head_dim;
  if (scratch.buf.size() < per_thread * pool.size()) scratch.buf.resize(per_thread * pool.size());
  pool.parallel_for(n_items, [&](int64_t b, int64_t e, int ith) {
    float* buf = scratch.buf.data() + per_thread * ith;
    // Map the flat item index to (job, token, kv head).
    int job = 0;
    int64_t base = 0;
    for (int64_t it = b; it < e; ++it) {
      while (it - base >= jobs[job].n_tok * p.n_head_kv) base += jobs[job++].n_tok * p.n_head_kv;
      const int64_t local = it - base;
      attend_group(p, jobs[job], local / p.n_head_kv, static_cast<int>(local % p.n_head_kv), buf, max_len);
    }
  });
}

}  // namespace ferrum::kernels
