// The forward-batch interface: token ids and their embedding rows give the same logits, hidden
// states times the LM head give the logits, a model equals its layer-range stages chained, and
// the KV cache is the caller's (dropped and re-created without touching the model). Bitwise
// where the arithmetic is the same; the one tolerance (hidden x head) is stated there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ferrum/error.h"
#include "ferrum/sampler.h"
#include "lm_head_reference.h"
#include "model_test_util.h"

namespace ferrum::test::forward_batch_test {
namespace {

std::unique_ptr<Model> open_stage(const std::string& path, int begin, int end, bool lm_head = true,
                                  Precision prec = Precision::Fast) {
  ModelFiles files = open_model_files(path);
  ModelOptions o;
  o.n_threads = 2;
  o.precision = prec;
  o.layer_begin = begin;
  o.layer_end = end;
  o.lm_head = lm_head;
  return create_model(std::move(files.config), std::move(files.weights), o);
}

// The whole model with its cache. These tests compare ferrum with itself, so they run on the
// default KV type (as the stages' KvOptions{} do).
std::unique_ptr<CachedModel> open_whole(const std::string& path, Precision prec) {
  return open_model(path, prec, 2, /*kv_type=*/"");
}

SeqInput rows_input(int seq, std::span<const float> rows, Want logits = Want::Last,
                    Want hidden = Want::None) {
  SeqInput in;
  in.seq = seq;
  in.embeds = rows;
  in.logits = logits;
  in.hidden = hidden;
  return in;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class ForwardBatch : public ::testing::TestWithParam<std::string> {
 protected:
  std::string path(const std::string& type = "Q4_K_M") const {
    if (is_family(GetParam())) return family_gguf(GetParam(), type);
    return model_file(GetParam(), "gguf/" + GetParam() + "-" + type + ".gguf");
  }
  std::vector<int32_t> prompt(const std::string& pid = "p3") const { return prompt_ids(GetParam(), pid); }
};

TEST_P(ForwardBatch, EmbeddingRowsGiveTheSameLogitsAsTokenIds) {
  auto m = open_whole(path(), Precision::Fast);
  const int64_t V = m->config().n_vocab, d = m->config().n_embd;
  const auto p = prompt();
  std::vector<float> rows(p.size() * d);
  m->model->embed_tokens(p, rows.data());
  std::vector<float> by_ids(p.size() * V), by_rows(p.size() * V);
  SeqInput a = seq_input(0, p, Want::All), b = rows_input(1, rows, Want::All);
  m->forward(std::span(&a, 1), by_ids.data());
  m->forward(std::span(&b, 1), by_rows.data());
  EXPECT_TRUE(bitwise_equal(by_ids, by_rows));
  // A decode step after each: still the same (the cache holds the same keys and values).
  const int32_t next = argmax(&by_ids[(p.size() - 1) * V], V);
  std::vector<float> row(d), l1(V), l2(V);
  m->model->embed_tokens(std::span(&next, 1), row.data());
  SeqInput c = seq_input(0, std::span(&next, 1)), e = rows_input(1, row);
  m->forward(std::span(&c, 1), l1.data());
  m->forward(std::span(&e, 1), l2.data());
  EXPECT_TRUE(bitwise_equal(l1, l2));
}

// Hidden states (after the final norm) times the output matrix, in float64, against the logits
// of the exact path (F32 weights and activations): they differ only by summation order.
TEST_P(ForwardBatch, HiddenStatesTimesTheHeadAreTheLogits) {
  auto m = open_whole(path("F32"), Precision::Exact);
  const int64_t V = m->config().n_vocab, d = m->config().n_embd;
  const auto p = prompt();
  const int64_t n = p.size();
  std::vector<float> logits(n * V), hidden(n * d);
  SeqInput in = seq_input(0, p, Want::All, Want::All);
  m->forward(std::span(&in, 1), logits.data(), hidden.data());
  std::vector<double> want = times_lm_head(path("F32"), hidden.data(), n, d);
  if (const double cap = m->config().final_softcap; cap > 0)  // Gemma 2: cap * tanh(logit / cap)
    for (double& x : want) x = cap * std::tanh(x / cap);
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < n * V; ++i) {
    worst = std::max(worst, std::fabs(want[i] - logits[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  EXPECT_LE(worst, 1e-4 * std::max(1.0, scale)) << "largest logit " << scale;
}

// Stages [0, k), [k, m), [m, n) chained through their hidden states give the whole model's
// logits bit for bit, for a prompt and for decode steps after it (each stage keeps its own
// cache of its own layers).
TEST_P(ForwardBatch, StagesChainedEqualTheWholeModel) {
  const std::string file = path("Q8_0");
  auto whole = open_whole(file, Precision::Fast);
  const int n_layer = whole->config().n_layer;
  ASSERT_GE(n_layer, 2);
  const int k = 1, m = n_layer >= 3 ? n_layer - 1 : 1;
  std::vector<std::unique_ptr<CachedModel>> stages;
  stages.push_back(std::make_unique<CachedModel>(open_stage(file, 0, k), KvOptions{}));
  if (m > k) stages.push_back(std::make_unique<CachedModel>(open_stage(file, k, m), KvOptions{}));
  stages.push_back(std::make_unique<CachedModel>(open_stage(file, m, n_layer), KvOptions{}));
  EXPECT_FALSE(stages.front()->model->has_logits());
  EXPECT_TRUE(stages.back()->model->has_logits());
  EXPECT_EQ(stages.front()->kv->n_layer(), k);

  const int64_t V = whole->config().n_vocab, d = whole->config().n_embd;
  auto chained = [&](std::span<const int32_t> ids) {
    std::vector<float> h(ids.size() * d), next(ids.size() * d), logits(V);
    SeqInput first = seq_input(0, ids, Want::None, Want::All);
    stages[0]->forward(std::span(&first, 1), nullptr, h.data());
    for (size_t s = 1; s + 1 < stages.size(); ++s) {
      SeqInput mid = rows_input(0, h, Want::None, Want::All);
      stages[s]->forward(std::span(&mid, 1), nullptr, next.data());
      h.swap(next);
    }
    SeqInput last = rows_input(0, h);
    stages.back()->forward(std::span(&last, 1), logits.data());
    return logits;
  };
  const auto p = prompt("p4");
  std::vector<float> want(V);
  whole->prefill(0, p, want.data());
  std::vector<float> got = chained(p);
  EXPECT_TRUE(bitwise_equal(want, got));
  for (int step = 0; step < 4; ++step) {
    const int32_t t = argmax(want.data(), V);
    whole->decode(0, t, whole->seq_len(0), want.data());
    got = chained(std::span(&t, 1));
    EXPECT_TRUE(bitwise_equal(want, got)) << "decode step " << step;
  }
}

// A backbone (no LM head) returns the same final hidden states as the full model.
TEST_P(ForwardBatch, BackboneHiddenStatesEqualTheFullModels) {
  const std::string file = path("Q4_0");
  auto full = open_whole(file, Precision::Fast);
  CachedModel backbone(open_stage(file, 0, -1, /*lm_head=*/false), KvOptions{});
  EXPECT_FALSE(backbone.model->has_logits());
  const int64_t d = full->config().n_embd, V = full->config().n_vocab;
  const auto p = prompt();
  std::vector<float> h1(p.size() * d), h2(p.size() * d), logits(V);
  SeqInput a = seq_input(0, p, Want::Last, Want::All), b = seq_input(0, p, Want::None, Want::All);
  full->forward(std::span(&a, 1), logits.data(), h1.data());
  backbone.forward(std::span(&b, 1), nullptr, h2.data());
  EXPECT_TRUE(bitwise_equal(h1, h2));
}

TEST_P(ForwardBatch, ACacheCanBeDroppedAndRecreatedWithoutTouchingTheModel) {
  auto m = open_whole(path(), Precision::Fast);
  const int64_t V = m->config().n_vocab;
  const auto p = prompt("p4");
  std::vector<float> first(V), again(V), other(V);
  m->prefill(0, p, first.data());
  // The same context size (Phi's LongRoPE picks its factors by it), another layout.
  const int64_t capacity = m->kv->capacity();
  m->kv.reset();  // drop it
  m->kv = KvCache::for_model(*m->model, KvOptions{KvLayout::Paged, std::nullopt, capacity, 0, false});
  m->prefill(5, p, again.data());
  EXPECT_TRUE(bitwise_equal(first, again));
  // Two caches on one model: interleaved use, independent sequences.
  auto kv2 = KvCache::for_model(*m->model, KvOptions{});
  m->model->prefill(*kv2, 5, std::span(p).first(7), other.data());
  EXPECT_EQ(kv2->seq_len(5), 7);
  EXPECT_EQ(m->kv->seq_len(5), static_cast<int64_t>(p.size()));
  m->model->prefill(*kv2, 5, std::span(p).subspan(7), other.data());
  EXPECT_TRUE(bitwise_equal(first, other));
}

INSTANTIATE_TEST_SUITE_P(Families, ForwardBatch,
                         ::testing::Values("llama", "llama3-ropescaled", "qwen2", "qwen3", "qwen3moe",
                                           "smollm3", "phi3", "gemma2", "gemma3", "mistral", "gpt-oss"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

// --- errors --------------------------------------------------------------------------------

class ForwardBatchErrors : public ::testing::Test {
 protected:
  std::string path() const { return model_file("qwen3", "gguf/qwen3-Q8_0.gguf"); }
};

TEST_F(ForwardBatchErrors, InputsAndOutputsAStageCannotTake) {
  const int n = open_model_files(path()).config.n_layer;
  CachedModel inner(open_stage(path(), 1, n), KvOptions{});
  const std::vector<int32_t> ids = {1, 2, 3};
  std::vector<float> out(1 << 16);
  SeqInput t = seq_input(0, ids);
  EXPECT_NE(error_of([&] { inner.forward(std::span(&t, 1), out.data()); }).find("give sequence 0 input rows"),
            std::string::npos);
  EXPECT_NE(error_of([&] { inner.model->embed_tokens(ids, out.data()); }).find("only the input stage"),
            std::string::npos);
  CachedModel first(open_stage(path(), 0, 1), KvOptions{});
  EXPECT_NE(error_of([&] { first.forward(std::span(&t, 1), out.data()); }).find("no LM head"),
            std::string::npos);
  const int64_t d = first.config().n_embd;
  std::vector<float> rows(d + 1);
  SeqInput r = rows_input(0, rows, Want::None, Want::All);
  EXPECT_NE(
      error_of([&] { inner.forward(std::span(&r, 1), nullptr, out.data()); }).find("whole number of rows"),
      std::string::npos);
  SeqInput both = seq_input(0, ids, Want::None, Want::All);
  both.embeds = std::span(rows).first(d);
  EXPECT_NE(error_of([&] { first.forward(std::span(&both, 1), nullptr, out.data()); }).find("exactly one"),
            std::string::npos);
  SeqInput no_buf = seq_input(0, ids, Want::None, Want::Last);
  EXPECT_NE(error_of([&] { first.forward(std::span(&no_buf, 1), nullptr, nullptr); }).find("no buffer"),
            std::string::npos);
  EXPECT_EQ(first.seq_len(0), 0);  // nothing ran
  EXPECT_NE(error_of([&] { open_stage(path(), 2, 1); }).find("layer range [2, 1)"), std::string::npos);
  EXPECT_NE(error_of([&] { open_stage(path(), 0, n + 1); }).find("not a non-empty range"), std::string::npos);
}

TEST_F(ForwardBatchErrors, ACacheMadeForAnotherShapeIsRefused) {
  auto whole = open_whole(path(), Precision::Fast);
  auto stage_kv = KvCache::for_model(*open_stage(path(), 0, 1), KvOptions{});
  const std::vector<int32_t> ids = {1, 2, 3};
  std::vector<float> logits(whole->config().n_vocab);
  const std::string e = error_of([&] { whole->model->prefill(*stage_kv, 0, ids, logits.data()); });
  EXPECT_NE(e.find("the KV cache has 1 layers"), std::string::npos) << e;
}

// Positions computed from input rows have no token ids: the prefix cache never offers them.
TEST_F(ForwardBatchErrors, RowsInputIsNotPrefixCached) {
  auto files = open_model_files(path());
  ModelOptions o;
  o.n_threads = 2;
  CachedModel m(create_model(std::move(files.config), std::move(files.weights), o),
                KvOptions{KvLayout::Paged, std::nullopt, 256, 0, true});
  const auto p = prompt_ids("qwen3", "p4");
  const int64_t d = m.config().n_embd;
  std::vector<float> rows(p.size() * d), l(m.config().n_vocab);
  m.model->embed_tokens(p, rows.data());
  SeqInput r = rows_input(0, rows);
  m.forward(std::span(&r, 1), l.data());
  m.release(0);
  EXPECT_EQ(m.reuse_prefix(1, p), 0);
  m.release(1);
  m.prefill(2, p, l.data());  // by ids: cached
  m.release(2);
  EXPECT_GT(m.reuse_prefix(3, p), 0);
}

}  // namespace
}  // namespace ferrum::test::forward_batch_test
