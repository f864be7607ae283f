// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) on the chat path: the
// request is translated into an OpenAI chat request, so parse_chat_request checks it and builds the
// prompt (template, tools, stop strings, sampling) as for /v1/chat/completions; the answer is made
// from the same engine events in Anthropic's shapes: a `message` with text and tool_use content
// blocks, or the stream of message_start / content_block_* / message_delta / message_stop events.
#pragma once

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

// The OpenAI chat body of an Anthropic Messages body (system, messages with text / tool_use /
// tool_result blocks, max_tokens, stop_sequences, temperature, top_p, top_k, tools, tool_choice,
// stream, thinking). Throws ApiError naming the field. count_tokens: max_tokens is not required.
// A thinking template's reasoning comes back as `thinking` blocks (streamed as thinking_delta).
nlohmann::json chat_body_of_messages(const nlohmann::json& body, bool count_tokens = false);

// Anthropic's stop_reason for an answer: end_turn, max_tokens, stop_sequence or tool_use.
std::string message_stop_reason(const std::string& finish_reason, const std::string& stop_string,
                                bool tool_called);

// The whole answer of a non-streamed request.
nlohmann::json message_answer(const AnswerHeader& h, const ParsedRequest& pr, const Collected& c);

// Anthropic's error body: {"type": "error", "error": {"type": ..., "message": ...}}, the error type
// from the HTTP status.
nlohmann::json message_error(int status, const std::string& message);

// A streamed answer as Anthropic's server-sent events; next() waits up to `poll` for an event and
// returns false once the message is complete (message_stop, or an error event).
class MessageStream {
 public:
  MessageStream(AnswerHeader h, ParsedRequest pr, std::shared_ptr<RequestHandle> handle, int prompt_tokens);
  bool next(std::string& out);
  bool finished() const { return finished_; }
  int completion_tokens() const { return completion_tokens_; }
  RequestHandle& handle() { return *handle_; }

 private:
  void text(std::string& out, const std::string& s);  // into the open text block (opened if needed)
  void thinking(std::string& out, const std::string& s);  // into the open thinking block
  void close_block(std::string& out);
  bool finish(std::string& out, const RequestEvent& e);
  AnswerHeader h_;
  ParsedRequest pr_;
  std::shared_ptr<RequestHandle> handle_;
  int prompt_tokens_ = 0, completion_tokens_ = 0;
  int index_ = 0;  // the next content block's index
  bool started_ = false, finished_ = false, text_open_ = false, thinking_open_ = false;
  std::optional<chat::ReasoningStream> reasoning_;  // a thinking template's reasoning kept apart
  chat::ToolStreamSplitter splitter_;  // with tools: the answer so far, and how much was sent
};

}  // namespace ferrum::server
