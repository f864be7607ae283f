// BERT sentences/s at batch 1 and 32 (DISABLED_: run with --gtest_also_run_disabled_tests
// --gtest_filter='*BertBench*'). Random weights in the shape of bge-small-en (hidden 384, 12
// layers, 12 heads, FFN 1536, 512 positions, vocab 30522), F16 and Q8_0 matrices, sentences of
// 24 tokens (the longest fixture sentence).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "core/quant.h"
#include "core/thread_pool.h"
#include "ferrum/embeddings.h"
#include "model_test_util.h"
#include "models/bert_model.h"

namespace ferrum::test {
namespace {


void add_tensor(WeightSet& w, const std::string& name, DType type, std::vector<int64_t> ne, float sigma,
                float mean, uint64_t seed) {
  const int64_t cols = ne[0];
  int64_t rows = 1;
  for (size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
  const size_t rb = row_size(type, cols);
  uint8_t* data = w.allocate(rb * rows);
  std::vector<float> row(cols);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      row[c] = mean + sigma * 3.4641016f * (static_cast<float>(s >> 40) / static_cast<float>(1 << 24) - 0.5f);
    }
    if (type == DType::F32)
      std::memcpy(data + r * rb, row.data(), rb);
    else
      quantize_row(type, row.data(), data + r * rb, cols);
  }
  TensorView t;
  t.name = name;
  t.type = type;
  t.n_dims = static_cast<int>(ne.size());
  for (size_t i = 0; i < ne.size(); ++i) t.ne[i] = ne[i];
  t.data = data;
  t.nbytes = rb * rows;
  w.add(t);
}

std::unique_ptr<BertModel> random_bert(DType mt) {
  ModelConfig c;
  c.arch = Arch::Bert;
  c.n_layer = 12;
  c.n_embd = 384;
  c.n_head = 12;
  c.n_head_kv = 12;
  c.n_ff = 1536;
  c.n_ctx_train = 512;
  c.norm_eps = 1e-12f;
  c.pooling = Pooling::Mean;
  c.normalize = true;
  const int64_t d = c.n_embd, ff = c.n_ff;
  WeightSet w("random-bert");
  uint64_t seed = 1;
  add_tensor(w, "token_embd.weight", DType::F16, {d, 30522}, 0.5f, 0, seed++);
  add_tensor(w, "position_embd.weight", DType::F32, {d, 512}, 0.5f, 0, seed++);
  add_tensor(w, "token_types.weight", DType::F32, {d, 2}, 0.5f, 0, seed++);
  add_tensor(w, "token_embd_norm.weight", DType::F32, {d}, 0.1f, 1, seed++);
  add_tensor(w, "token_embd_norm.bias", DType::F32, {d}, 0.1f, 0, seed++);
  for (int l = 0; l < c.n_layer; ++l) {
    auto n = [&](const char* s) { return fmt::format("blk.{}.{}", l, s); };
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      add_tensor(w, n(m) + std::string(".weight"), mt, {d, d}, 1 / std::sqrt(float(d)), 0, seed++);
      add_tensor(w, n(m) + std::string(".bias"), DType::F32, {d}, 0.05f, 0, seed++);
    }
    add_tensor(w, n("ffn_up.weight"), mt, {d, ff}, 1 / std::sqrt(float(d)), 0, seed++);
    add_tensor(w, n("ffn_up.bias"), DType::F32, {ff}, 0.05f, 0, seed++);
    add_tensor(w, n("ffn_down.weight"), mt, {ff, d}, 0.7f / std::sqrt(float(ff)), 0, seed++);
    add_tensor(w, n("ffn_down.bias"), DType::F32, {d}, 0.05f, 0, seed++);
    for (const char* m : {"attn_output_norm", "layer_output_norm"}) {
      add_tensor(w, n(m) + std::string(".weight"), DType::F32, {d}, 0.1f, 1, seed++);
      add_tensor(w, n(m) + std::string(".bias"), DType::F32, {d}, 0.05f, 0, seed++);
    }
  }
  ModelOptions o;
  o.precision = Precision::Fast;
  o.n_threads = bench_threads();
  return std::make_unique<BertModel>(c, std::move(w), o);
}

TEST(BertBench, DISABLED_SentencesPerSecondBatch1And32) {
  for (DType mt : {DType::F16, DType::Q8_0}) {
    auto m = random_bert(mt);
    std::vector<std::vector<int32_t>> sentences(32);
    for (size_t s = 0; s < sentences.size(); ++s) {
      sentences[s].push_back(101);
      for (int i = 0; i < 22; ++i)
        sentences[s].push_back(static_cast<int32_t>(1000 + (s * 131 + i * 17) % 29000));
      sentences[s].push_back(102);
    }
    embeddings(*m, {sentences[0]});  // warm-up
    // Batch 1: one sentence per call.
    auto a = std::chrono::steady_clock::now();
    double c0 = cpu_seconds();
    for (const auto& s : sentences) embeddings(*m, {s});
    const double s1 = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    const double c1 = cpu_seconds() - c0;
    // Batch 32: all in one call, repeated.
    const int reps = 4;
    a = std::chrono::steady_clock::now();
    c0 = cpu_seconds();
    for (int r = 0; r < reps; ++r) embeddings(*m, sentences);
    const double s32 = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    const double c32 = cpu_seconds() - c0;
    const int threads = bench_threads() > 0 ? bench_threads() : ThreadPool::default_threads();
    std::printf(
        "BERT bge-small shape, %s matrices, 24-token sentences, %d threads: batch 1 %.1f sent/s wall (%.1f "
        "per "
        "CPU-second), batch 32 %.1f sent/s wall (%.1f per CPU-second)\n",
        dtype_name(mt), threads, 32 / s1, 32 / c1, reps * 32 / s32, reps * 32 / c32);
  }
}

}  // namespace
}  // namespace ferrum::test
