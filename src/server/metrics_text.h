// Prometheus text exposition (format 0.0.4) of the engine's counters, gauges and histograms.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine.h"

namespace ferrum::server {

struct LoraEntry;
struct ModelStatus;
// Per model of the pool: loaded (1/0) and its memory; the number loaded.
std::string models_metrics_text(const std::vector<ModelStatus>& models);
// Per LoRA adapter: requests, prompt and generated tokens, and the adapter's memory.
std::string lora_metrics_text(const std::vector<std::shared_ptr<const LoraEntry>>& adapters);

std::string prometheus_text(const EngineStats& st, const KvUsage& kv, uint64_t http_requests,
                            uint64_t http_errors);

}  // namespace ferrum::server
