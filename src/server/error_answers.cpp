#include "server/error_answers.h"

#include "engine/engine.h"
#include "server/anthropic_messages.h"
#include "server/api_error.h"
#include "server/http_server.h"

namespace ferrum::server {

void send_error(HttpResponse& res, int status, const std::string& message, const std::string& type,
                const std::string& param, const std::string& code) {
  res.status = status;
  res.content_type = "application/json";
  res.body = body_text(error_json(message, type, param, code));
  res.stream = {};
}

// The current exception as an Anthropic error answer.
void send_message_error(HttpResponse& res) {
  int status = 500;
  std::string message;
  try {
    throw;
  } catch (const ApiError& e) {
    status = e.status;
    message = e.what();
  } catch (const BusyError& e) {
    status = 503;
    message = e.what();
  } catch (const Error& e) {
    status = 400;
    message = e.what();
  } catch (const std::exception& e) {
    message = std::string("internal error: ") + e.what();
  }
  res.status = status;
  res.content_type = "application/json";
  res.body = body_text(message_error(status, message));
  res.stream = {};
}

// The current exception as an Ollama error answer: {"error": message}.
void send_ollama_error(HttpResponse& res) {
  int status = 500;
  std::string message;
  try {
    throw;
  } catch (const ApiError& e) {
    status = e.status;
    message = e.what();
  } catch (const BusyError& e) {
    status = 503;
    message = e.what();
  } catch (const Error& e) {
    status = 400;
    message = e.what();
  } catch (const std::exception& e) {
    message = std::string("internal error: ") + e.what();
  }
  res.status = status;
  res.content_type = "application/json";
  res.body = body_text({{"error", message}});
  res.stream = {};
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
