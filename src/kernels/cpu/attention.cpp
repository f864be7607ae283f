#include "kernels/cpu/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernels.h"

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

namespace {

constexpr int64_t kQueryBlock = 16;  // query tokens per work item: K/V rows are converted once per block

// Head h of cached rows [j0, j1) as floats: keys transposed (kt[d*ldk + j - j0], zero past j1),
// values as rows (hd per row).
void load_block(const KvSeqView& kv, int h, int n_head_kv, int hd, int64_t j0, int64_t j1, int64_t ldk,
                float* kt, float* vals, float* row, const IsaKernels& isa) {
  auto load = [&](const uint8_t* r, float* out) {
    if (kv.type == KvType::F16)
      isa.f16_to_f32(reinterpret_cast<const uint16_t*>(r) + static_cast<size_t>(h) * hd, out, hd);
    else
      kv_load_head(kv.type, r, h, n_head_kv, hd, out);
  };
  const int64_t n = j1 - j0;
  if (kv.type == KvType::F32) {  // read the head's slices in place (no per-row library copy)
    for (int64_t j = 0; j < n; ++j) {
      const float* k = reinterpret_cast<const float*>(kv.k_row(j0 + j)) + static_cast<size_t>(h) * hd;
      const float* v = reinterpret_cast<const float*>(kv.v_row(j0 + j)) + static_cast<size_t>(h) * hd;
      for (int d = 0; d < hd; ++d) kt[d * ldk + j] = k[d];
      for (int d = 0; d < hd; ++d) vals[j * hd + d] = v[d];
    }
  } else {
    for (int64_t j = 0; j < n; ++j) {
      load(kv.k_row(j0 + j), row);
      for (int d = 0; d < hd; ++d) kt[d * ldk + j] = row[d];
      load(kv.v_row(j0 + j), vals + j * hd);
    }
  }
  for (int d = 0; d < hd; ++d) std::fill(kt + d * ldk + n, kt + (d + 1) * ldk, 0.0f);
}

// Query tokens [t0, t1) of `job`, KV head hk, all query heads of the group. The arithmetic for a
// token does not depend on the block it is in (each score and output element is summed in the same
// order), so results are the same for any batching or chunking.
void attend_block(const AttentionParams& p, const AttentionJob& job, int64_t t0, int64_t t1, int hk,
                  float* buf, int64_t max_len, const IsaKernels& isa) {
  const int group = p.n_head / p.n_head_kv;
  const int hd = p.head_dim;
  auto first_key = [&](int64_t pos) {
    return p.sliding_window > 0 ? std::max<int64_t>(0, pos - p.sliding_window + 1) : int64_t{0};
  };
  const int64_t j0 = first_key(job.pos0 + t0), j1 = job.pos0 + t1;  // keys any query of the block sees
  const int64_t ldk = (j1 - j0 + 15) / 16 * 16;
  const int64_t cap = (max_len + 15) / 16 * 16;
  float* kt = buf;                  // hd x ldk
  float* vals = kt + cap * hd;      // (j1 - j0) x hd
  float* scores = vals + cap * hd;  // ldk
  float* row = scores + cap;        // hd
  load_block(job.kv, hk, p.n_head_kv, hd, j0, j1, ldk, kt, vals, row, isa);
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t pos = job.pos0 + t, lo = first_key(pos), n = pos - lo + 1;
    for (int g = 0; g < group; ++g) {
      const int64_t head = static_cast<int64_t>(hk) * group + g;
      const float* q = job.q + t * job.ldq + head * hd;
      // Keys from lo on: columns lo - j0 .. of kt; the scores kernel works in 16-column steps from there.
      isa.scores_t(q, kt + (lo - j0), ldk, n, hd, p.scale, scores);
      softmax(scores, n);
      isa.weighted_sum(scores, vals + (lo - j0) * hd, hd, n, hd, job.out + t * job.ldo + head * hd);
    }
  }
}

}  // namespace

void attention(const AttentionParams& p, const AttentionJob* jobs, int n_jobs, ThreadPool& pool,
               AttentionScratch& scratch) {
  const IsaKernels& isa = active_kernels();
  int64_t max_len = 0, n_items = 0;
  for (int i = 0; i < n_jobs; ++i) {
    max_len = std::max(max_len, jobs[i].pos0 + jobs[i].n_tok);
    n_items += (jobs[i].n_tok + kQueryBlock - 1) / kQueryBlock * p.n_head_kv;
  }
  const size_t cap = static_cast<size_t>((max_len + 15) / 16 * 16);
  const size_t per_thread = cap * (2 * p.head_dim + 1) + p.head_dim + 16;
  if (scratch.buf.size() < per_thread * pool.size()) scratch.buf.resize(per_thread * pool.size());
  // Items are claimed dynamically, each job's last (longest) query blocks first, so the causal
  // triangle's unequal items still balance over the threads.
  std::atomic<int64_t> next{0};
  auto work = [&](int ith, int) {
    float* buf = scratch.buf.data() + per_thread * ith;
    for (int64_t it = next.fetch_add(1, std::memory_order_relaxed); it < n_items;
         it = next.fetch_add(1, std::memory_order_relaxed)) {
      int job = 0;
      int64_t local = it;
      for (;; ++job) {
        const int64_t cnt = (jobs[job].n_tok + kQueryBlock - 1) / kQueryBlock * p.n_head_kv;
        if (local < cnt) break;
        local -= cnt;
      }
      const AttentionJob& J = jobs[job];
      const int64_t n_blocks = (J.n_tok + kQueryBlock - 1) / kQueryBlock;
      const int64_t blk = n_blocks - 1 - local / p.n_head_kv;
      const int hk = static_cast<int>(local % p.n_head_kv);
      attend_block(p, J, blk * kQueryBlock, std::min(J.n_tok, (blk + 1) * kQueryBlock), hk, buf, max_len,
                   isa);
    }
  };
  if (n_items == 1)
    work(0, 1);
  else
    pool.run(work);
}

}  // namespace ferrum::kernels
