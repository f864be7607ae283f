// Error answers in each API's own shape, from the exception being handled: OpenAI's
// {"error": {"message", "type", "param", "code"}}, Anthropic's {"type": "error", "error": {"type",
// "message"}} and Ollama's {"error": message}, each with its HTTP status.
#pragma once

#include <string>

namespace ferrum::server {

struct HttpResponse;

void send_error(HttpResponse& res, int status, const std::string& message, const std::string& type,
                const std::string& param = "", const std::string& code = "");
// Call only from a catch block: they rethrow the current exception to read it.
void send_openai_error(HttpResponse& res);
void send_message_error(HttpResponse& res);
void send_ollama_error(HttpResponse& res);

}  // namespace ferrum::server
