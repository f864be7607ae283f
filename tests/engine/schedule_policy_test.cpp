// The scheduling policy alone, with no model and no threads: a tiny KV cache and a stand-in for
// the forward pass that does to the cache exactly what Model::forward does (reserve all or
// nothing, then record the positions).
#include "engine/schedule_policy.h"

#include <gtest/gtest.h>

#include "ferrum/error.h"
#include "runtime/kv_cache.h"

namespace ferrum {
namespace {

// Paged cache of `pool` tokens in blocks of 16, one layer of one 4-wide head.
std::unique_ptr<KvCache> cache(int64_t pool, bool prefix = false) {
  return std::make_unique<KvCache>(1, 1, 4, KvOptions{"paged", "f32", 256, pool, prefix});
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

}  // namespace
}  // namespace ferrum
