#include "models/lora_apply.h"

#include <cstring>

#include "core/fail.h"

namespace ferrum {

void LoraBatch::plan(std::span<const SeqInput> batch, int64_t n_embd, const LoraAdapter::Shape& shape) {
  groups_.clear();
  int64_t off = 0;
  for (const SeqInput& it : batch) {
    const int64_t m = it.size(n_embd);
    if (it.lora) {
      if (!(it.lora->shape == shape))
        fail("forward: sequence {} uses LoRA adapter '{}', which was loaded for a model of another shape",
             it.seq, it.lora->name);
      Group* g = nullptr;
      for (Group& e : groups_)
        if (e.adapter == it.lora) g = &e;
      if (!g) g = &groups_.emplace_back(Group{it.lora, {}});
      for (int64_t t = 0; t < m; ++t) g->rows.push_back(off + t);
    }
    off += m;
  }
}

void LoraBatch::apply(int layer, LoraSite site, const float* x, int64_t ldx, float* y, int64_t ldy,
                      ThreadPool& pool, kernels::Precision prec, kernels::MatmulScratch& scratch) {
  for (const Group& g : groups_) {
    const LoraSiteWeights& w = g.adapter->site(layer, site);
    if (!w.a.data) continue;
    const int64_t n = static_cast<int64_t>(g.rows.size()), in = w.a.ne[0], rank = w.a.ne[1];
    if (static_cast<int64_t>(xg_.size()) < n * in) xg_.resize(n * in);
    if (static_cast<int64_t>(u_.size()) < n * rank) u_.resize(n * rank);
    for (int64_t t = 0; t < n; ++t) std::memcpy(&xg_[t * in], x + g.rows[t] * ldx, in * sizeof(float));
    kernels::matmul(w.a, xg_.data(), in, n, u_.data(), rank, pool, prec, scratch);
    for (const LoraSlot& s : w.slots)
      for (int64_t t = 0; t < n; ++t)
        for (int64_t j = 0; j < s.b.ne[0]; ++j) u_[t * rank + s.rank0 + j] *= s.scale;
    for (const LoraSlot& s : w.slots) {
      const int64_t out = s.b.ne[1];
      if (static_cast<int64_t>(v_.size()) < n * out) v_.resize(n * out);
      kernels::matmul(s.b, u_.data() + s.rank0, rank, n, v_.data(), out, pool, prec, scratch);
      for (int64_t t = 0; t < n; ++t) {
        float* yr = y + g.rows[t] * ldy + s.col0;
        const float* vr = &v_[t * out];
        for (int64_t o = 0; o < out; ++o) yr[o] += vr[o];
      }
    }
  }
}

}  // namespace ferrum
