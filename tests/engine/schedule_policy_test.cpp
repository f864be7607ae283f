// The scheduling policy alone, with no model and no threads: a tiny KV cache and a stand-in for
// the forward pass that does to the cache exactly what Model::forward does (reserve all or
// nothing, then record the positions).
#include "engine/schedule_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "ferrum/error.h"
#include "runtime/kv_cache.h"

namespace ferrum {
namespace {

// Paged cache of `pool` tokens in blocks of 16, one layer of one 4-wide head.
std::unique_ptr<KvCache> cache(int64_t pool, bool prefix = false, int64_t seq_capacity = 256) {
  return std::make_unique<KvCache>(1, 1, 4,
                                   KvOptions{KvLayout::Paged, KvType::F32, seq_capacity, pool, prefix});
}

void forward(KvCache& kv, const std::vector<SeqInput>& items) {
  std::vector<std::pair<int, int64_t>> req;
  for (const SeqInput& it : items) req.emplace_back(it.seq, kv.seq_len(it.seq) + it.tokens.size());
  kv.impl().reserve(req);  // throws CapacityError, changing nothing
  for (const SeqInput& it : items) kv.impl().append(it.seq, it.tokens);
}

ScheduledSeq request(int n_prompt, int32_t first_id = 1) {
  ScheduledSeq s;
  for (int i = 0; i < n_prompt; ++i) s.tokens.push_back(first_id + i);
  s.n_prompt = n_prompt;
  return s;
}

// One step: plan, run, advance, and "sample" a token for every item that produced logits.
void step(SchedulePolicy& p, KvCache& kv) {
  p.plan();
  forward(kv, p.items());
  p.advance();
  for (size_t i = 0; i < p.items().size(); ++i)
    if (p.items()[i].logits != Want::None) p.owners()[i]->tokens.push_back(7);
}

TEST(SchedulePolicy, AdmitsInOrderUpToTheSequenceLimit) {
  auto kv = cache(1024);
  SchedulePolicy p(*kv, 2, 64);
  ScheduledSeq a = request(5), b = request(6), c = request(7);
  for (ScheduledSeq* s : {&a, &b, &c}) p.enqueue(s);
  const auto first = p.admit();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0], &a);
  EXPECT_EQ(first[1], &b);
  EXPECT_NE(a.seq_id, b.seq_id);
  EXPECT_EQ(c.seq_id, -1);
  ASSERT_EQ(p.waiting().size(), 1u);
  p.remove(&a);
  EXPECT_EQ(a.seq_id, -1);
  EXPECT_EQ(p.admit().size(), 1u);  // a's slot went to c
  EXPECT_GE(c.seq_id, 0);
}

TEST(SchedulePolicy, DecodesFirstThenPrefillChunksWithinTheBudget) {
  auto kv = cache(1024);
  SchedulePolicy p(*kv, 4, 24);
  ScheduledSeq a = request(10), b = request(30), c = request(30);
  p.enqueue(&a);
  p.admit();
  step(p, *kv);  // a's prompt whole: logits, one token sampled
  EXPECT_EQ(a.n_computed, 10);
  p.enqueue(&b);
  p.enqueue(&c);
  p.admit();
  p.plan();
  // a decodes 1, b gets the remaining 23 of the budget (no logits: its prompt is not done), c none.
  ASSERT_EQ(p.items().size(), 2u);
  EXPECT_EQ(p.owners()[0], &a);
  EXPECT_EQ(p.items()[0].tokens.size(), 1u);
  EXPECT_EQ(p.items()[0].logits, Want::Last);
  EXPECT_EQ(p.owners()[1], &b);
  EXPECT_EQ(p.items()[1].tokens.size(), 23u);
  EXPECT_EQ(p.items()[1].logits, Want::None);
  forward(*kv, p.items());
  p.advance();
  p.plan();  // no one sampled: a has nothing pending; b's last 7 then c's first 17
  ASSERT_EQ(p.items().size(), 2u);
  EXPECT_EQ(p.items()[0].tokens.size(), 7u);
  EXPECT_EQ(p.items()[0].logits, Want::Last);
  EXPECT_EQ(p.items()[1].tokens.size(), 17u);
}

TEST(SchedulePolicy, AdmissionWaitsUntilTheCacheCanHoldThePrompt) {
  auto kv = cache(64);  // 4 blocks
  SchedulePolicy p(*kv, 4, 256);
  ScheduledSeq a = request(40), b = request(30);
  p.enqueue(&a);
  p.admit();
  step(p, *kv);  // a holds 41 tokens' room: 3 blocks
  p.enqueue(&b);
  EXPECT_TRUE(p.admit().empty());       // b needs 2 more blocks
  EXPECT_EQ(kv->usage().sequences, 1);  // the tried slot was released
  p.remove(&a);
  EXPECT_EQ(p.admit().size(), 1u);
}

TEST(SchedulePolicy, OutOfRoomPreemptsTheNewestPrefillThenEndsALoneSequence) {
  auto kv = cache(64);
  SchedulePolicy p(*kv, 4, 256);
  ScheduledSeq a = request(30), b = request(16, 100);
  p.enqueue(&a);
  p.enqueue(&b);
  p.admit();  // both fit at admission (31 + 17 tokens: 2 + 2 blocks)
  step(p, *kv);
  // Grow a past its blocks while b decodes: 4 blocks are not enough for a's 3rd and b's 2nd.
  for (int i = 0; i < 3; ++i) a.tokens.push_back(9);
  p.plan();
  EXPECT_THROW(forward(*kv, p.items()), CapacityError);
  EXPECT_EQ(p.on_capacity_error(), nullptr);  // a is the prefill: preempted
  EXPECT_EQ(a.seq_id, -1);
  EXPECT_EQ(a.n_computed, 0);
  EXPECT_EQ(p.waiting().front(), &a);
  EXPECT_EQ(p.preemptions(), 1u);
  step(p, *kv);  // b decodes alone
  EXPECT_EQ(b.n_computed, 17);
  p.remove(&b);
  // a alone, grown past the whole pool: the policy hands it back to be ended.
  for (int i = 0; i < 40; ++i) a.tokens.push_back(9);
  p.admit();
  p.plan();
  EXPECT_THROW(forward(*kv, p.items()), CapacityError);
  EXPECT_EQ(p.on_capacity_error(), &a);
}

TEST(SchedulePolicy, PrefixCacheHitsCountOnlyAtFirstAdmission) {
  auto kv = cache(256, /*prefix=*/true);
  SchedulePolicy p(*kv, 2, 256);
  ScheduledSeq a = request(40), b = request(40);
  p.enqueue(&a);
  p.admit();
  step(p, *kv);
  p.remove(&a);
  p.enqueue(&b);
  ASSERT_EQ(p.admit().size(), 1u);
  EXPECT_EQ(b.cached, 32);  // two full blocks of the same prompt
  EXPECT_EQ(b.n_computed, 32);
}

// A burst of `n` prompts of `len` tokens submitted at once, run until every one has its first
// token, planned with `overhead`; the clock counts a step as 32 + its tokens.
struct Burst {
  std::vector<int64_t> first_token_clock, first_token_step;
  int steps = 0;
  bool decodes_starved = false;  // a sequence past its prefill left out of a step
};

Burst run_burst(int n, int len, int budget, int overhead) {
  auto kv = cache(4096);
  SchedulePolicy p(*kv, n, budget, overhead);
  std::vector<ScheduledSeq> seqs;
  for (int i = 0; i < n; ++i) seqs.push_back(request(len, 1 + 100 * i));
  for (ScheduledSeq& s : seqs) p.enqueue(&s);
  p.admit();
  Burst b;
  b.first_token_clock.assign(n, -1);
  b.first_token_step.assign(n, -1);
  int64_t clock = 0;
  while (std::any_of(seqs.begin(), seqs.end(), [](const ScheduledSeq& s) { return s.n_generated() == 0; })) {
    p.plan();
    int64_t tokens = 0;
    for (const SeqInput& it : p.items()) tokens += static_cast<int64_t>(it.tokens.size());
    for (const ScheduledSeq& s : seqs)
      if (s.n_generated() > 0 && std::find(p.owners().begin(), p.owners().end(), &s) == p.owners().end())
        b.decodes_starved = true;
    forward(*kv, p.items());
    p.advance();
    clock += 32 + tokens;
    ++b.steps;
    for (size_t i = 0; i < p.items().size(); ++i) {
      ScheduledSeq* s = p.owners()[i];
      if (p.items()[i].logits == Want::None) continue;
      if (s->n_generated() == 0) {
        const size_t k = static_cast<size_t>(s - seqs.data());
        b.first_token_clock[k] = clock;
        b.first_token_step[k] = b.steps;
      }
      s->tokens.push_back(7);
    }
  }
  return b;
}

int64_t sum(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

TEST(SchedulePolicy, ABurstGetsFirstTokensSoonerThanFillingTheBudget) {
  // 16 prompts of 20 tokens, budget 512, a step's overhead worth 32 tokens.
  const Burst fill = run_burst(16, 20, 512, 0);
  const Burst split = run_burst(16, 20, 512, 32);
  // Filling the budget: one step of 320 tokens, every first token at its end (32 + 320).
  EXPECT_EQ(fill.steps, 1);
  for (int64_t c : fill.first_token_clock) EXPECT_EQ(c, 352);
  // Split: the first request's first token after a step of half the cost or less, the median's
  // sooner, the summed time to first token 15% lower, the last no later than 1.5x filling's, and
  // the requests served in admission order.
  EXPECT_GT(split.steps, 1);
  EXPECT_EQ(split.first_token_step[0], 1);
  EXPECT_LE(split.first_token_clock[0], 352 / 2);
  EXPECT_LT(split.first_token_clock[8], 352);
  EXPECT_LT(sum(split.first_token_clock), sum(fill.first_token_clock) * 85 / 100);
  EXPECT_LE(split.first_token_clock.back(), 352 * 3 / 2);
  EXPECT_TRUE(std::is_sorted(split.first_token_step.begin(), split.first_token_step.end()));
  // Decoding sequences get their token in every step while prompts are still pending.
  EXPECT_FALSE(split.decodes_starved);
  EXPECT_FALSE(fill.decodes_starved);
}

TEST(SchedulePolicy, ALongPromptAloneStillFillsEveryStep) {
  auto kv = cache(1024, false, 1024);
  SchedulePolicy p(*kv, 4, 256, 32);
  ScheduledSeq a = request(600);
  p.enqueue(&a);
  p.admit();
  for (int64_t want : {256, 256, 88}) {
    p.plan();
    ASSERT_EQ(p.items().size(), 1u);
    EXPECT_EQ(static_cast<int64_t>(p.items()[0].tokens.size()), want);
    step(p, *kv);
  }
  EXPECT_EQ(a.n_generated(), 1);
}

TEST(SchedulePolicy, SplitStepsEndAtPromptEndsAndStillChunkALongFirstPrompt) {
  auto kv = cache(2048, false, 1024);
  SchedulePolicy p(*kv, 8, 256, 32);
  ScheduledSeq a = request(300), b = request(10, 1000), c = request(10, 2000);
  for (ScheduledSeq* s : {&a, &b, &c}) p.enqueue(s);
  p.admit();
  p.plan();  // a does not fit: it gets the whole budget, as before
  ASSERT_EQ(p.items().size(), 1u);
  EXPECT_EQ(p.items()[0].tokens.size(), 256u);
  step(p, *kv);
  p.plan();  // a's last 44, then b and c whole or not at all: no step ends inside a prompt
  int64_t tokens = 0;
  for (size_t i = 0; i < p.items().size(); ++i) {
    EXPECT_EQ(p.items()[i].logits, Want::Last);
    tokens += static_cast<int64_t>(p.items()[i].tokens.size());
  }
  EXPECT_EQ(p.owners()[0], &a);
  EXPECT_TRUE(tokens == 44 || tokens == 54 || tokens == 64) << tokens;
}

}  // namespace
}  // namespace ferrum
