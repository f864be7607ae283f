#include "models/lora_apply.h"

#include <cstring>

#include "core/fail.h"
#include "core/profile.h"

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
  const profile::Scope scope(profile::Op::Lora);
  for (const Group& g : groups_) {
    const LoraSiteWeights& w = g.adapter->site(layer, site);
    if (!w.a.data) continue;
    const int64_t n = static_cast<int64_t>(g.rows.size()), in = w.a.ne[0], rank = w.a.ne[1];
    if (static_cast<int64_t>(u_.size()) < n * rank) u_.resize(n * rank);
    // Rows are in batch order; consecutive ones (one sequence's prefill, or neighbours) are read in
    // place, others gathered (the kernels give a row the same sums either way).
    const bool consecutive = g.rows.back() - g.rows.front() == n - 1;
    const float* xs = x + g.rows.front() * ldx;
    if (!consecutive) {
      if (static_cast<int64_t>(xg_.size()) < n * in) xg_.resize(n * in);
      for (int64_t t = 0; t < n; ++t) std::memcpy(&xg_[t * in], x + g.rows[t] * ldx, in * sizeof(float));
      xs = xg_.data();
    }
    kernels::matmul(w.a, xs, consecutive ? ldx : in, n, u_.data(), rank, pool, prec, scratch);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < rank; ++j) u_[t * rank + j] *= w.slots[w.slot_of_rank[j]].scale;
    for (const LoraSlot& s : w.slots)
      kernels::lowrank_up_add(u_.data() + s.rank0, rank, n, s.bt, g.rows.data(), y + s.col0, ldy, pool);
  }
}

}  // namespace ferrum
