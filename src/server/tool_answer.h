// A chat answer of a request with tools, in OpenAI's form: the model's text parsed by the
// template's tool style (chat/tool_parser.h) into `content` and `tool_calls`, each call with a
// fresh id ("call_" + 24 letters/digits; 9 for the Mistral style, whose templates require it).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "chat/tools.h"

namespace ferrum::server {

struct ToolAnswer {
  nlohmann::json content;                               // the text around the calls; null when empty
  nlohmann::json tool_calls = nlohmann::json::array();  // [{id, type, function: {name, arguments}}]
  bool called() const { return !tool_calls.empty(); }
};

// At most one call unless `req.parallel`. `finish_reason` other than "stop": the answer was cut, so
// the calls it finished stand though a later one is unfinished (chat/tool_parser.h).
ToolAnswer tool_answer(chat::ToolStyle style, const chat::ToolRequest& req, const std::string& text,
                       const std::string& finish_reason);

// The finish reason of an answer: "tool_calls" when it called tools and ended on its own (a cut
// one keeps "length").
std::string tool_finish_reason(const ToolAnswer& a, const std::string& finish_reason);

std::string tool_call_id(chat::ToolStyle style);

// A streamed answer's content (a string or null) past the `released` bytes already sent: what the
// stream's last piece still has to send once the calls are parsed out.
std::string unsent_content(const nlohmann::json& content, size_t released);

}  // namespace ferrum::server
