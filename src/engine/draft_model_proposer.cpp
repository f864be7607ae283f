#include "engine/draft_model_proposer.h"

#include <algorithm>
#include <cmath>

#include "core/fail.h"

namespace ferrum {

struct DraftModelProposer::Slot {
  uint64_t request = 0;
  bool used = false;
  std::vector<int32_t> fed;  // the tokens whose keys and values the draft cache holds
  std::unique_ptr<Sampler> sampler;
  int target_len = 0;  // fed.size() at which the draft tokens start (= tokens.size())
};

namespace {

// The draft's own confidence in `id`: its softmax probability at temperature 1.
float softmax_prob(const float* logits, int n, int32_t id) {
  float mx = logits[0];
  for (int i = 1; i < n; ++i) mx = std::max(mx, logits[i]);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - mx);
  return static_cast<float>(std::exp(double(logits[id]) - mx) / sum);
}

}  // namespace

DraftModelProposer::DraftModelProposer(Model& draft, int n_vocab, DraftModelOptions o)
    : model_(draft), o_(o), n_vocab_(std::min(n_vocab, draft.config().n_vocab)) {
  if (!draft.has_logits()) fail("the draft model has no LM head (a backbone or an inner stage)");
  if (o_.catch_up_chunk < 1) fail("draft model: catch_up_chunk must be >= 1");
  if (!(o_.p_min >= 0.0f && o_.p_min <= 1.0f))
    fail("draft model: p_min must be in [0, 1] (got {})", o_.p_min);
}

void DraftModelProposer::start(const KvOptions& kv, int n_slots) {
  if (n_slots < 1) fail("draft model: n_slots must be >= 1 (got {})", n_slots);
  KvOptions opts = kv;
  opts.prefix_cache = false;
  kv_ = KvCache::for_model(model_, opts);
  slots_.clear();
  for (int i = 0; i < n_slots; ++i) slots_.push_back(std::make_unique<Slot>());
  logits_.resize(static_cast<size_t>(n_slots) * model_.config().n_vocab);
}

DraftModelProposer::~DraftModelProposer() = default;

// Brings a slot to the request: a new owner starts afresh; otherwise the cache keeps the longest
// prefix it shares with the tokens (what the target accepted), minus at least one token so the
// last one is fed again and gives the logits of the first draft token.
void DraftModelProposer::sync(DraftRequest& r, Slot& s) {
  if (!s.sampler || s.request != r.request) {
    if (kv_->has(r.slot)) kv_->release(r.slot);
    s.fed.clear();
    s.request = r.request;
    SamplingParams sp = *r.sampling;
    sp.seed ^= 0x5DEECE66Dull;  // the draft draws from its own stream
    s.sampler = std::make_unique<Sampler>(sp, n_vocab_);
  }
  const size_t n = std::min(s.fed.size(), r.tokens.size() - 1);
  const size_t keep = std::mismatch(s.fed.begin(), s.fed.begin() + n, r.tokens.begin()).first - s.fed.begin();
  if (keep < s.fed.size()) {
    kv_->truncate(r.slot, static_cast<int64_t>(keep));
    s.fed.resize(keep);
  }
  s.target_len = static_cast<int>(r.tokens.size());
  s.used = true;
}

void DraftModelProposer::free_unused(std::span<DraftRequest* const> requests) {
  for (auto& s : slots_) s->used = false;
  for (DraftRequest* r : requests) slots_[r->slot]->used = true;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (!slots_[i]->used && kv_->has(static_cast<int>(i))) {
      kv_->release(static_cast<int>(i));
      slots_[i]->fed.clear();
      slots_[i]->sampler.reset();
    }
}

void DraftModelProposer::propose(std::span<DraftRequest* const> requests) {
  if (!kv_) fail("draft model: propose() before start()");
  for (DraftRequest* r : requests) {
    if (r->slot < 0 || r->slot >= static_cast<int>(slots_.size()))
      fail("draft model: slot {} outside [0, {})", r->slot, slots_.size());
    if (r->tokens.empty()) fail("draft model: a request with no tokens");
    r->draft.clear();
    r->q.clear();
    sync(*r, *slots_[r->slot]);
  }
  if (run(requests)) return;
  // The draft cache is full: drop what finished requests left behind and try once more; if it
  // still does not fit, this step decodes without drafts.
  free_unused(requests);
  for (DraftRequest* r : requests) {
    r->draft.clear();
    r->q.clear();
    sync(*r, *slots_[r->slot]);
  }
  if (!run(requests))
    for (DraftRequest* r : requests) {
      r->draft.clear();
      r->q.clear();
    }
}

// Rounds of one batched forward: a sequence behind its tokens feeds the next chunk of them; one
// that is level feeds its last draft token; each sequence whose forward reached its end draws
// its next draft token. Returns false when the cache ran out (drafts so far are then dropped by
// the caller; the cache itself is unchanged by the failed forward).
bool DraftModelProposer::run(std::span<DraftRequest* const> requests) {
  done_.assign(requests.size(), 0);
  int64_t prefetch_budget = o_.catch_up_chunk;  // prompt tokens of sequences in prefill, per call
  while (true) {
    items_.clear();
    owners_.clear();
    for (size_t i = 0; i < requests.size(); ++i) {
      DraftRequest& r = *requests[i];
      Slot& s = *slots_[r.slot];
      if (done_[i]) continue;
      SeqInput it;
      it.seq = r.slot;
      const size_t behind = r.tokens.size() - std::min(s.fed.size(), r.tokens.size());
      if (r.max_draft == 0) {  // prefetch: a chunk of the prompt, all but its last token
        done_[i] = 1;
        const int64_t n = std::min<int64_t>(static_cast<int64_t>(behind) - 1, prefetch_budget);
        if (n <= 0) continue;
        prefetch_budget -= n;
        it.tokens = r.tokens.subspan(s.fed.size(), n);
        it.logits = Want::None;
      } else if (behind > 0) {
        const size_t n = std::min<size_t>(behind, o_.catch_up_chunk);
        it.tokens = r.tokens.subspan(s.fed.size(), n);
        it.logits = n == behind ? Want::Last : Want::None;
      } else {
        it.tokens = std::span<const int32_t>(r.draft).last(1);
        it.logits = Want::Last;
      }
      items_.push_back(it);
      owners_.push_back(i);
    }
    if (items_.empty()) return true;
    try {
      model_.forward(*kv_, items_, ForwardOut{logits_.data(), nullptr});
    } catch (const CapacityError&) {
      return false;
    }
    size_t row = 0;
    const int width = model_.config().n_vocab;
    for (size_t i = 0; i < items_.size(); ++i) {
      const size_t k = owners_[i];
      DraftRequest& r = *requests[k];
      Slot& s = *slots_[r.slot];
      s.fed.insert(s.fed.end(), items_[i].tokens.begin(), items_[i].tokens.end());
      if (items_[i].logits == Want::None) continue;
      const float* l = logits_.data() + row++ * width;
      // The draft's history for penalties: the tokens, then its drafts so far (= s.fed).
      const std::span<const TokenProb> q = s.sampler->distribution(l, s.fed);
      const int32_t id = s.sampler->draw(q);
      if (o_.p_min > 0.0f && softmax_prob(l, n_vocab_, id) < o_.p_min) {
        done_[k] = 1;
        continue;
      }
      r.draft.push_back(id);
      if (r.sampling->temperature > 0.0f) r.q.emplace_back(q.begin(), q.end());
      if (static_cast<int>(r.draft.size()) >= r.max_draft) done_[k] = 1;
    }
  }
}

void check_draft_vocab(const Tokenizer& target, const Tokenizer& draft) {
  if (target.kind() != draft.kind())
    fail(
        "the draft model's tokenizer is {} but the target's is {}: speculative decoding needs the same "
        "vocabulary",
        draft.kind(), target.kind());
  const int32_t nt = target.n_vocab(), nd = draft.n_vocab();
  if (std::abs(nt - nd) > 128)
    fail(
        "the draft model's vocabulary has {} tokens but the target's {}: speculative decoding needs the same "
        "vocabulary",
        nd, nt);
  if (target.bos_id() != draft.bos_id() || target.eos_id() != draft.eos_id())
    fail("the draft model's BOS/EOS ids ({}/{}) differ from the target's ({}/{})", draft.bos_id(),
         draft.eos_id(), target.bos_id(), target.eos_id());
  for (int32_t i = 0; i < std::min(nt, nd); ++i)
    if (target.token_text(i) != draft.token_text(i))
      fail(
          "token {} is '{}' in the draft model's vocabulary but '{}' in the target's: speculative decoding "
          "needs the "
          "same vocabulary",
          i, draft.token_text(i), target.token_text(i));
}

}  // namespace ferrum
