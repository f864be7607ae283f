// Pipeline stages (src/dist) against the model in one piece: the stages run as threads of this
// process over the in-process transport (the MPI transport carries the same messages; the CLI
// test runs it under mpirun). With F32 rows between stages the logits are those of the whole
// model bit for bit, in prefill chunks, batched decode and at any split; an engine over the
// pipeline (paged cache, prefix cache hits, speculative rollbacks, all replayed on the later
// ranks' caches) gives the whole model's greedy answers; a later stage's error reaches rank 0.
#include "dist/pipeline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "../models/model_test_util.h"
#include "dist/local_transport.h"
#include "dist/pipeline_model.h"
#include "dist/pipeline_split.h"
#include "dist/stage_worker.h"
#include "dist_test_util.h"
#include "engine/engine.h"
#include "engine/ngram_proposer.h"
#include "ferrum/error.h"
#include "loading/loader.h"
#include "models/registry.h"
#include "test_util.h"

namespace ferrum::test::pipeline_test {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Model> whole(const std::string& path) {
  ModelFiles f = open_model_files(path);
  ModelOptions o;
  o.n_threads = 2;
  o.max_batch = 32;
  return create_model(std::move(f.config), std::move(f.weights), o);
}

std::unique_ptr<Model> pipelined(const std::string& path, int stages, const std::string& split = "",
                                 bool bf16 = false, int micro = 0) {
  ModelOptions o;
  o.n_threads = 1;
  o.max_batch = 32;
  dist::PipelineOptions p;
  p.stages = stages;
  p.split = split;
  p.bf16_rows = bf16;
  p.micro_batches = micro;
  p.in_process = true;
  return dist::load_pipeline(path, o, p);
}

std::vector<float> run(Model& m, const std::vector<int32_t>& a, const std::vector<int32_t>& b, int steps,
                       KvLayout layout) {
  return two_sequences(m, a, b, steps, layout);  // each step's greedy tokens
}

class Pipeline : public ::testing::TestWithParam<std::string> {
 protected:
  std::string path() const { return rank_fixture(GetParam()); }
};

TEST_P(Pipeline, LogitsAreTheWholeModelsBitForBit) {
  const std::vector<int32_t> a = prompt_ids(GetParam(), "p4"), b = prompt_ids(GetParam(), "p2");
  auto one = whole(path());
  const int n = one->config().n_layer;
  for (KvLayout layout : {KvLayout::Contiguous, KvLayout::Paged}) {
    const std::vector<float> want = run(*one, a, b, 20, layout);
    // Splits, and passes cut into 1, 2 (one per stage) and 5 micro-batches (prompt chunks too).
    std::vector<std::tuple<int, std::string, int>> splits = {
        {2, "", 1}, {2, "", 0}, {2, std::to_string(n - 1) + ",1", 5}};
    if (n >= 3) splits.push_back({3, "", 0});
    for (const auto& [stages, split, micro] : splits) {
      auto p = pipelined(path(), stages, split, false, micro);
      const std::vector<float> got = run(*p, a, b, 20, layout);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << GetParam() << ": " << stages << " stages, split '" << split << "', " << micro
          << " micro-batches, " << kv_layout_name(layout);
    }
  }
  // BF16 rows between the stages: rounded, the same tokens.
  const std::vector<float> want = run(*one, a, b, 4, KvLayout::Paged);
  auto p = pipelined(path(), 2, "", true);
  const std::vector<float> got = run(*p, a, b, 4, KvLayout::Paged);
  const int V = one->config().n_vocab;
  for (size_t r = 0; r < got.size() / V; ++r)
    EXPECT_EQ(argmax(&got[r * V], V), argmax(&want[r * V], V)) << "row " << r;
}

// The engine's cache operations (prefix-cache reuse, releases, speculative rollbacks) reach the
// later stages' caches: the answers are the whole model's, twice over the same prompts.
TEST_P(Pipeline, EngineAnswersAreTheWholeModels) {
  auto one = whole(path());
  auto p = pipelined(path(), 2);
  auto answers = [&](Model& m) { return engine_answers(m, path(), GetParam(), 24); };
  const auto want = answers(*one), got = answers(*p);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].size(), 24 + i % 16);
    EXPECT_EQ(got[i], want[i]) << "request " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Pipeline,
                         ::testing::Values("llama", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3",
                                           "smollm3", "mistral", "gpt-oss"));

// Passes in flight: each sequence's decode step begun before the other's ended, a pass on another
// cache run whole while they fly (an embeddings request between the engine's steps), the passes
// ended in either order: each gets the logits the whole model gives it, bit for bit.
std::vector<float> passes_in_flight(Model& m, const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                                    bool oldest_first) {
  KvOptions ko;
  ko.layout = KvLayout::Paged;
  ko.capacity = 256;
  auto kv = KvCache::for_model(m, ko), other = KvCache::for_model(m, ko);
  const int V = m.config().n_vocab;
  std::vector<float> out, logits(3 * V);
  m.prefill(*kv, 0, a, logits.data());
  m.prefill(*kv, 1, b, logits.data() + V);
  std::vector<int32_t> next = {argmax(logits.data(), V), argmax(logits.data() + V, V)};
  for (int step = 0; step < 6; ++step) {
    std::vector<SeqInput> in(2);
    uint64_t pass[2];
    for (int s = 0; s < 2; ++s) {
      in[s].seq = s;
      in[s].tokens = std::span(&next[s], 1);
      pass[s] = m.begin_forward(*kv, std::span(&in[s], 1), ForwardOut{logits.data() + s * V, nullptr});
    }
    m.prefill(*other, 0, std::span(a).first(3 + step), logits.data() + 2 * V);
    m.end_forward(pass[oldest_first ? 0 : 1]);
    m.end_forward(pass[oldest_first ? 1 : 0]);
    out.insert(out.end(), logits.begin(), logits.end());
    next = {argmax(logits.data(), V), argmax(logits.data() + V, V)};
  }
  return out;
}

TEST(PipelinePasses, InFlightPassesGetTheirOwnOutputs) {
  const std::string family = "gemma3", path = rank_fixture(family);  // 4 layers, windowed ones among them
  const std::vector<int32_t> a = prompt_ids(family, "p4"), b = prompt_ids(family, "p2");
  auto one = whole(path);
  const std::vector<float> want = passes_in_flight(*one, a, b, true);
  for (int stages : {2, 3}) {
    auto p = pipelined(path, stages);
    EXPECT_EQ(p->max_passes_in_flight(), stages);
    for (bool oldest_first : {true, false}) {
      const std::vector<float> got = passes_in_flight(*p, a, b, oldest_first);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << stages << " stages, " << (oldest_first ? "oldest" : "newest") << " ended first";
    }
    EXPECT_NE(error_of([&] { p->end_forward(12345); }).find("not in flight"), std::string::npos);
  }
}

TEST(PipelineErrors, ALaterStagesErrorReachesRankZero) {
  const std::string path = model_file("llama", "gguf/llama-Q8_0.gguf");
  ModelFiles f = open_model_files(path);
  ModelOptions o;
  o.n_threads = 1;
  o.layer_begin = 1;
  auto stage = create_model(std::move(f.config), std::move(f.weights), o);
  dist::LocalWorld world(2);
  std::thread worker([&] { dist::StageWorker(*stage, world.endpoint(1)).run(); });
  dist::Transport& r0 = world.endpoint(0);
  // A pass on a cache rank 0 never created, then one with rows of the wrong width.
  dist::StageBatch b;
  b.cache = 5;
  b.items.push_back({0, 1, Want::Last, Want::None});
  b.ids = {1};
  b.rows.assign(stage->config().n_embd, 0.5f);
  r0.send(1, dist::encode_forward(b));
  dist::Bytes reply = r0.recv(1);
  ASSERT_EQ(dist::kind_of(reply), dist::MsgKind::Error);
  EXPECT_NE(dist::decode_error(reply).find("pipeline rank 1: "), std::string::npos)
      << dist::decode_error(reply);
  KvOp create;
  create.kind = KvOp::Kind::Create;
  create.options.capacity = 64;
  b.cache = 0;
  b.ops = {create};
  b.rows.pop_back();
  r0.send(1, dist::encode_forward(b));
  reply = r0.recv(1);
  ASSERT_EQ(dist::kind_of(reply), dist::MsgKind::Error);
  EXPECT_NE(dist::decode_error(reply).find("rows"), std::string::npos) << dist::decode_error(reply);
  // A truncated message is refused, not read past its end.
  dist::Bytes cut = dist::encode_forward(b);
  cut.resize(cut.size() / 2);
  r0.send(1, cut);
  reply = r0.recv(1);
  ASSERT_EQ(dist::kind_of(reply), dist::MsgKind::Error);
  EXPECT_NE(dist::decode_error(reply).find("pipeline message"), std::string::npos)
      << dist::decode_error(reply);
  r0.send(1, dist::encode_stop());
  worker.join();
}

TEST(PipelineErrors, SplitsAndStageCounts) {
  const std::string path = model_file("llama", "gguf/llama-Q8_0.gguf");
  EXPECT_NE(error_of([&] { pipelined(path, 2, "1,2"); }).find("covers 3 layers"), std::string::npos);
  EXPECT_NE(error_of([&] { pipelined(path, 3, "1,1"); }).find("2 stages for --pipeline 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { pipelined(path, 2, "x,1"); }).find("--pipeline-split 'x,1'"), std::string::npos);
  EXPECT_NE(error_of([&] { pipelined(path, 99); }).find("one at least per stage"), std::string::npos);
}

TEST(PipelineSplit, BalancedByWeightBytes) {
  auto ranges = dist::balanced_split({10, 10, 10, 10}, 0, 2);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].end, 2);
  EXPECT_EQ(ranges[1].begin, 2);
  EXPECT_EQ(ranges[1].end, 4);
  // A large output matrix leaves the last stage fewer layers.
  ranges = dist::balanced_split({10, 10, 10, 10, 10, 10}, 40, 2);
  EXPECT_EQ(ranges[0].end, 5);
  // Every stage gets a layer at least.
  ranges = dist::balanced_split({100, 1, 1}, 0, 3);
  EXPECT_EQ(ranges[0].end, 1);
  EXPECT_EQ(ranges[1].end, 2);
  EXPECT_EQ(ranges[2].end, 3);
}

}  // namespace
}  // namespace ferrum::test::pipeline_test
