// Prometheus text exposition (format 0.0.4) of the engine's counters, gauges and histograms.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine.h"

namespace ferrum::server {

std::string prometheus_text(const EngineStats& st, const KvUsage& kv, const nlohmann::json& model_metrics,
                            uint64_t http_requests, uint64_t http_errors);

}  // namespace ferrum::server
