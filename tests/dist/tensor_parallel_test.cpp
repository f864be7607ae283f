// Tensor parallelism (src/dist, models/tensor_shard.cpp) against the model in one piece: the ranks
// run as threads of this process over the in-process transport (the MPI transport carries the
// same messages and collectives; the CLI test runs it under mpirun). The ranks' partial sums are
// added in another order than the whole model's products, so the logits agree to rounding, and
// the greedy tokens are the whole model's.
#include "dist/tensor_parallel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "../models/model_test_util.h"
#include "dist/pipeline.h"
#include "dist_test_util.h"
#include "engine/engine.h"
#include "engine/ngram_proposer.h"
#include "ferrum/error.h"
#include "loading/loader.h"
#include "models/registry.h"
#include "models/tensor_parallel.h"
#include "test_util.h"

namespace ferrum::test::tensor_parallel_test {
namespace {

using namespace std::chrono_literals;

ModelOptions options(Precision p) {
  ModelOptions o;
  o.n_threads = 1;
  o.max_batch = 32;
  o.precision = p;
  return o;
}

std::unique_ptr<Model> whole(const std::string& path, Precision p) {
  ModelFiles f = open_model_files(path);
  return create_model(std::move(f.config), std::move(f.weights), options(p));
}

std::unique_ptr<Model> split(const std::string& path, int ranks, Precision p) {
  dist::TensorParallelOptions t;
  t.ranks = ranks;
  t.in_process = true;
  return dist::load_tensor_parallel(path, options(p), t);
}

// Pipeline stages, each over `ranks` tensor-parallel ranks (threads of this process).
std::unique_ptr<Model> stages_of_splits(const std::string& path, int stages, int ranks, Precision p) {
  dist::PipelineOptions o;
  o.stages = stages;
  o.tensor_parallel = ranks;
  o.in_process = true;
  return dist::load_pipeline(path, options(p), o);
}

// Logits of the two sequences decoding `feed` (the one-process model's greedy tokens, so every model
// sees the same inputs).
std::vector<float> run(Model& m, const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                       const std::vector<int32_t>& feed, KvLayout layout) {
  return two_sequences(m, a, b, static_cast<int>(feed.size() / 2), layout, feed);
}

// The greedy tokens of `steps` decode steps of the two sequences, two per step.
std::vector<int32_t> greedy_feed(Model& m, const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                                 int steps) {
  std::vector<int32_t> feed;
  two_sequences(m, a, b, steps, KvLayout::Paged, {}, &feed);
  return feed;
}

class TensorParallel : public ::testing::TestWithParam<std::string> {
 protected:
  std::string path() const { return rank_fixture(GetParam()); }
};

// Two pipeline stages of two tensor-parallel ranks each: the stages' hidden rows and the cache
// operations reach every rank of every stage.
TEST_P(TensorParallel, StagesOfSplitLayersGiveTheWholeModelsLogits) {
  const std::vector<int32_t> a = prompt_ids(GetParam(), "p4"), b = prompt_ids(GetParam(), "p2");
  auto one = whole(path(), Precision::Exact);
  const std::vector<int32_t> feed = greedy_feed(*one, a, b, 6);
  const std::vector<float> want = run(*one, a, b, feed, KvLayout::Paged);
  auto grid = stages_of_splits(path(), 2, 2, Precision::Exact);
  const std::vector<float> got = run(*grid, a, b, feed, KvLayout::Paged);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  EXPECT_LT(worst, 1e-4 * std::max(1.0, scale)) << GetParam();
}

TEST_P(TensorParallel, LogitsAreTheWholeModelsToRounding) {
  const std::vector<int32_t> a = prompt_ids(GetParam(), "p4"), b = prompt_ids(GetParam(), "p2");
  auto one = whole(path(), Precision::Exact);
  const std::vector<int32_t> feed = greedy_feed(*one, a, b, 8);
  const int V = one->config().n_vocab;
  for (KvLayout layout : {KvLayout::Contiguous, KvLayout::Paged}) {
    const std::vector<float> want = run(*one, a, b, feed, layout);
    auto tp = split(path(), 2, Precision::Exact);
    const std::vector<float> got = run(*tp, a, b, feed, layout);
    ASSERT_EQ(got.size(), want.size());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::abs(double(got[i]) - want[i]));
      scale = std::max(scale, std::abs(double(want[i])));
    }
    EXPECT_LT(worst, 1e-4 * std::max(1.0, scale)) << GetParam() << ", " << kv_layout_name(layout);
    for (size_t r = 0; r < got.size() / V; ++r)
      EXPECT_EQ(argmax(&got[r * V], V), argmax(&want[r * V], V)) << "row " << r;
  }
}

// The engine's cache operations (prefix-cache reuse, releases, speculative rollbacks) reach every
// rank's cache: the answers are the whole model's (exact precision: the same greedy tokens).
TEST_P(TensorParallel, EngineAnswersAreTheWholeModels) {
  auto one = whole(path(), Precision::Exact);
  auto tp = split(path(), 2, Precision::Exact);
  auto answers = [&](Model& m) { return engine_answers(m, path(), GetParam(), 20); };
  const auto want = answers(*one), got = answers(*tp);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "request " << i;
  tp.reset();
  auto grid = stages_of_splits(path(), 2, 2, Precision::Exact);  // 2 stages of 2 ranks
  const auto got_grid = answers(*grid);
  ASSERT_EQ(got_grid.size(), want.size());
  for (size_t i = 0; i < got_grid.size(); ++i)
    EXPECT_EQ(got_grid[i], want[i]) << "stages of ranks, request " << i;
}

INSTANTIATE_TEST_SUITE_P(Models, TensorParallel,
                         ::testing::Values("llama", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3",
                                           "smollm3", "mistral", "gpt-oss"));

}  // namespace
}  // namespace ferrum::test::tensor_parallel_test

namespace ferrum::test::tensor_parallel_test {
namespace {

// Four ranks on a model with two key/value heads: pairs of ranks share one (each holds a copy).
TEST(TensorParallelShares, MoreRanksThanKeyValueHeads) {
  const std::string path = model_file("llama", "gguf/llama-Q8_0.gguf");
  const std::vector<int32_t> a = prompt_ids("llama", "p4"), b = prompt_ids("llama", "p2");
  auto one = whole(path, Precision::Exact);
  const std::vector<int32_t> feed = greedy_feed(*one, a, b, 4);
  auto tp = split(path, 4, Precision::Exact);
  EXPECT_EQ(tp->config().n_head, one->config().n_head);  // callers see the whole model's shape
  EXPECT_EQ(tp->cache_heads(), 1);                       // a rank's cache holds its key/value head
  const std::vector<float> want = run(*one, a, b, feed, KvLayout::Paged),
                           got = run(*tp, a, b, feed, KvLayout::Paged);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << i;
}

// Each rank holds about its share of the weights: the split matrices' slices and the whole
// embedding and norms; what `ferrum info --tp N` prints is what a rank's model holds.
TEST(TensorParallelShares, EachRankHoldsItsShare) {
  const std::string path = model_file("llama", "gguf/llama-Q8_0.gguf");
  ModelFiles f = open_model_files(path);
  const uint64_t total = f.weights.total_bytes();
  const uint64_t embd = f.weights.get("token_embd.weight").nbytes;
  uint64_t sum = 0;
  for (int r = 0; r < 2; ++r) {
    const uint64_t mine = shard_bytes(f.config, f.weights, r, 2);
    EXPECT_LT(mine, (total - embd) / 2 + embd + total / 100) << "rank " << r;
    sum += mine;
  }
  EXPECT_GE(sum, total);  // the embedding and the norms are on both
  auto tp = split(path, 2, Precision::Exact);
  EXPECT_EQ(tp->weight_bytes(), shard_bytes(f.config, f.weights, 0, 2));
}

TEST(TensorParallelErrors, WhatCannotBeSplitIsNamed) {
  const std::string llama = model_file("llama", "gguf/llama-Q8_0.gguf");
  EXPECT_NE(error_of([&] {
              split(llama, 3, Precision::Fast);
            }).find("4 attention heads do not split evenly over 3"),
            std::string::npos);
  // K-quant rows (blocks of 256) cut at a rank's 128 attention columns.
  const std::string err =
      error_of([&] { split(model_file("llama", "gguf/llama-Q4_K_M.gguf"), 2, Precision::Fast); });
  EXPECT_NE(err.find("attn_output.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("block boundaries"), std::string::npos) << err;
  // A bad batch fails on every rank alike, and the ranks go on (their caches unchanged).
  auto tp = split(llama, 2, Precision::Exact);
  KvOptions ko;
  ko.capacity = 16;
  auto kv = KvCache::for_model(*tp, ko);
  const std::vector<int32_t> bad = {1, 99999}, good = {1, 2, 3};
  EXPECT_NE(error_of([&] { tp->prefill(*kv, 0, bad, nullptr); }).find("out of range"), std::string::npos);
  const std::vector<int32_t> long_prompt(40, 5);
  EXPECT_THROW(tp->prefill(*kv, 0, long_prompt, nullptr), CapacityError);
  std::vector<float> logits(tp->config().n_vocab);
  tp->prefill(*kv, 0, good, logits.data());
  auto one = whole(llama, Precision::Exact);
  auto kv1 = KvCache::for_model(*one, ko);
  std::vector<float> want(one->config().n_vocab);
  one->prefill(*kv1, 0, good, want.data());
  EXPECT_EQ(argmax(logits.data(), logits.size()), argmax(want.data(), want.size()));
}

}  // namespace
}  // namespace ferrum::test::tensor_parallel_test
