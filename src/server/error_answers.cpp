#include "server/error_answers.h"

#include "engine/engine.h"
#include "server/anthropic_messages.h"
#include "server/api_error.h"
#include "server/http_server.h"

namespace ferrum::server {

namespace {
// The status and message of the exception being handled (rethrown to read it).
std::pair<int, std::string> current_error() {
  try {
    throw;
  } catch (const ApiError& e) {
    return {e.status, e.what()};
  } catch (const BusyError& e) {
    return {503, e.what()};
  } catch (const Error& e) {
    return {400, e.what()};
  } catch (const std::exception& e) {
    return {500, std::string("internal error: ") + e.what()};
  }
}

void send_json(HttpResponse& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.content_type = "application/json";
  res.body = body_text(body);
  res.stream = {};
}
}  // namespace

void send_error(HttpResponse& res, int status, const std::string& message, const std::string& type,
                const std::string& param, const std::string& code) {
  send_json(res, status, error_json(message, type, param, code));
}

void send_message_error(HttpResponse& res) {
  const auto [status, message] = current_error();
  send_json(res, status, message_error(status, message));
}

void send_ollama_error(HttpResponse& res) {
  const auto [status, message] = current_error();
  send_json(res, status, {{"error", message}});
}

// The current exception as an OpenAI error answer.
void send_openai_error(HttpResponse& res) {
  try {
    throw;
  } catch (const ApiError& e) {
    send_error(res, e.status, e.what(), e.type, e.param, e.code);
  } catch (const BusyError& e) {
    send_error(res, 503, e.what(), "server_busy", "", "server_busy");
  } catch (const ContextLengthError& e) {
    send_error(res, 400, e.what(), "invalid_request_error", "messages", "context_length_exceeded");
  } catch (const Error& e) {
    send_error(res, 400, e.what(), "invalid_request_error");
  } catch (const std::exception& e) {
    send_error(res, 500, std::string("internal error: ") + e.what(), "server_error");
  }
}

}  // namespace ferrum::server
