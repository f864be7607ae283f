// OpenAI response bodies built from engine events: the whole answer of a non-streamed request,
// and the server-sent events of a streamed one (chat.completion.chunk / text_completion).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/reasoning.h"
#include "chat/tool_stream.h"
#include "engine/request.h"
#include "ferrum/tokenizer.h"
#include "server/openai_request.h"

namespace ferrum::server {

// What the answer says about itself, shared by every chunk of a stream.
struct AnswerHeader {
  std::string id, model;
  int64_t created = 0;
  bool chat = false;
};

// Accumulates a request's events for the non-streamed answer.
struct Collected {
  std::string text;
  std::vector<TokenLogprob> logprobs;
  std::string finish_reason, error, stop_string;
  int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  void add(RequestEvent& e);
};

// The chat answer's text without its reasoning, which goes to `message` as reasoning_content.
std::string answer_content(const ParsedRequest& pr, const std::string& text, nlohmann::json& message);

nlohmann::json full_answer(const AnswerHeader& h, const ParsedRequest& pr, const Tokenizer& tok,
                           const Collected& c);

// Turns the request's events into SSE bytes; next() waits up to `poll` for an event and returns
// false once the stream is complete ("data: [DONE]").
class SseAnswer {
 public:
  SseAnswer(AnswerHeader h, ParsedRequest pr, const Tokenizer& tok, std::shared_ptr<RequestHandle> handle);
  bool next(std::string& out);
  bool finished() const { return finished_; }
  int completion_tokens() const { return completion_tokens_; }
  RequestHandle& handle() { return *handle_; }

 private:
  void chunk(std::string& out, nlohmann::json choices, nlohmann::json usage) const;
  bool tool_chunks(std::string& out, RequestEvent& e);
  void reasoning_chunk(std::string& out, RequestEvent& e);
  AnswerHeader h_;
  ParsedRequest pr_;
  const Tokenizer& tok_;
  std::shared_ptr<RequestHandle> handle_;
  bool started_ = false, finished_ = false;
  int completion_tokens_ = 0;
  size_t text_offset_ = 0;
  std::optional<chat::ReasoningStream> reasoning_;  // a thinking template's reasoning kept apart
  chat::ToolStreamSplitter splitter_;  // with tools: the answer so far, and how much was sent
  std::vector<TokenLogprob> held_logprobs_;
};

}  // namespace ferrum::server
