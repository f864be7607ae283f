// Helpers for the model golden tests: fixture paths, loading models from tests/data/models, and
// logit comparisons.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/loader.h"
#include "test_util.h"

namespace ferrum::test {

// tests/data/models/<model>/<rel>, decompressing <rel>.xz when needed.
std::string model_file(const std::string& model, const std::string& rel);
// A Hugging Face directory with its .xz files decompressed (cached under /tmp).
std::string hf_dir(const std::string& model, const std::string& sub /* "hf" or "hf-bf16" */);
nlohmann::json load_json(const std::string& path);

// Token ids of a prompt from the fixture's reference.json.
std::vector<int32_t> prompt_ids(const std::string& model, const std::string& pid);

std::unique_ptr<Model> open_model(const std::string& path, Precision prec, int threads = 2);

// All-position logits of a prompt run as one prefill.
std::vector<float> all_logits(Model& m, const std::vector<int32_t>& ids);

// Greedy continuation (argmax, lowest id on ties): `prompt` as one prefill, then one token per
// decode, n tokens in all (the way llama.cpp's reference greedy runs were made).
std::vector<int32_t> greedy_continuation(Model& m, const std::vector<int32_t>& prompt, size_t n);

// Benchmarks: process CPU seconds (on a shared, overloaded machine wall time mostly measures the
// other processes; tokens per CPU-second x threads is the load-independent figure), and the
// thread count from FERRUM_BENCH_THREADS (0 = all cores).
double cpu_seconds();
int bench_threads();

struct Diff {
  double max_abs = 0, mean_abs = 0;
  int64_t argmax_agree = 0, rows = 0;
};
// Compares two (rows x cols) logit matrices.
Diff compare(const std::vector<float>& a, const std::vector<float>& b, int64_t rows, int64_t cols);

}  // namespace ferrum::test
