// MoE decode/prefill throughput on a realistic random-weight shape (DISABLED_: run with
// --gtest_also_run_disabled_tests --gtest_filter='*MoeBench*'). Shape (Qwen3-30B-A3B-like, with
// half the experts and fewer layers): hidden 2048, 32 query / 4 KV heads of 128, 64 experts of
// width 768, 8 used, vocab 8192. Matrices Q4_0 (router, norms F32). FERRUM_BENCH_LAYERS (default
// 2) sets the depth; FERRUM_BENCH_GGUF=<path> also writes the model as a GGUF file (for running
// llama.cpp on the same weights).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "core/quant.h"
#include "core/thread_pool.h"
#include "formats/gguf_writer.h"
#include "model_test_util.h"
#include "models/registry.h"

namespace ferrum::test {
namespace {


// Deterministic pseudo-normal values (sum of uniforms), scaled.
struct Rng {
  uint64_t s;
  float next() {
    float acc = 0;
    for (int i = 0; i < 4; ++i) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      acc += static_cast<float>(s >> 40) / static_cast<float>(1 << 24) - 0.5f;
    }
    return acc * 1.7320508f;  // unit variance
  }
};

struct Builder {
  WeightSet w{"random-moe"};
  gguf::Writer g;
  ThreadPool pool{0};
  // A tensor of `rows` rows of `cols` values ~ N(0, sigma^2) stored as `type`.
  void add(const std::string& name, DType type, std::vector<int64_t> ne, float sigma, uint64_t seed) {
    const int64_t cols = ne[0];
    int64_t rows = 1;
    for (size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
    const size_t rb = row_size(type, cols), bytes = rb * rows;
    uint8_t* data = w.allocate(bytes);
    pool.parallel_for(rows, [&](int64_t b, int64_t e, int) {
      std::vector<float> row(cols);
      for (int64_t r = b; r < e; ++r) {
        Rng rng{seed * 0x9E3779B97F4A7C15ull + r * 0xBF58476D1CE4E5B9ull + 1};
        for (int64_t c = 0; c < cols; ++c) row[c] = sigma * rng.next();
        if (type == DType::F32)
          std::memcpy(data + r * rb, row.data(), rb);
        else
          quantize_row(type, row.data(), data + r * rb, cols);
      }
    });
    TensorView t;
    t.name = name;
    t.type = type;
    t.n_dims = static_cast<int>(ne.size());
    for (size_t i = 0; i < ne.size(); ++i) t.ne[i] = ne[i];
    t.data = data;
    t.nbytes = bytes;
    w.add(t);
    g.add_tensor(t);
  }
  void ones(const std::string& name, int64_t n) {
    float* p = reinterpret_cast<float*>(w.allocate(n * 4));
    for (int64_t i = 0; i < n; ++i) p[i] = 1.0f;
    TensorView t;
    t.name = name;
    t.type = DType::F32;
    t.n_dims = 1;
    t.ne = {n, 1, 1, 1};
    t.data = reinterpret_cast<const uint8_t*>(p);
    t.nbytes = n * 4;
    w.add(t);
    g.add_tensor(t);
  }
};

TEST(MoeBench, DISABLED_DecodeAndPrefillTokensPerSecond) {
  const int n_layer = std::getenv("FERRUM_BENCH_LAYERS") ? std::atoi(std::getenv("FERRUM_BENCH_LAYERS")) : 2;
  ModelConfig c;
  c.arch = Arch::Qwen3Moe;
  c.name = "random-moe";
  c.n_layer = n_layer;
  c.n_embd = 2048;
  c.n_head = 32;
  c.n_head_kv = 4;
  c.head_dim = 128;
  c.n_rot = 128;
  c.n_vocab = 8192;
  c.n_ctx_train = 4096;
  c.norm_eps = 1e-6f;
  c.rope_theta = 1e6f;
  c.rope_interleaved = false;
  c.qk_norm = true;
  c.tied_embeddings = false;
  c.n_expert = 64;
  c.n_expert_used = 8;
  c.n_ff_expert = 768;
  c.n_ff = 6144;
  c.norm_topk_prob = true;
  const DType q = DType::Q4_0;
  const int64_t d = c.n_embd, qd = c.q_dim(), kvd = c.kv_dim(), E = c.n_expert, ff = c.n_ff_expert;

  auto t0 = std::chrono::steady_clock::now();
  Builder b;
  uint64_t seed = 1;
  b.add("token_embd.weight", q, {d, c.n_vocab}, 0.5f, seed++);
  b.add("output.weight", q, {d, c.n_vocab}, 1.0f / std::sqrt(float(d)), seed++);
  b.ones("output_norm.weight", d);
  for (int l = 0; l < n_layer; ++l) {
    auto n = [&](const char* s) { return fmt::format("blk.{}.{}", l, s); };
    b.ones(n("attn_norm.weight"), d);
    b.ones(n("ffn_norm.weight"), d);
    b.ones(n("attn_q_norm.weight"), c.head_dim);
    b.ones(n("attn_k_norm.weight"), c.head_dim);
    b.add(n("attn_q.weight"), q, {d, qd}, 1.0f / std::sqrt(float(d)), seed++);
    b.add(n("attn_k.weight"), q, {d, kvd}, 1.0f / std::sqrt(float(d)), seed++);
    b.add(n("attn_v.weight"), q, {d, kvd}, 1.0f / std::sqrt(float(d)), seed++);
    b.add(n("attn_output.weight"), q, {qd, d}, 0.7f / std::sqrt(float(qd)), seed++);
    b.add(n("ffn_gate_inp.weight"), DType::F32, {d, E}, 1.0f / std::sqrt(float(d)), seed++);
    b.add(n("ffn_gate_exps.weight"), q, {d, ff, E}, 1.0f / std::sqrt(float(d)), seed++);
    b.add(n("ffn_up_exps.weight"), q, {d, ff, E}, 1.0f / std::sqrt(float(d)), seed++);
    b.add(n("ffn_down_exps.weight"), q, {ff, d, E}, 0.7f / std::sqrt(float(ff)), seed++);
  }
  const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (const char* path = std::getenv("FERRUM_BENCH_GGUF")) {
    b.g.set_string("general.architecture", "qwen3moe");
    b.g.set_string("general.name", "random-moe");
    b.g.set_u32("qwen3moe.block_count", n_layer);
    b.g.set_u32("qwen3moe.context_length", c.n_ctx_train);
    b.g.set_u32("qwen3moe.embedding_length", d);
    b.g.set_u32("qwen3moe.feed_forward_length", c.n_ff);
    b.g.set_u32("qwen3moe.attention.head_count", c.n_head);
    b.g.set_u32("qwen3moe.attention.head_count_kv", c.n_head_kv);
    b.g.set_u32("qwen3moe.attention.key_length", c.head_dim);
    b.g.set_u32("qwen3moe.attention.value_length", c.head_dim);
    b.g.set_f32("qwen3moe.rope.freq_base", c.rope_theta);
    b.g.set_f32("qwen3moe.attention.layer_norm_rms_epsilon", c.norm_eps);
    b.g.set_u32("qwen3moe.expert_count", E);
    b.g.set_u32("qwen3moe.expert_used_count", c.n_expert_used);
    b.g.set_u32("qwen3moe.expert_feed_forward_length", ff);
    b.g.write(path);
    std::printf("wrote %s\n", path);
  }
  const size_t bytes = b.w.total_bytes();
  ModelOptions o;
  o.precision = Precision::Fast;
  o.max_batch = 512;
  o.n_threads = bench_threads();
  auto model = with_cache(create_model(c, std::move(b.w), o), 1024);
  const int threads = bench_threads() > 0 ? bench_threads() : ThreadPool::default_threads();
  std::printf("random MoE: %d layers, %.2f GB of Q4_0 weights, built in %.1f s, %d threads\n", n_layer,
              bytes / 1e9, build_s, threads);

  std::vector<int32_t> prompt(512);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919 + 13) % c.n_vocab);
  std::vector<float> logits(c.n_vocab);
  for (int64_t n_prompt : {32, 128, 512}) {
    model->reset();
    model->prefill(0, std::span<const int32_t>(prompt.data(), 8), logits.data());  // warm-up
    model->reset();
    auto a = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    model->prefill(0, std::span<const int32_t>(prompt.data(), n_prompt), logits.data());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    const double cs = cpu_seconds() - c0;
    std::printf("prefill %4lld tokens: %8.1f tok/s wall, %8.1f tok/s per CPU-second\n", (long long)n_prompt,
                n_prompt / s, n_prompt / cs);
  }
  const int steps = 32;
  auto a = std::chrono::steady_clock::now();
  const double c0 = cpu_seconds();
  int32_t tok = 1;
  for (int i = 0; i < steps; ++i) {
    model->decode(0, tok, model->seq_len(0), logits.data());
    tok = static_cast<int32_t>((tok * 31 + 7) % c.n_vocab);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
  const double cs = cpu_seconds() - c0;
  std::printf("decode (after 512 tokens): %.2f tok/s wall (%.1f ms/token), %.2f tok/s per CPU-second\n",
              steps / s, 1000 * s / steps, steps / cs);
}

}  // namespace
}  // namespace ferrum::test
