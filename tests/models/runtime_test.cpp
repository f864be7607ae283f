// Equivalence tests of the runtime paths against the simple path (one sequence, contiguous cache,
// whole prefill, one token per decode): batched decode, paged cache, mixed prefill+decode
// batches, chunked prefill, prefix-cache hits, speculative verify and rollback, all on the default
// KV type (kv_type_quality_test.cpp compares the types). Also the errors the engine relies on
// (pool exhaustion, unknown sequence, capacity, position mismatch).
#include <gtest/gtest.h>

#include <cmath>

#include "ferrum/error.h"
#include "ferrum/sampler.h"
#include "kernels/cpu/matmul.h"
#include "model_test_util.h"

namespace ferrum::test::runtime_test {
namespace {

constexpr double kTol = 2e-4;  // batching changes only the summation order

std::unique_ptr<CachedModel> open_kv(const std::string& path, const std::string& layout, bool prefix = false,
                                     int64_t pool = 0, int64_t capacity = 512) {
  ModelFiles files = open_model_files(path);
  ModelOptions o;
  o.n_threads = 2;
  o.max_batch = 64;
  KvOptions kv;
  kv.layout = parse_kv_layout(layout);
  kv.capacity = capacity;
  kv.pool_tokens = pool;
  kv.prefix_cache = prefix;
  return std::make_unique<CachedModel>(create_model(std::move(files.config), std::move(files.weights), o),
                                       kv);
}

double max_diff(const float* a, const float* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

// Greedy continuation of `prompt` for `steps` tokens, one token per decode; returns the logits of
// every step (steps x V).
std::vector<float> reference_run(CachedModel& m, int seq, const std::vector<int32_t>& prompt, int steps,
                                 std::vector<int32_t>* tokens = nullptr) {
  const int V = m.config().n_vocab;
  std::vector<float> out(static_cast<size_t>(steps) * V);
  m.prefill(seq, prompt, out.data());
  for (int s = 1; s < steps; ++s) {
    const int32_t next = argmax(&out[(s - 1) * V], V);
    if (tokens) tokens->push_back(next);
    m.decode(seq, next, m.seq_len(seq), &out[s * V]);
  }
  if (tokens) tokens->push_back(argmax(&out[(steps - 1) * V], V));
  return out;
}

class Runtime : public ::testing::TestWithParam<std::string> {
 protected:
  std::string path(const std::string& type = "Q4_K_M") const {
    if (is_family(GetParam())) return family_gguf(GetParam(), type);
    return model_file(GetParam(), "gguf/" + GetParam() + "-" + type + ".gguf");
  }
  std::vector<int32_t> prompt(const std::string& pid = "p3") const { return prompt_ids(GetParam(), pid); }
};

TEST_P(Runtime, PagedEqualsContiguous) {
  auto a = open_kv(path(), "contiguous"), b = open_kv(path(), "paged");
  auto p = prompt("p4");
  auto ra = reference_run(*a, 0, p, 24), rb = reference_run(*b, 0, p, 24);
  EXPECT_LE(max_diff(ra.data(), rb.data(), ra.size()), kTol);
}

TEST_P(Runtime, ChunkedPrefillEqualsWholePrefill) {
  auto m = open_kv(path(), "paged");
  auto p = prompt("p4");
  const int V = m->config().n_vocab;
  std::vector<float> whole(V), chunked(V);
  m->prefill(0, p, whole.data());
  // Chunks of uneven sizes that cross block boundaries.
  size_t at = 0;
  for (size_t len : {7, 16, 1, 30}) {
    m->prefill(1, std::span(p).subspan(at, len), chunked.data());
    at += len;
  }
  m->prefill(1, std::span(p).subspan(at), chunked.data());
  EXPECT_EQ(m->seq_len(1), static_cast<int64_t>(p.size()));
  EXPECT_LE(max_diff(whole.data(), chunked.data(), V), kTol);
}

TEST_P(Runtime, BatchedDecodeEqualsOneByOne) {
  auto single = open_kv(path(), "paged"), batched = open_kv(path(), "paged");
  const int V = single->config().n_vocab;
  std::vector<std::vector<int32_t>> prompts = {prompt("p2"), prompt("p3"), prompt("p4"), prompt("p1")};
  const int steps = 12, n = prompts.size();
  std::vector<std::vector<float>> ref(n);
  std::vector<std::vector<int32_t>> toks(n);
  for (int i = 0; i < n; ++i) ref[i] = reference_run(*single, i, prompts[i], steps, &toks[i]);
  std::vector<float> logits(n * V);
  for (int i = 0; i < n; ++i) batched->prefill(i, prompts[i], &logits[i * V]);
  for (int i = 0; i < n; ++i) EXPECT_LE(max_diff(&logits[i * V], &ref[i][0], V), kTol);
  for (int s = 1; s < steps; ++s) {
    std::vector<DecodeItem> items;
    for (int i = 0; i < n; ++i) items.push_back({i, toks[i][s - 1], batched->seq_len(i)});
    batched->decode_batch(items, logits.data());
    for (int i = 0; i < n; ++i)
      EXPECT_LE(max_diff(&logits[i * V], &ref[i][s * V], V), kTol) << "seq " << i << " step " << s;
  }
}

// With the packed kernels of any SIMD tier (Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K, F16, BF16 weights)
// every token's arithmetic is independent of what else is in the step, so batching and chunking
// change nothing at all: a server's answer to a request does not depend on the other requests.
TEST_P(Runtime, BatchingAndChunkingAreBitwiseInvariant) {
  if (!kernels::packed_kernels_active()) GTEST_SKIP() << "needs a tier with packed kernels (avx2 or better)";
  for (const char* type : {"Q4_0", "Q8_0", "Q4_K_M", "Q5_K_M", "F16", "BF16"}) {
    SCOPED_TRACE(type);
    // The families' 128-wide rows cannot hold Q5_K blocks: Q5_K_M falls back to Q5_1 there (as
    // llama-quantize's recipe does), which has no packed kernel.
    if (is_family(GetParam()) && std::string(type) == "Q5_K_M") continue;
    auto single = open_kv(path(type), "paged"), batched = open_kv(path(type), "paged");
    const int V = single->config().n_vocab;
    std::vector<std::vector<int32_t>> prompts = {prompt("p2"), prompt("p4"), prompt("p3")};
    ASSERT_GT(prompts[1].size(), 5u);
    ASSERT_GT(prompts[2].size(), 3u);
    const int steps = 6, n = prompts.size();
    std::vector<std::vector<float>> ref(n);
    std::vector<std::vector<int32_t>> toks(n);
    for (int i = 0; i < n; ++i) ref[i] = reference_run(*single, i, prompts[i], steps, &toks[i]);
    // Batched: prompt 0 whole; prompts 1 and 2 in uneven chunks mixed into the same steps.
    std::vector<float> logits(n * V);
    batched->prefill(0, prompts[0], &logits[0]);
    EXPECT_EQ(max_diff(&logits[0], &ref[0][0], V), 0.0);
    const auto& p1 = prompts[1];
    const auto& p2 = prompts[2];
    SeqInput first[2] = {seq_input(1, std::span(p1).first(5), Want::None),
                         seq_input(2, std::span(p2).first(3), Want::None)};
    batched->forward(first, nullptr);
    SeqInput rest[2] = {seq_input(1, std::span(p1).subspan(5)), seq_input(2, std::span(p2).subspan(3))};
    batched->forward(rest, &logits[V]);
    EXPECT_EQ(max_diff(&logits[V], &ref[1][0], V), 0.0);
    EXPECT_EQ(max_diff(&logits[2 * V], &ref[2][0], V), 0.0);
    for (int s = 1; s < steps; ++s) {
      std::vector<DecodeItem> items;
      for (int i = 0; i < n; ++i) items.push_back({i, toks[i][s - 1], batched->seq_len(i)});
      batched->decode_batch(items, logits.data());
      for (int i = 0; i < n; ++i)
        EXPECT_EQ(max_diff(&logits[i * V], &ref[i][s * V], V), 0.0) << "seq " << i << " step " << s;
    }
  }
}

TEST_P(Runtime, MixedBatchEqualsSeparateCalls) {
  auto sep = open_kv(path(), "paged"), mixed = open_kv(path(), "paged");
  const int V = sep->config().n_vocab;
  auto p0 = prompt("p3"), p1 = prompt("p4");
  // Separate: seq 0 decodes one token after its prompt; seq 1 prefills its prompt in two chunks.
  std::vector<float> a0(V), a0b(V), a1(V);
  sep->prefill(0, p0, a0.data());
  const int32_t t0 = argmax(a0.data(), V);
  sep->decode(0, t0, sep->seq_len(0), a0b.data());
  sep->prefill(1, std::span(p1).first(40), a1.data());
  sep->prefill(1, std::span(p1).subspan(40), a1.data());
  // Mixed: the same work, with seq 0's decode and seq 1's second chunk in one pass.
  std::vector<float> b(2 * V);
  mixed->prefill(0, p0, b.data());
  mixed->prefill(1, std::span(p1).first(40), nullptr, false);
  SeqInput items[2] = {seq_input(0, std::span(&t0, 1)), seq_input(1, std::span(p1).subspan(40))};
  mixed->forward(items, b.data());
  EXPECT_LE(max_diff(&b[0], a0b.data(), V), kTol);
  EXPECT_LE(max_diff(&b[V], a1.data(), V), kTol);
}

TEST_P(Runtime, PrefixCacheHitEqualsColdPrefill) {
  auto cold = open_kv(path(), "paged"), warm = open_kv(path(), "paged", true);
  const int V = cold->config().n_vocab;
  auto p = prompt("p4");
  std::vector<float> ref(V), got(V);
  cold->prefill(0, p, ref.data());
  // First request fills the cache; a second request with the same prompt reuses its full blocks.
  warm->prefill(0, p, got.data());
  warm->release(0);
  const int64_t reused = warm->reuse_prefix(1, p);
  EXPECT_EQ(reused, static_cast<int64_t>((p.size() - 1) / 16 * 16));
  warm->prefill(1, std::span(p).subspan(reused), got.data());
  EXPECT_LE(max_diff(ref.data(), got.data(), V), kTol);
  // A prompt sharing only the first block reuses exactly that block, and writes its own tail.
  std::vector<int32_t> q(p.begin(), p.begin() + 20);
  q[17] = (q[17] + 1) % V;
  EXPECT_EQ(warm->reuse_prefix(2, q), 16);
  warm->prefill(2, std::span(q).subspan(16), got.data());
  cold->prefill(2, q, ref.data());
  EXPECT_LE(max_diff(ref.data(), got.data(), V), kTol);
  // The cached blocks were not modified by sequence 2: a new hit still matches.
  EXPECT_EQ(warm->reuse_prefix(3, p), reused);
  warm->prefill(3, std::span(p).subspan(reused), got.data());
  cold->release(0);
  cold->prefill(0, p, ref.data());
  EXPECT_LE(max_diff(ref.data(), got.data(), V), kTol);
  const KvUsage usage = warm->kv->usage();
  EXPECT_EQ(usage.prefix_hits, 3);
  EXPECT_EQ(usage.prefix_saved_tokens, 2 * reused + 16);
}

TEST_P(Runtime, VerifyEqualsSequentialDecodeAndTruncateRollsBack) {
  auto m = open_kv(path(), "paged");
  const int V = m->config().n_vocab;
  auto p = prompt("p3");
  std::vector<int32_t> toks;
  auto ref = reference_run(*m, 0, p, 10, &toks);
  // Verify: the prompt, then the 9 draft tokens in one pass, logits at every position.
  std::vector<float> lp(V), lv(9 * V);
  m->prefill(1, p, lp.data());
  m->forward_verify(1, std::span(toks).first(9), lv.data());
  for (int s = 0; s < 9; ++s) EXPECT_LE(max_diff(&lv[s * V], &ref[(s + 1) * V], V), kTol) << s;
  // Reject the last 5 (including a block-crossing), then decode a different token: equal to a
  // sequence that never saw the rejected ones.
  m->truncate_kv(1, p.size() + 4);
  const int32_t other = (toks[4] + 7) % V;
  std::vector<float> a(V), b(V);
  m->decode(1, other, m->seq_len(1), a.data());
  m->prefill(2, p, b.data());
  m->prefill(2, std::span(toks).first(4), b.data());
  m->decode(2, other, m->seq_len(2), b.data());
  EXPECT_LE(max_diff(a.data(), b.data(), V), kTol);
}

TEST_P(Runtime, ContiguousVerifyAndTruncateToo) {
  auto m = open_kv(path(), "contiguous");
  const int V = m->config().n_vocab;
  auto p = prompt("p2");
  std::vector<int32_t> toks;
  auto ref = reference_run(*m, 0, p, 6, &toks);
  std::vector<float> lp(V), lv(5 * V);
  m->prefill(1, p, lp.data());
  m->forward_verify(1, std::span(toks).first(5), lv.data());
  for (int s = 0; s < 5; ++s) EXPECT_LE(max_diff(&lv[s * V], &ref[(s + 1) * V], V), kTol);
  m->truncate_kv(1, p.size() + 1);
  m->decode(1, toks[1], m->seq_len(1), lp.data());
  EXPECT_LE(max_diff(lp.data(), &ref[2 * V], V), kTol);
}

// The newer families too (tests/data/families): Gemma's and Mistral's windowed layers, Phi's
// LongRoPE and fused projections, SmolLM3's layers without RoPE.
INSTANTIATE_TEST_SUITE_P(Dense, Runtime,
                         ::testing::Values("llama", "llama3-ropescaled", "qwen2", "qwen3", "smollm3", "phi3",
                                           "gemma2", "gemma3", "mistral", "gpt-oss"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

// --- errors -------------------------------------------------------------------------------

class RuntimeErrors : public ::testing::Test {
 protected:
  std::string path() const { return model_file("qwen3", "gguf/qwen3-Q8_0.gguf"); }
};

TEST_F(RuntimeErrors, PoolExhaustionIsCleanAndOthersKeepWorking) {
  auto m = open_kv(path(), "paged", false, /*pool=*/64, /*capacity=*/64);  // 4 blocks
  const int V = m->config().n_vocab;
  auto p = prompt_ids("qwen3", "p3");  // 51 tokens = 4 blocks
  std::vector<float> a(V), b(V), ref(V);
  m->prefill(0, std::span(p).first(20), a.data());                               // 2 blocks
  EXPECT_THROW(m->prefill(1, std::span(p).first(40), b.data()), CapacityError);  // needs 3 more
  EXPECT_EQ(m->seq_len(1), 0);
  EXPECT_FALSE(m->can_fit(std::vector<std::pair<int, int64_t>>{{1, 40}}));
  EXPECT_TRUE(m->can_fit(std::vector<std::pair<int, int64_t>>{{1, 32}}));
  // Sequence 0 is intact: continuing it gives the same logits as a fresh model.
  m->prefill(0, std::span(p).subspan(20, 10), a.data());
  auto fresh = open_kv(path(), "paged");
  fresh->prefill(0, std::span(p).first(30), ref.data());
  EXPECT_LE(max_diff(a.data(), ref.data(), V), kTol);
  // A batch that does not fit changes nothing at all.
  int32_t t = 1;
  SeqInput items[2] = {seq_input(0, std::span(&t, 1)), seq_input(2, std::span(p).first(40))};
  std::vector<float> two(2 * V);
  EXPECT_THROW(m->forward(items, two.data()), CapacityError);
  EXPECT_EQ(m->seq_len(0), 30);
  EXPECT_EQ(m->seq_len(2), 0);
  // Releasing frees the blocks for others.
  m->release(0);
  m->prefill(1, std::span(p).first(40), b.data());
  EXPECT_EQ(m->seq_len(1), 40);
}

TEST_F(RuntimeErrors, UnknownSequencePastCapacityAndWrongPosition) {
  for (const char* layout : {"contiguous", "paged"}) {
    auto m = open_kv(path(), layout, false, 0, /*capacity=*/32);
    const int V = m->config().n_vocab;
    std::vector<float> l(V);
    EXPECT_THROW(m->release(7), Error);
    EXPECT_THROW(m->truncate_kv(7, 0), Error);
    auto p = prompt_ids("qwen3", "p3");
    EXPECT_THROW(m->prefill(0, std::span(p).first(33), l.data()), CapacityError) << layout;
    m->prefill(0, std::span(p).first(32), l.data());
    EXPECT_THROW(m->decode(0, 5, 32, l.data()), CapacityError) << layout;
    m->prefill(1, std::span(p).first(3), l.data());
    EXPECT_THROW(m->decode(1, 5, 7, l.data()), Error) << layout;
    try {
      m->decode(1, 5, 7, l.data());
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("position 7"), std::string::npos) << e.what();
    }
    EXPECT_THROW(m->prefill(1, std::vector<int32_t>{V + 3}, l.data()), Error);
    m->decode(1, 5, 3, l.data());  // still fine
    EXPECT_EQ(m->seq_len(1), 4);
  }
}

}  // namespace
}  // namespace ferrum::test::runtime_test
