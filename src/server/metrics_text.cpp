#include "server/metrics_text.h"

#include <fmt/format.h>

#include "server/lora_registry.h"
#include "server/model_pool.h"

namespace ferrum::server {
namespace {

void metric(std::string& o, const char* name, const char* type, const char* help, double v) {
  o += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, v);
}

void histogram(std::string& o, const char* name, const char* help, const Histogram& h) {
  o += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cum = 0;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    cum += h.counts[i];
    o += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, h.bounds[i], cum);
  }
  cum += h.counts.empty() ? 0 : h.counts.back();
  o += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cum, name, h.sum, name,
                   h.count);
}

}  // namespace

std::string prometheus_text(const EngineStats& st, const KvUsage& kv, uint64_t http_requests,
                            uint64_t http_errors) {
  std::string o;
  o += "# HELP ferrum_requests_total Generation requests by outcome.\n# TYPE ferrum_requests_total counter\n";
  o += fmt::format("ferrum_requests_total{{outcome=\"finished\"}} {}\n", st.requests_finished);
  o += fmt::format("ferrum_requests_total{{outcome=\"cancelled\"}} {}\n", st.requests_cancelled);
  o += fmt::format("ferrum_requests_total{{outcome=\"error\"}} {}\n", st.requests_failed);
  o += fmt::format("ferrum_requests_total{{outcome=\"rejected\"}} {}\n", st.requests_rejected);
  metric(o, "ferrum_requests_submitted_total", "counter", "Requests accepted into the queue.",
         st.requests_submitted);
  metric(o, "ferrum_http_requests_total", "counter", "HTTP requests received.", http_requests);
  metric(o, "ferrum_http_errors_total", "counter", "HTTP responses with status >= 400.", http_errors);
  metric(o, "ferrum_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.", st.prompt_tokens);
  metric(o, "ferrum_prompt_tokens_cached_total", "counter", "Prompt tokens served from the prefix cache.",
         st.cached_prompt_tokens);
  metric(o, "ferrum_generation_tokens_total", "counter", "Generated tokens.", st.generation_tokens);
  metric(o, "ferrum_preemptions_total", "counter", "Sequences preempted (KV released, recomputed later).",
         st.preemptions);
  metric(o, "ferrum_engine_steps_total", "counter", "Scheduler steps (one batched forward each).", st.steps);
  metric(o, "ferrum_requests_running", "gauge", "Sequences being processed.", st.running);
  metric(o, "ferrum_requests_waiting", "gauge", "Requests waiting for admission.", st.waiting);
  const double usage = kv.total_blocks > 0 ? 1.0 - double(kv.free_blocks) / double(kv.total_blocks) : 0.0;
  metric(o, "ferrum_kv_cache_usage_ratio", "gauge", "Fraction of KV blocks in use (paged layout).", usage);
  metric(o, "ferrum_kv_cache_used_tokens", "gauge", "Tokens held in the KV cache.", kv.used_tokens);
  metric(o, "ferrum_kv_cache_blocks_total", "gauge", "KV blocks in the pool.", kv.total_blocks);
  metric(o, "ferrum_kv_cache_blocks_free", "gauge", "Free KV blocks.", kv.free_blocks);
  metric(o, "ferrum_prefix_cache_hits_total", "counter", "Prompts that reused cached prefix blocks.",
         kv.prefix_hits);
  metric(o, "ferrum_prefix_cache_misses_total", "counter", "Prompts that found no cached prefix.",
         kv.prefix_misses);
  metric(o, "ferrum_prefix_cache_saved_tokens_total", "counter",
         "Prompt tokens not recomputed thanks to the cache.", kv.prefix_saved_tokens);
  metric(o, "ferrum_spec_decode_verify_steps_total", "counter",
         "Speculative decoding: sequence steps that verified draft tokens.", st.spec_verify_steps);
  metric(o, "ferrum_spec_decode_draft_tokens_total", "counter",
         "Speculative decoding: draft tokens proposed.", st.spec_proposed);
  metric(o, "ferrum_spec_decode_accepted_tokens_total", "counter",
         "Speculative decoding: draft tokens accepted by the model.", st.spec_accepted);
  histogram(o, "ferrum_spec_decode_accepted_per_step",
            "Speculative decoding: draft tokens accepted per verify step.", st.spec_accepted_per_step);
  histogram(o, "ferrum_time_to_first_token_seconds", "Time from submission to the first generated token.",
            st.ttft);
  histogram(o, "ferrum_inter_token_latency_seconds",
            "Time between consecutive generated tokens of a request.", st.itl);
  histogram(o, "ferrum_e2e_request_latency_seconds", "Time from submission to the end of a request.", st.e2e);
  return o;
}

namespace {

// A Prometheus label value: backslash, double quote and newline escaped.
std::string label(const std::string& v) {
  std::string o;
  for (char c : v) o += c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : std::string(1, c);
  return o;
}

}  // namespace

std::string models_metrics_text(const std::vector<ModelStatus>& models) {
  std::string o;
  int loaded = 0;
  o += "# HELP ferrum_model_loaded Whether a model is loaded (1) or not (0).\n# TYPE ferrum_model_loaded "
       "gauge\n";
  for (const ModelStatus& m : models) {
    loaded += m.state == ModelState::Loaded;
    o += fmt::format("ferrum_model_loaded{{model=\"{}\"}} {}\n", label(m.id),
                     m.state == ModelState::Loaded ? 1 : 0);
  }
  o += "# HELP ferrum_model_bytes A loaded model's weights and KV cache in memory.\n# TYPE "
       "ferrum_model_bytes gauge\n";
  for (const ModelStatus& m : models)
    if (m.state == ModelState::Loaded)
      o += fmt::format("ferrum_model_bytes{{model=\"{}\"}} {}\n", label(m.id), m.bytes);
  metric(o, "ferrum_models_loaded", "gauge", "Models loaded now.", loaded);
  return o;
}

std::string lora_metrics_text(const std::vector<std::shared_ptr<const LoraEntry>>& adapters) {
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    uint64_t (*value)(const LoraEntry&);
  };
  static const Family fams[] = {
      {"ferrum_lora_requests_total", "counter", "Generation requests per LoRA adapter.",
       [](const LoraEntry& e) { return e.counters->requests.load(); }},
      {"ferrum_lora_prompt_tokens_total", "counter", "Prompt tokens of requests per LoRA adapter.",
       [](const LoraEntry& e) { return e.counters->prompt_tokens.load(); }},
      {"ferrum_lora_generation_tokens_total", "counter", "Generated tokens per LoRA adapter.",
       [](const LoraEntry& e) { return e.counters->completion_tokens.load(); }},
      {"ferrum_lora_adapter_bytes", "gauge", "Memory held by a loaded LoRA adapter's matrices.",
       [](const LoraEntry& e) { return static_cast<uint64_t>(lora_bytes(*e.adapter)); }},
  };
  std::string o;
  for (const Family& f : fams) {
    o += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type);
    for (const auto& e : adapters)
      o += fmt::format("{}{{adapter=\"{}\"}} {}\n", f.name, label(e->name), f.value(*e));
  }
  return o;
}

}  // namespace ferrum::server
