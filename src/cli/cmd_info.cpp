// `ferrum info`: architecture, shapes, tensor types and memory of a model.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/format_bytes.h"
#include "core/fail.h"
#include "dist/pipeline_split.h"
#include "ferrum/embeddings.h"
#include "ferrum/kv_cache.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/matmul.h"
#include "loading/loader.h"
#include "models/tensor_parallel.h"

namespace ferrum::cli {
namespace {

nlohmann::json describe(const ModelFiles& m) {
  const ModelConfig& c = m.config;
  nlohmann::json j;
  j["format"] = format_name(m.format);
  j["architecture"] = arch_name(c.arch);
  j["name"] = c.name;
  j["n_layer"] = c.n_layer;
  j["n_embd"] = c.n_embd;
  j["n_head"] = c.n_head;
  j["n_head_kv"] = c.n_head_kv;
  j["head_dim"] = c.head_dim;
  j["n_ff"] = c.n_ff;
  j["n_vocab"] = c.n_vocab;
  j["context_length"] = c.n_ctx_train;
  j["rope"] = {{"theta", c.rope_theta},
               {"layout", c.rope_interleaved ? "interleaved" : "rotate-half"},
               {"freq_scale", c.rope_freq_scale},
               {"llama3_freq_factors", !c.rope_freq_factors.empty() || m.weights.find("rope_freqs.weight")}};
  j["norm_eps"] = c.norm_eps;
  if (c.sliding_window) j["sliding_window"] = c.sliding_window;
  for (int l = 0; l < c.n_layer; ++l)
    if (!c.layer_uses_rope(l)) j["layers_without_rope"].push_back(l);
  if (!c.quantization.empty()) j["quantization"] = c.quantization;
  j["qkv_bias"] = c.qkv_bias;
  j["qk_norm"] = c.qk_norm;
  j["tied_embeddings"] = c.tied_embeddings;
  if (c.n_expert) j["experts"] = {{"count", c.n_expert}, {"used", c.n_expert_used}, {"ffn", c.n_ff_expert}};
  std::map<std::string, std::pair<int, size_t>> types;
  int64_t params = 0;
  for (const auto& [name, t] : m.weights.all()) {
    auto& e = types[dtype_name(t.type)];
    e.first++;
    e.second += t.nbytes;
    params += t.n_elements();
  }
  for (const auto& [name, e] : types) j["tensor_types"][name] = {{"tensors", e.first}, {"bytes", e.second}};
  j["n_params"] = params;
  j["weight_bytes"] = m.weights.total_bytes();
  // KV cache bytes per token (K and V, every layer) for each element type.
  for (auto t : {kernels::KvType::F32, kernels::KvType::F16, kernels::KvType::BF16, kernels::KvType::INT8})
    j["kv_bytes_per_token"][kv_type_name(t)] =
        2 * c.n_layer * kernels::kv_row_bytes(t, c.n_head_kv, c.head_dim);
  if (c.is_encoder()) return j;
  // Per layer kind: a windowed layer keeps only its window of a sequence, so a long sequence costs
  // the full layers' share.
  int windowed = 0;
  for (int l = 0; l < c.n_layer; ++l) windowed += c.layer_uses_window(l);
  j["kv_layers"] = {{"full", c.n_layer - windowed}, {"windowed", windowed}};
  if (windowed) j["kv_layers"]["window"] = c.sliding_window;
  const int64_t ctx = c.n_ctx_train > 0 ? c.n_ctx_train : 4096;
  const size_t seq = kv_sequence_bytes(c, kDefaultKvType, ctx),
               all = 2 * c.n_layer * kernels::kv_row_bytes(kDefaultKvType, c.n_head_kv, c.head_dim) * ctx;
  j["kv_sequence_bytes"] = {{"type", kv_type_name(kDefaultKvType)},
                            {"tokens", ctx},
                            {"bytes", seq},
                            {"every_layer_full_bytes", all}};
  return j;
}

// The KV memory per layer kind and what one sequence at the training context needs.
void print_kv_layers(const nlohmann::json& j) {
  const auto& k = j["kv_layers"];
  const auto& s = j["kv_sequence_bytes"];
  const int windowed = k["windowed"].get<int>();
  std::printf("KV layers: %d keep every position", k["full"].get<int>());
  if (windowed) std::printf(", %d keep only their %d-token window", windowed, k["window"].get<int>());
  const double seq = s["bytes"].get<double>(), all = s["every_layer_full_bytes"].get<double>();
  std::printf("\nKV cache for one %lld-token sequence (%s): %s",
              static_cast<long long>(s["tokens"].get<int64_t>()), s["type"].get<std::string>().c_str(),
              human_bytes(static_cast<size_t>(seq)).c_str());
  if (windowed)
    std::printf(" (%.0f%% of %s with every layer full)", 100.0 * seq / all,
                human_bytes(static_cast<size_t>(all)).c_str());
  std::printf("\n");
}

}  // namespace

Runner add_info(CLI::App& app) {
  struct Flags {
    std::string model, tokenizer, pipeline_split;
    bool json = false, tensors = false, metadata = false;
    int pipeline = 1, tensor_parallel = 1;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("info", "show a model's architecture, shapes, tensor types and memory");
  sub->add_option("model", f->model, "GGUF file, Hugging Face directory, or llama2.c checkpoint")->required();
  sub->add_option("--tokenizer", f->tokenizer, "llama2.c tokenizer.bin");
  sub->add_flag("--json", f->json, "print JSON");
  sub->add_flag("--tensors", f->tensors, "list every tensor");
  sub->add_flag("--metadata", f->metadata, "include GGUF metadata");
  sub->add_option("--pipeline", f->pipeline,
                  "show each stage's layers and weight bytes for N pipeline stages")
      ->transform(whole(1, 1024));
  sub->add_option("--pipeline-split", f->pipeline_split, "layers of each stage, e.g. 10,14")
      ->check(non_empty());
  sub->add_option("--tp,--tensor-parallel", f->tensor_parallel,
                  "show each rank's heads and weight bytes for N tensor-parallel ranks")
      ->transform(whole(1, 1024));
  return [f] {
    ModelFiles m = open_model_files(f->model, f->tokenizer);
    nlohmann::json j = describe(m);
    j["isa"] = kernels::active_isa();  // the kernel tier this machine runs the model with
    if (m.config.is_encoder()) {
      const BertDefaults bd = bert_defaults(f->model);
      j["pooling"] = {{"type", pooling_name(bd.pooling)}, {"normalize", bd.normalize}};
    }
    if (f->tensors) {
      for (const auto& [name, t] : m.weights.all())
        j["tensors"].push_back({{"name", name}, {"type", dtype_name(t.type)}, {"shape", t.shape_string()}, {"bytes", t.nbytes}});
    }
    if (f->metadata && m.gguf) j["metadata"] = m.gguf->metadata_json();
    if (f->pipeline > 1) {
      const auto ranges = dist::split_model(m, f->pipeline_split, f->pipeline);
      const auto bytes = dist::stage_weight_bytes(m, ranges);
      for (size_t r = 0; r < ranges.size(); ++r)
        j["pipeline"].push_back(
            {{"rank", r}, {"layers", {ranges[r].begin, ranges[r].end}}, {"weight_bytes", bytes[r]}});
    }
    if (f->tensor_parallel > 1) {
      const int n = f->tensor_parallel;
      for (int r = 0; r < n; ++r) {
        ModelConfig c = m.config;
        const uint64_t bytes = shard_bytes(c, m.weights, r, n);
        const ShareRange v = vocab_share(c, r, n);
        j["tensor_parallel"].push_back({{"rank", r},
                                        {"heads", {c.n_head * r / n, c.n_head * (r + 1) / n}},
                                        {"vocabulary", {v.begin, v.end}},
                                        {"weight_bytes", bytes}});
      }
    }
    if (f->json) {
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    std::printf("model:        %s (%s)\n", f->model.c_str(), j["format"].get<std::string>().c_str());
    std::printf("architecture: %s  name: %s\n", j["architecture"].get<std::string>().c_str(), j["name"].get<std::string>().c_str());
    const ModelConfig& c = m.config;
    std::printf("layers %d, hidden %d, heads %d (kv %d, head dim %d), ffn %d, vocab %d, context %d\n", c.n_layer, c.n_embd,
                c.n_head, c.n_head_kv, c.head_dim, c.n_ff, c.n_vocab, c.n_ctx_train);
    std::printf("rope: theta %g, %s%s%s\n", c.rope_theta, c.rope_interleaved ? "interleaved pairs" : "rotate-half",
                j["rope"]["llama3_freq_factors"].get<bool>() ? ", llama3 frequency factors" : "",
                c.rope_freq_scale != 1.0f ? fmt::format(", linear scale {}", c.rope_freq_scale).c_str() : "");
    if (c.n_expert) std::printf("experts: %d, %d used per token, expert ffn %d\n", c.n_expert, c.n_expert_used, c.n_ff_expert);
    if (c.sliding_window) std::printf("sliding window: %d\n", c.sliding_window);
    if (!c.rope_layers.empty()) {
      std::string off;
      for (int l = 0; l < c.n_layer; ++l)
        if (!c.layer_uses_rope(l)) off += (off.empty() ? "" : ", ") + std::to_string(l);
      if (!off.empty()) std::printf("layers without RoPE: %s\n", off.c_str());
    }
    if (j.contains("pooling"))
      std::printf("pooling: %s%s\n", j["pooling"]["type"].get<std::string>().c_str(),
                  j["pooling"]["normalize"].get<bool>() ? ", L2-normalized" : "");
    if (!c.quantization.empty())
      std::printf("quantization: %s (held exactly in the block types below)\n", c.quantization.c_str());
    std::printf("parameters: %lld, weights %.2f MiB\n", static_cast<long long>(j["n_params"].get<int64_t>()),
                m.weights.total_bytes() / 1048576.0);
    for (const auto& [type, e] : j["tensor_types"].items())
      std::printf("  %-5s %4d tensors %10.2f MiB\n", type.c_str(), e["tensors"].get<int>(), e["bytes"].get<size_t>() / 1048576.0);
    std::string tiers;
    for (const char* t : kernels::isa_tiers()) tiers += (tiers.empty() ? "" : "|") + std::string(t);
    std::printf("kernels: %s (FERRUM_ISA=%s forces a tier)\n", kernels::active_isa(), tiers.c_str());
    std::printf("KV cache bytes per token:");
    for (const auto& [type, b] : j["kv_bytes_per_token"].items()) std::printf(" %s %zu", type.c_str(), b.get<size_t>());
    std::printf("\n");
    if (j.contains("kv_layers")) print_kv_layers(j);
    for (const auto& st : j.value("pipeline", nlohmann::json::array()))
      std::printf("pipeline rank %d: layers %d-%d%s, weights %s\n", st["rank"].get<int>(),
                  st["layers"][0].get<int>(), st["layers"][1].get<int>() - 1,
                  st["rank"].get<int>() + 1 == static_cast<int>(j["pipeline"].size()) ? " + output" : "",
                  human_bytes(st["weight_bytes"].get<double>()).c_str());
    for (const auto& st : j.value("tensor_parallel", nlohmann::json::array()))
      std::printf("tensor-parallel rank %d: heads %d-%d, vocabulary %lld-%lld, weights %s\n",
                  st["rank"].get<int>(), st["heads"][0].get<int>(), st["heads"][1].get<int>() - 1,
                  static_cast<long long>(st["vocabulary"][0].get<int64_t>()),
                  static_cast<long long>(st["vocabulary"][1].get<int64_t>()) - 1,
                  human_bytes(st["weight_bytes"].get<double>()).c_str());
    if (f->tensors)
      for (const auto& t : j["tensors"])
        std::printf("  %-40s %-5s %s\n", t["name"].get<std::string>().c_str(), t["type"].get<std::string>().c_str(),
                    t["shape"].get<std::string>().c_str());
    return 0;
  };
}

}  // namespace ferrum::cli
