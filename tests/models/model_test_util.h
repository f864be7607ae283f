// Helpers for the model golden tests: fixture paths, loading models from tests/data/models, and
// logit comparisons.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "loading/loader.h"
#include "test_util.h"

namespace ferrum::test {

// tests/data/models/<model>/<rel>, decompressing <rel>.xz when needed.
std::string model_file(const std::string& model, const std::string& rel);
// tests/data/<rel> (a directory) with its .xz files decompressed (cached under /tmp).
std::string data_dir(const std::string& rel);
// A Hugging Face directory with its .xz files decompressed (cached under /tmp).
std::string hf_dir(const std::string& model, const std::string& sub /* "hf" or "hf-bf16" */);
nlohmann::json load_json(const std::string& path);

// Token ids of a prompt from the fixture's reference.json.
std::vector<int32_t> prompt_ids(const std::string& model, const std::string& pid);

// The KV element type llama.cpp's reference outputs in tests/data were made with (-ctk f32 -ctv
// f32, tests/data/README.md). Tests comparing with those references pin it, so they test exactly
// what they tested before f16 became the library default; tests comparing ferrum with itself
// (batched == alone, stages == whole, ...) run on the default (kDefaultKvType).
inline const std::string kReferenceKvType = "f32";

// A model with one KV cache of its own, for tests that drive sequences directly; the methods
// forward to Model and KvCache.
struct CachedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<KvCache> kv;

  CachedModel(std::unique_ptr<Model> m, const KvOptions& o)
      : model(std::move(m)), kv(KvCache::for_model(*model, o)) {}
  const ModelConfig& config() const { return model->config(); }
  void forward(std::span<const SeqInput> batch, float* logits, float* hidden = nullptr) {
    model->forward(*kv, batch, ForwardOut{logits, hidden});
  }
  void prefill(int seq, std::span<const int32_t> t, float* logits, bool all = false) {
    model->prefill(*kv, seq, t, logits, all);
  }
  void decode(int seq, int32_t t, int64_t pos, float* logits) { model->decode(*kv, seq, t, pos, logits); }
  void decode_batch(std::span<const DecodeItem> items, float* logits) {
    model->decode_batch(*kv, items, logits);
  }
  void forward_verify(int seq, std::span<const int32_t> t, float* logits) {
    model->forward_verify(*kv, seq, t, logits);
  }
  int64_t seq_len(int seq) const { return kv->seq_len(seq); }
  void truncate_kv(int seq, int64_t n) { kv->truncate(seq, n); }
  void release(int seq) { kv->release(seq); }
  void reset() { kv->reset(); }
  bool can_fit(std::span<const std::pair<int, int64_t>> s) const { return kv->can_fit(s); }
  int64_t reuse_prefix(int seq, std::span<const int32_t> p) { return kv->reuse_prefix(seq, p); }
};
// kv_type: "" for the library default.
std::unique_ptr<CachedModel> with_cache(std::unique_ptr<Model> m, int64_t capacity = 4096,
                                        const std::string& kv_type = kReferenceKvType);

std::unique_ptr<CachedModel> open_model(const std::string& path, Precision prec, int threads = 2,
                                        const std::string& kv_type = kReferenceKvType,
                                        int64_t capacity = 4096);

// One input of a forward batch.
SeqInput seq_input(int seq, std::span<const int32_t> tokens, Want logits = Want::Last,
                   Want hidden = Want::None);

// The newer families' fixtures (tests/data/families/<f>: an HF directory and one prompt).
bool is_family(const std::string& name);
// A family's directory converted to GGUF (F32) and quantized to `type` by ferrum, once per process.
std::string family_gguf(const std::string& family, const std::string& type);

// All-position logits of a prompt run as one prefill.
std::vector<float> all_logits(CachedModel& m, const std::vector<int32_t>& ids);

// Greedy continuation (argmax, lowest id on ties): `prompt` as one prefill, then one token per
// decode, n tokens in all (the way llama.cpp's reference greedy runs were made).
std::vector<int32_t> greedy_continuation(CachedModel& m, const std::vector<int32_t>& prompt, size_t n);

// A family fixture's greedy text against llama.cpp's (families/<f>/llamacpp-greedy24.hex, made by
// make_greedy_fixtures.sh): the exact path on the F32 GGUF with llama.cpp's 256-token context, 24
// tokens from the fixture's prompt, their pieces as hex. Returns {ferrum's, llama.cpp's}, or empty
// strings where the family has no such file.
std::pair<std::string, std::string> greedy_text_vs_llamacpp(const std::string& family,
                                                            const std::vector<int32_t>& prompt);

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
