// OpenAI-shaped API errors: {"error":{"message","type","param","code"}} with an HTTP status.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/fail.h"

namespace ferrum::server {

class ApiError : public Error {
 public:
  ApiError(int status, std::string message, std::string type = "invalid_request_error",
           std::string param = "", std::string code = "")
      : Error(message),
        status(status),
        type(std::move(type)),
        param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string type, param, code;
};

// Whether a request body sets `key` (a null counts as unset, as OpenAI's API has it).
inline bool has_field(const nlohmann::json& body, const char* key) {
  return body.contains(key) && !body[key].is_null();
}

// A 400 naming the request field at fault.
[[noreturn]] inline void bad_request(const std::string& param, const std::string& message) {
  throw ApiError(400, message, "invalid_request_error", param);
}

// A response body as text; bytes that are not UTF-8 (a token cut mid-character) are replaced
// instead of making the serializer throw.
inline std::string body_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline nlohmann::json error_json(const std::string& message, const std::string& type,
                                 const std::string& param, const std::string& code) {
  nlohmann::json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return {{"error", e}};
}

}  // namespace ferrum::server
