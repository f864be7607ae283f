// The Responses API's request (POST /v1/responses) as a chat completions body, so
// parse_chat_request checks it and builds the prompt as for /v1/chat/completions: `input` (a
// string, or message / function_call / function_call_output / reasoning items) after the stored
// conversation of `previous_response_id` and after `instructions` (a system message, never carried
// over to a later response), `max_output_tokens`, sampling fields, `text.format` (json_object,
// json_schema) as response_format, flat function `tools` and `tool_choice`. Unsupported items and
// tools are 400s naming the field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ferrum::server {

struct ResponsesRequest {
  nlohmann::json chat_body;     // the equivalent /v1/chat/completions body
  nlohmann::json conversation;  // its messages without the instructions (what a later response continues)
  nlohmann::json echo;          // the request's settings as the response object repeats them
  std::string previous_response_id;
  bool store = true, stream = false;
};

// The body's previous_response_id ("" when absent); a non-string is a 400.
std::string previous_response_id_of(const nlohmann::json& body);

// `previous`: the stored conversation of previous_response_id (an empty array when none).
ResponsesRequest parse_responses_request(const nlohmann::json& body, const nlohmann::json& previous);

}  // namespace ferrum::server
