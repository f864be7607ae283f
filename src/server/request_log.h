// `ferrum serve`'s request log: one line per finished request (arrival time, client, method, path,
// status, prompt / generated / cached tokens, time to first token, total time), as text or JSON.
#pragma once

#include <memory>
#include <string>

#include "engine/request.h"
#include "server/http_server.h"

namespace ferrum::server {

enum class RequestLogFormat { Off, Text, Json };

std::string request_log_line(const HttpLogEntry& e, RequestLogFormat format);

// The log fields of an answer produced by the engine request behind `handle`.
std::function<void(HttpLogFields&)> usage_log(std::shared_ptr<RequestHandle> handle);

}  // namespace ferrum::server
