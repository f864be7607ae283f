#include "server/request_log.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace ferrum::server {
namespace {

// UTC with milliseconds, as ISO 8601.
std::string iso_time(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", fmt::gmtime(std::chrono::system_clock::to_time_t(t)),
                     ms);
}

double round2(double x) {
  return std::round(x * 100) / 100;
}

}  // namespace

std::string request_log_line(const HttpLogEntry& e, RequestLogFormat format) {
  const HttpLogFields& f = e.fields;
  if (format == RequestLogFormat::Json) {
    nlohmann::ordered_json j = {{"time", iso_time(e.arrived)},
                                {"client", e.client},
                                {"method", e.method},
                                {"path", e.path},
                                {"status", e.status}};
    if (f.prompt_tokens >= 0) j["prompt_tokens"] = f.prompt_tokens;
    if (f.completion_tokens >= 0) j["completion_tokens"] = f.completion_tokens;
    if (f.cached_tokens >= 0) j["cached_tokens"] = f.cached_tokens;
    if (f.first_token_ms >= 0) j["ttft_ms"] = round2(f.first_token_ms);
    j["total_ms"] = round2(e.total_ms);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string line = fmt::format("{} {} {} {} {}", iso_time(e.arrived), e.client, e.method, e.path, e.status);
  if (f.prompt_tokens >= 0) line += fmt::format(" prompt={}", f.prompt_tokens);
  if (f.completion_tokens >= 0) line += fmt::format(" generated={}", f.completion_tokens);
  if (f.cached_tokens >= 0) line += fmt::format(" cached={}", f.cached_tokens);
  if (f.first_token_ms >= 0) line += fmt::format(" ttft={:.1f}ms", f.first_token_ms);
  line += fmt::format(" total={:.1f}ms", e.total_ms);
  return line;
}

std::function<void(HttpLogFields&)> usage_log(std::shared_ptr<RequestHandle> handle) {
  return [h = std::move(handle)](HttpLogFields& f) {
    const RequestUsage u = h->usage();
    if (u.finished) {
      f.prompt_tokens = u.prompt_tokens;
      f.completion_tokens = u.completion_tokens;
      f.cached_tokens = u.cached_tokens;
    }
    if (u.has_first)
      f.first_token_ms = std::chrono::duration<double, std::milli>(u.first_token - u.submitted).count();
  };
}

}  // namespace ferrum::server
