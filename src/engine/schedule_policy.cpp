#include "engine/schedule_policy.h"

#include <algorithm>
#include <numeric>

#include "core/fail.h"
#include "ferrum/lora.h"

namespace ferrum {

SchedulePolicy::SchedulePolicy(KvCache& kv, int max_num_seqs, int max_batched_tokens,
                               int step_overhead_tokens)
    : kv_(kv),
      max_num_seqs_(max_num_seqs),
      max_batched_tokens_(max_batched_tokens),
      step_overhead_tokens_(step_overhead_tokens) {
  for (int i = max_num_seqs - 1; i >= 0; --i) free_ids_.push_back(i);
  items_.reserve(max_num_seqs);
  owners_.reserve(max_num_seqs);
  need_.reserve(max_num_seqs + 1);
}

void SchedulePolicy::enqueue(ScheduledSeq* s) {
  waiting_.push_back(s);
}

bool SchedulePolicy::fits_with_running(int id, const ScheduledSeq& s) const {
  need_.clear();
  for (const ScheduledSeq* r : running_)
    need_.emplace_back(r->seq_id, static_cast<int64_t>(r->tokens.size()) + 1);
  need_.emplace_back(id, static_cast<int64_t>(s.tokens.size()) + 1);
  return kv_.can_fit(need_);
}

std::vector<ScheduledSeq*> SchedulePolicy::admit() {
  std::vector<ScheduledSeq*> first_time;
  while (!waiting_.empty() && static_cast<int>(running_.size()) < max_num_seqs_ && !free_ids_.empty()) {
    ScheduledSeq& s = *waiting_.front();
    const int id = free_ids_.back();
    const int64_t reused =
        s.admitted_once ? 0 : kv_.reuse_prefix(id, s.tokens, s.lora ? lora_id(*s.lora) : 0);
    if (!running_.empty() && !fits_with_running(id, s)) {
      if (kv_.seq_len(id) > 0) kv_.release(id);
      break;
    }
    free_ids_.pop_back();
    s.seq_id = id;
    s.n_computed = reused;
    if (!s.admitted_once) {
      s.cached = reused;
      s.admitted_once = true;
      first_time.push_back(&s);
    }
    running_.push_back(&s);
    waiting_.pop_front();
  }
  return first_time;
}

void SchedulePolicy::plan(int max_decodes) {
  items_.clear();
  owners_.clear();
  int budget = max_batched_tokens_;
  plan_decodes(budget, max_decodes);
  plan_prefills(budget, static_cast<int>(items_.size()));
}

// One pending token per decoding sequence, or it and its drafts when the budget leaves room.
void SchedulePolicy::plan_decodes(int& budget, int max_decodes) {
  int decodes_left = std::min<int>(
      max_decodes, std::count_if(running_.begin(), running_.end(),
                                 [](const ScheduledSeq* r) { return r->decoding() && !r->in_flight; }));
  for (ScheduledSeq* r : running_) {
    if (!r->decoding() || r->in_flight) continue;
    if (decodes_left-- == 0) break;
    SeqInput it;
    it.seq = r->seq_id;
    if (r->verify.size() > 1 && budget - static_cast<int>(r->verify.size()) >= decodes_left) {
      it.tokens = r->verify;
      it.logits = Want::All;
    } else {
      r->verify.clear();
      it.tokens = std::span<const int32_t>(r->tokens.data() + r->n_computed, 1);
      it.logits = Want::Last;
    }
    budget -= static_cast<int>(it.tokens.size());
    it.lora = r->lora;
    items_.push_back(it);
    owners_.push_back(r);
  }
}

// Prefill chunks in admission order; with several prompts pending the step stops at the end of
// the prompt the prefill planner picks.
void SchedulePolicy::plan_prefills(int budget, int n_decodes) {
  auto pending = [](const ScheduledSeq* r) { return static_cast<int64_t>(r->tokens.size()) - r->n_computed; };
  if (step_overhead_tokens_ > 0 && budget > 0) {
    pending_.clear();
    for (const ScheduledSeq* r : running_)
      if (!r->decoding() && !r->in_flight && pending(r) > 0) pending_.push_back(pending(r));
    if (pending_.size() > 1) {
      const size_t k = planner_.completions(pending_, budget, n_decodes, step_overhead_tokens_);
      if (k > 0)
        budget = static_cast<int>(std::accumulate(pending_.begin(), pending_.begin() + k, int64_t{0}));
    }
  }
  for (ScheduledSeq* r : running_) {
    if (r->decoding() || r->in_flight || pending(r) <= 0 || budget <= 0) continue;
    const int64_t n = std::min<int64_t>(pending(r), budget);
    budget -= static_cast<int>(n);
    SeqInput it;
    it.seq = r->seq_id;
    it.tokens = std::span<const int32_t>(r->tokens.data() + r->n_computed, n);
    it.logits = r->n_computed + n == static_cast<int64_t>(r->tokens.size()) ? Want::Last : Want::None;
    it.lora = r->lora;
    items_.push_back(it);
    owners_.push_back(r);
  }
}

void SchedulePolicy::advance(std::span<const SeqInput> items, std::span<ScheduledSeq* const> owners) {
  for (size_t i = 0; i < items.size(); ++i)
    owners[i]->n_computed += static_cast<int64_t>(items[i].tokens.size());
}

void SchedulePolicy::rollback(ScheduledSeq* s, int64_t n_computed) {
  if (n_computed > s->n_computed)
    fail("rollback to {} positions but the cache holds {}", n_computed, s->n_computed);
  if (n_computed < s->n_computed) kv_.truncate(s->seq_id, n_computed);
  s->n_computed = n_computed;
}

bool SchedulePolicy::drop_drafts() {
  bool any = false;
  for (ScheduledSeq* r : running_) {
    if (r->in_flight) continue;  // its pass runs them
    any = any || !r->verify.empty();
    r->verify.clear();
  }
  return any;
}

ScheduledSeq* SchedulePolicy::on_capacity_error() {
  if (running_.size() == 1) return running_[0];  // alone and still out of room
  // The newest prefill chunk's sequence, else (decodes only) the newest sequence.
  for (size_t i = items_.size(); i-- > 0;) {
    const ScheduledSeq* s = owners_[i];
    if (s->n_generated() == 0 || s->n_computed + 1 < static_cast<int64_t>(s->tokens.size())) {
      preempt(owners_[i]);
      return nullptr;
    }
  }
  preempt(running_.back());
  return nullptr;
}

void SchedulePolicy::preempt(ScheduledSeq* s) {
  running_.erase(std::find(running_.begin(), running_.end(), s));
  release(*s);
  s->n_computed = 0;  // recomputed from prompt + output when admitted again
  waiting_.push_front(s);
  ++preemptions_;
}

void SchedulePolicy::release(ScheduledSeq& s) {
  if (s.seq_id < 0) return;
  if (kv_.has(s.seq_id)) kv_.release(s.seq_id);
  free_ids_.push_back(s.seq_id);
  s.seq_id = -1;
}

void SchedulePolicy::remove(ScheduledSeq* s) {
  if (auto it = std::find(running_.begin(), running_.end(), s); it != running_.end()) running_.erase(it);
  if (auto it = std::find(waiting_.begin(), waiting_.end(), s); it != waiting_.end()) waiting_.erase(it);
  release(*s);
}

}  // namespace ferrum
