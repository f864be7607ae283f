// Ollama's API (POST /api/chat, /api/generate, /api/embed, /api/show; GET /api/tags, /api/ps,
// /api/version; /api/pull refused: there is no registry) on the OpenAI paths: a chat or generate
// body is translated into an OpenAI chat or completion body (options.* -> sampling fields, `format`
// -> response_format, tool call arguments objects -> JSON text), so parse_chat_request and
// parse_completion_request check it, and the answer is made from the same engine events in
// Ollama's shapes: one JSON object, or NDJSON lines when streaming (Ollama's default).
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chat/reasoning.h"
#include "chat/tool_stream.h"
#include "engine/request.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace ferrum::server {

// An Ollama model name without its default tag ("stories:latest" -> "stories").
std::string ollama_model_name(const std::string& name);

// The OpenAI body of an /api/chat body (chat = true) or an /api/generate body: a raw generate is a
// completion (*completion set), otherwise system + prompt become chat messages. Throws ApiError
// naming the field.
nlohmann::json openai_body_of_ollama(const nlohmann::json& body, bool chat, bool* completion);

// "2026-11-27T16:20:00.123Z"
std::string ollama_time_now();

// Ollama's answer of a finished request: for /api/chat (`message`) or /api/generate (`response`),
// done, done_reason, the token counts and durations (nanoseconds).
struct OllamaTiming {
  std::chrono::steady_clock::time_point start, first_token;
  bool has_first = false;
};
nlohmann::json ollama_answer(const std::string& model, bool chat, const ParsedRequest& pr, const Collected& c,
                             const OllamaTiming& t);

// A streamed answer as NDJSON, one object per engine event, the last with done: true and the
// counts. next() waits up to `poll` for an event and returns false after the last line.
class OllamaStream {
 public:
  OllamaStream(std::string model, bool chat, ParsedRequest pr, std::shared_ptr<RequestHandle> handle);
  bool next(std::string& out);
  bool finished() const { return finished_; }
  int completion_tokens() const { return completion_tokens_; }
  RequestHandle& handle() { return *handle_; }

 private:
  void line(std::string& out, nlohmann::json j) const;
  std::string model_;
  bool chat_;
  ParsedRequest pr_;
  std::shared_ptr<RequestHandle> handle_;
  bool finished_ = false;
  int completion_tokens_ = 0;
  OllamaTiming timing_;
  chat::ToolStreamSplitter splitter_;  // with tools: the answer so far, and how much was sent
  std::optional<chat::ReasoningStream> reasoning_;  // a thinking template's reasoning, as `thinking`
};

}  // namespace ferrum::server
