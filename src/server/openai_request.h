// Validation of OpenAI request bodies (/v1/chat/completions, /v1/completions) into engine
// RequestParams. Every problem is an ApiError naming the offending field. A completions `prompt`
// is raw: special-token texts in it are tokens (as in llama.cpp's server and vLLM); chat message
// content is text (chat_prompt.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chat/chat_prompt.h"
#include "chat/tools.h"
#include "engine/request.h"
#include "ferrum/tokenizer.h"
#include "grammar/grammar_cache.h"

namespace ferrum::server {

struct ParsedRequest {
  RequestParams params;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;  // chat: logprobs flag; completions: logprobs != null
  std::string model;      // as the client named it ("" when absent)
  // Constrained decoding asked for by `response_format` (json_object, json_schema) or llama.cpp's
  // `grammar` (GBNF); compiled by the server (grammar_param names the field for a 400).
  std::optional<grammar::GrammarSpec> grammar;
  std::string grammar_param;
  // Chat `tools`: the answer is parsed for calls in the template's style when tools.active().
  chat::ToolRequest tools;
  chat::ToolStyle tool_style = chat::ToolStyle::Default;
  // The answer's reasoning kept apart as `reasoning_content` (chat/reasoning.h): the markers when
  // the template thinks and neither the server nor the request turned it off; reasoning_open: the
  // answer begins inside the reasoning (the prompt opened it).
  std::optional<chat::ReasoningMarkers> reasoning;
  bool reasoning_open = false;
};

struct ChatParseOptions {
  // Control-token texts in messages are tokens, not text (trusted clients).
  bool special_tokens_in_messages = false;
  // --reasoning-format auto (true) or none: the default of a request's `reasoning_format`.
  bool reasoning = true;
};

// `served_names`: model ids this server answers to (an unknown `model` is a 404). With reasoning
// kept apart, `response_format` and forced tool calls constrain the answer after the reasoning (the
// prompt is opened with the start marker when the template left the choice to the model);
// llama.cpp's raw `grammar` constrains the whole output, reasoning markers included.
ParsedRequest parse_chat_request(const nlohmann::json& body, const Tokenizer& tok,
                                 const chat::ChatPrompt& prompt, const std::vector<std::string>& served_names,
                                 const ChatParseOptions& opt = {});
ParsedRequest parse_completion_request(const nlohmann::json& body, const Tokenizer& tok,
                                       const std::vector<std::string>& served_names);

}  // namespace ferrum::server
