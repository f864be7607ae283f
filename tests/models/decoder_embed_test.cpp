// Decoder embeddings (models/decoder_embed.h): pooled final hidden states checked against
// llama.cpp through the LM head (a linear map, so it commutes with the pooling): the last token's
// vector times the head is llama.cpp's last-position logits, the mean vector times the head is the
// mean of its logit rows. Plus: a sequence's vector does not depend on the batch or on how it is
// chunked (bitwise), normalization, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "ferrum/embeddings.h"
#include "lm_head_reference.h"
#include "model_test_util.h"

namespace ferrum::test {
namespace {

std::unique_ptr<Model> open_with(const std::string& path, Precision prec, int64_t max_batch = 256,
                                 int layer_end = -1) {
  ModelFiles files = open_model_files(path);
  ModelOptions o;
  o.n_threads = 2;
  o.precision = prec;
  o.max_batch = max_batch;
  o.layer_end = layer_end;
  return create_model(std::move(files.config), std::move(files.weights), o);
}

class DecoderEmbed : public ::testing::TestWithParam<std::string> {};

// Exact path over the F32 file against llama.cpp's F32 logits (F32 KV cache, as llama.cpp's):
// the tolerance of the F32 golden tests (1e-4 per logit), as the pooled vector is the very row the logits are
// made from (measured: at most 5.1e-6 for last, 2.0e-6 for mean, on p2..p4 of both models).
TEST_P(DecoderEmbed, PooledStatesTimesTheHeadAreLlamaCppLogits) {
  const std::string m = GetParam(), path = model_file(m, "gguf/" + m + "-F32.gguf");
  auto model = open_with(path, Precision::Exact);
  for (const char* pid : {"p2", "p3", "p4"}) {
    SCOPED_TRACE(pid);
    const auto ids = prompt_ids(m, pid);
    const auto ref = load_npy(model_file(m, std::string("logits/F32/") + pid + ".npy"));
    const int64_t n = ref.shape[0], V = ref.shape[1];
    ASSERT_EQ(n, static_cast<int64_t>(ids.size()));
    EmbedOptions o;
    o.kv_type = parse_kv_type(kReferenceKvType);
    o.normalize = false;
    o.pooling = Pooling::Last;
    const auto last = embeddings(*model, {ids}, o);
    o.pooling = Pooling::Mean;
    const auto mean = embeddings(*model, {ids}, o);
    const auto l_last = times_lm_head(path, last[0].data(), 1, last[0].size()),
               l_mean = times_lm_head(path, mean[0].data(), 1, mean[0].size());
    double worst_last = 0, worst_mean = 0;
    for (int64_t v = 0; v < V; ++v) {
      worst_last = std::max(worst_last, std::fabs(l_last[v] - ref.data[(n - 1) * V + v]));
      double s = 0;
      for (int64_t t = 0; t < n; ++t) s += ref.data[t * V + v];
      worst_mean = std::max(worst_mean, std::fabs(l_mean[v] - s / n));
    }
    std::printf("%s %s (%lld tokens): pooled x head vs llama.cpp, last %.3g, mean %.3g\n", m.c_str(), pid,
                static_cast<long long>(n), worst_last, worst_mean);
    EXPECT_LE(worst_last, 1e-4);
    EXPECT_LE(worst_mean, 1e-4);
    EXPECT_GT(worst_last, 0.0);  // sanity: computed, not copied
  }
}

// Fast path over a quantized file: a batch of prompts packed into small forwards (max_batch 8,
// so most prompts are split, at different points than when alone) gives each prompt's vector
// bit for bit; normalized vectors have length 1; mean and last pooling differ.
TEST_P(DecoderEmbed, BatchEqualsEachAloneAndIsNormalized) {
  const std::string m = GetParam(), path = model_file(m, "gguf/" + m + "-Q4_K_M.gguf");
  auto small = open_with(path, Precision::Fast, 8);
  auto whole = open_with(path, Precision::Fast, 256);
  std::vector<std::vector<int32_t>> batch;
  for (const char* pid : {"p1", "p2", "p3", "p4"}) batch.push_back(prompt_ids(m, pid));
  batch.push_back({batch[0][0]});  // one token
  for (Pooling p : {Pooling::Last, Pooling::Mean}) {
    SCOPED_TRACE(pooling_name(p));
    EmbedOptions o;
    o.pooling = p;
    const auto all = embeddings(*small, batch, o);
    ASSERT_EQ(all.size(), batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      const auto alone = embeddings(*small, {batch[i]}, o);
      const auto one_forward = embeddings(*whole, {batch[i]}, o);
      EXPECT_EQ(all[i], alone[0]) << i;
      EXPECT_EQ(all[i], one_forward[0]) << i;
      double ss = 0;
      for (float x : all[i]) ss += double(x) * x;
      EXPECT_NEAR(std::sqrt(ss), 1.0, 1e-6) << i;
    }
  }
  EmbedOptions last, mean;
  mean.pooling = Pooling::Mean;
  EXPECT_NE(embeddings(*whole, {batch[1]}, last)[0], embeddings(*whole, {batch[1]}, mean)[0]);
  // One token: its mean is its last row.
  EXPECT_EQ(embeddings(*whole, {batch[4]}, last)[0], embeddings(*whole, {batch[4]}, mean)[0]);
}

INSTANTIATE_TEST_SUITE_P(Families, DecoderEmbed, ::testing::Values("llama", "qwen3"));

TEST(DecoderEmbedErrors, BadInputsAndModels) {
  const std::string path = model_file("qwen3", "gguf/qwen3-Q8_0.gguf");
  auto model = open_with(path, Precision::Fast);
  EmbedOptions o;
  EXPECT_NE(error_of([&] {
              embeddings(*model, {{1, 2}, {}}, o);
            }).find("input 1 is empty"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              embeddings(*model, {{1, 640}}, o);
            }).find("token id 640 is out of range"),
            std::string::npos);
  EXPECT_TRUE(embeddings(*model, {}, o).empty());
  o.pooling = Pooling::Cls;
  EXPECT_NE(error_of([&] { embeddings(*model, {{1, 2}}, o); }).find("no CLS token"), std::string::npos);
  auto stage = open_with(path, Precision::Fast, 256, 1);
  EXPECT_NE(error_of([&] {
              embeddings(*stage, {{1, 2}}, EmbedOptions{});
            }).find("whole network"),
            std::string::npos);
}

}  // namespace
}  // namespace ferrum::test
