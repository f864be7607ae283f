// Micro-benchmark of the attention kernel (disabled by default; run with
// --gtest_also_run_disabled_tests --gtest_filter='AttentionBench*'). The Llama-3.2-1B shape (32
// query heads, 8 KV heads of 64) over 16 layers' caches (so K/V come from memory as in a real
// model): one decode step, and a 16-token prompt chunk, at depths 1k/4k/16k, for each cache type.
// Prints ms per step over the 16 layers and the K/V bytes read per second.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/huge_pages.h"
#include "kernels/cpu/attention.h"

namespace ferrum::kernels {
namespace {

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

TEST(AttentionBench, DISABLED_DecodeAndChunkAtDepth) {
  const char* nth = std::getenv("FERRUM_BENCH_THREADS");
  ThreadPool pool(nth ? std::atoi(nth) : 0);
  const int n_head = 32, n_kv = 8, hd = 64;
  const int layers = std::getenv("FERRUM_BENCH_LAYERS") ? std::atoi(std::getenv("FERRUM_BENCH_LAYERS")) : 16;
  AttentionParams p;
  p.n_head = n_head;
  p.n_head_kv = n_kv;
  p.head_dim = hd;
  p.scale = 0.125f;
  AttentionScratch scratch;
  std::printf(
      "threads %d\n| kv | depth | tokens | ms per step (16 layers) | K/V GB/s |\n|---|---|---|---|---|\n",
      pool.size());
  for (KvType t : {KvType::F32, KvType::F16, KvType::BF16, KvType::INT8}) {
    if (const char* only = std::getenv("FERRUM_BENCH_KV"); only && std::string(only) != kv_type_name(t))
      continue;
    for (int64_t depth : {1024, 4096, 16384}) {
      if (const char* only = std::getenv("FERRUM_BENCH_DEPTH"); only && std::atol(only) != depth) continue;
      const size_t rb = kv_row_bytes(t, n_kv, hd), bytes = rb * (depth + 16);
      auto alloc = [](size_t n) { return static_cast<uint8_t*>(alloc_huge(n)); };  // as the KV cache's
      std::vector<HugeBytes> k(layers), v(layers);
      std::mt19937 rng(1);
      std::vector<float> row(n_kv * hd);
      for (int l = 0; l < layers; ++l) {
        k[l].reset(alloc(bytes));
        v[l].reset(alloc(bytes));
        for (int64_t j = 0; j < depth + 16; ++j) {
          for (float& x : row) x = static_cast<float>(rng()) / 4294967296.0f - 0.5f;
          const size_t g = j / kKvGroup * kKvGroup * rb;
          kv_store_key(t, row.data(), k[l].get() + g, j % kKvGroup, n_kv, hd);
          kv_store_value(t, row.data(), v[l].get() + g, j % kKvGroup, n_kv, hd);
        }
      }
      // FERRUM_BENCH_PAGED=1: 16-token blocks in shuffled order (as a paged cache after churn).
      const bool paged = std::getenv("FERRUM_BENCH_PAGED") != nullptr;
      std::vector<int32_t> table(paged ? (depth + 16) / kKvGroup : 1);
      std::iota(table.begin(), table.end(), 0);
      if (paged) std::shuffle(table.begin(), table.end(), std::mt19937(7));
      for (int64_t n_tok : {1, 16}) {
        if (const char* only = std::getenv("FERRUM_BENCH_TOKENS"); only && std::atol(only) != n_tok) continue;
        std::vector<float> q(n_tok * n_head * hd, 0.3f), out(q.size());
        auto step = [&] {
          for (int l = 0; l < layers; ++l) {
            AttentionJob job{q.data(), n_head * hd, n_tok, depth, {}, out.data(), n_head * hd};
            job.kv = {k[l].get(),
                      v[l].get(),
                      table.data(),
                      paged ? kKvGroup : depth + 16,
                      paged ? kKvGroup * rb : 0,
                      rb,
                      t};
            attention(p, &job, 1, pool, scratch);
          }
        };
        step();
        double best = 1e30;
        for (const double start = now(); now() - start < 0.5;) {
          const double t0 = now();
          step();
          best = std::min(best, now() - t0);
        }
        std::printf("| %s | %ld | %ld | %.3f | %.1f |\n", kv_type_name(t), static_cast<long>(depth),
                    static_cast<long>(n_tok), best * 1e3, 2.0 * layers * rb * (depth + n_tok) / best * 1e-9);
        std::fflush(stdout);
      }
    }
  }
}

}  // namespace
}  // namespace ferrum::kernels
