#include "server/responses_request.h"

#include "server/api_error.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;

// A message's or output's content: a string, or text parts (input_text, output_text, text).
std::string content_text(const json& c, const std::string& where) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) bad_request(where, where + " must be a string or an array of content parts");
  std::string text;
  for (size_t i = 0; i < c.size(); ++i) {
    const json& p = c[i];
    const std::string pw = fmt::format("{}[{}]", where, i);
    const std::string type = p.is_object() && p.contains("type") && p["type"].is_string() ? p["type"] : "";
    if (type != "input_text" && type != "output_text" && type != "text")
      bad_request(
          pw,
          fmt::format("{}: content parts of type '{}' are not supported (only input_text and output_text)",
                      pw, type));
    if (!p.contains("text") || !p["text"].is_string())
      bad_request(pw + ".text", pw + ".text must be a string");
    text += p["text"].get<std::string>();
  }
  return text;
}

std::string string_field(const json& item, const char* k, const std::string& where) {
  if (!item.contains(k) || !item[k].is_string())
    bad_request(where + "." + k, fmt::format("{}.{} must be a string", where, k));
  return item[k].get<std::string>();
}

// One input item appended to `msgs` as chat messages.
void add_item(const json& item, const std::string& where, json& msgs) {
  if (!item.is_object()) bad_request(where, where + " must be an object");
  const std::string type = item.contains("type") && item["type"].is_string() ? item["type"] : "message";
  if (type == "message") {
    const std::string role = string_field(item, "role", where);
    if (role != "user" && role != "assistant" && role != "system" && role != "developer")
      bad_request(where + ".role",
                  fmt::format("{}.role '{}' is not one of user, assistant, system, developer", where,
                              role.substr(0, 64)));
    if (!item.contains("content")) bad_request(where + ".content", where + ".content is required");
    msgs.push_back({{"role", role}, {"content", content_text(item["content"], where + ".content")}});
  } else if (type == "function_call") {
    json call = {{"id", string_field(item, "call_id", where)},
                 {"type", "function"},
                 {"function",
                  {{"name", string_field(item, "name", where)},
                   {"arguments", string_field(item, "arguments", where)}}}};
    // Calls made together are one assistant turn.
    if (!msgs.empty() && msgs.back()["role"] == "assistant" && msgs.back().contains("tool_calls"))
      msgs.back()["tool_calls"].push_back(std::move(call));
    else
      msgs.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}});
  } else if (type == "function_call_output") {
    if (!item.contains("output")) bad_request(where + ".output", where + ".output is required");
    msgs.push_back({{"role", "tool"},
                    {"tool_call_id", string_field(item, "call_id", where)},
                    {"content", content_text(item["output"], where + ".output")}});
  } else if (type == "reasoning") {
    // Earlier reasoning is not part of the prompt (as the chat templates drop it).
  } else {
    bad_request(
        where + ".type",
        fmt::format("{}.type '{}' is not supported (message, function_call, function_call_output, reasoning)",
                    where, type.substr(0, 64)));
  }
}

json chat_tools(const json& tools) {
  if (!tools.is_array()) bad_request("tools", "'tools' must be an array");
  json out = json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string where = fmt::format("tools[{}]", i);
    if (!t.is_object() || !t.contains("type") || t["type"] != "function")
      bad_request(where + ".type",
                  fmt::format("{}: only function tools are supported (got type {})", where,
                              t.is_object() && t.contains("type") ? t["type"].dump() : "none"));
    json f = {{"name", string_field(t, "name", where)}};
    for (const char* k : {"description", "parameters", "strict"})
      if (has_field(t, k)) f[k] = t[k];
    out.push_back({{"type", "function"}, {"function", f}});
  }
  return out;
}

json chat_tool_choice(const json& c) {
  if (c.is_string()) return c;
  if (c.is_object() && c.value("type", "") == "function" && c.contains("name") && c["name"].is_string())
    return {{"type", "function"}, {"function", {{"name", c["name"]}}}};
  bad_request(
      "tool_choice",
      "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": ...}");
}

// text.format: {"type": "text" | "json_object" | "json_schema", "name", "schema", "strict"}.
void add_text_format(const json& text, json& chat) {
  if (!text.is_object()) bad_request("text", "'text' must be an object");
  if (!has_field(text, "format")) return;
  const json& f = text["format"];
  const std::string type = f.is_object() && f.contains("type") && f["type"].is_string() ? f["type"] : "";
  if (type == "text") return;
  if (type == "json_object") {
    chat["response_format"] = {{"type", "json_object"}};
  } else if (type == "json_schema") {
    if (!has_field(f, "schema"))
      bad_request("text.format.schema", "'text.format.schema' is required for json_schema");
    json js = {{"name", f.value("name", "response")}, {"schema", f["schema"]}};
    if (has_field(f, "strict")) js["strict"] = f["strict"];
    chat["response_format"] = {{"type", "json_schema"}, {"json_schema", js}};
  } else {
    bad_request("text.format.type", "'text.format.type' must be text, json_object or json_schema");
  }
}

}  // namespace

std::string previous_response_id_of(const json& b) {
  if (!b.is_object() || !has_field(b, "previous_response_id")) return "";
  if (!b["previous_response_id"].is_string())
    bad_request("previous_response_id", "'previous_response_id' must be a string");
  return b["previous_response_id"].get<std::string>();
}

ResponsesRequest parse_responses_request(const json& b, const json& previous) {
  if (!b.is_object()) bad_request("", "the request body must be a JSON object");
  ResponsesRequest r;
  r.previous_response_id = previous_response_id_of(b);
  r.conversation = previous.is_array() ? previous : json::array();
  if (!has_field(b, "input")) bad_request("input", "'input' is required");
  const json& input = b["input"];
  if (input.is_string()) {
    r.conversation.push_back({{"role", "user"}, {"content", input}});
  } else if (input.is_array()) {
    for (size_t i = 0; i < input.size(); ++i) add_item(input[i], fmt::format("input[{}]", i), r.conversation);
  } else {
    bad_request("input", "'input' must be a string or an array of input items");
  }
  json msgs = json::array();
  if (has_field(b, "instructions")) {
    if (!b["instructions"].is_string()) bad_request("instructions", "'instructions' must be a string");
    msgs.push_back({{"role", "system"}, {"content", b["instructions"]}});
  }
  for (const json& m : r.conversation) msgs.push_back(m);
  if (msgs.empty()) bad_request("input", "'input' holds no messages");
  json& c = r.chat_body = {{"messages", msgs}};
  if (has_field(b, "model")) c["model"] = b["model"];
  if (has_field(b, "max_output_tokens")) c["max_tokens"] = b["max_output_tokens"];
  // The chat fields under the same names (a few are extensions of the Responses API, as in vLLM).
  for (const char* k :
       {"temperature", "top_p", "top_k", "min_p", "seed", "stop", "parallel_tool_calls", "frequency_penalty",
        "presence_penalty", "reasoning_format", "reasoning_budget", "chat_template_kwargs", "speculative",
        "stream", "logit_bias", "grammar", "ignore_eos", "repetition_penalty"})
    if (has_field(b, k)) c[k] = b[k];
  if (has_field(b, "tools")) c["tools"] = chat_tools(b["tools"]);
  if (has_field(b, "tool_choice")) c["tool_choice"] = chat_tool_choice(b["tool_choice"]);
  if (has_field(b, "text")) add_text_format(b["text"], c);
  // reasoning.effort: gpt-oss's reasoning level (the chat field reasoning_effort checks the value).
  if (has_field(b, "reasoning")) {
    if (!b["reasoning"].is_object()) bad_request("reasoning", "'reasoning' must be an object");
    if (has_field(b["reasoning"], "effort")) c["reasoning_effort"] = b["reasoning"]["effort"];
  }
  if (has_field(b, "store")) {
    if (!b["store"].is_boolean()) bad_request("store", "'store' must be a boolean");
    r.store = b["store"].get<bool>();
  }
  if (has_field(b, "stream")) {
    if (!b["stream"].is_boolean()) bad_request("stream", "'stream' must be a boolean");
    r.stream = b["stream"].get<bool>();
  }
  r.echo = {{"instructions", b.value("instructions", json())},
            {"max_output_tokens", b.value("max_output_tokens", json())},
            {"temperature", b.value("temperature", json(1.0))},
            {"top_p", b.value("top_p", json(1.0))},
            {"parallel_tool_calls", b.value("parallel_tool_calls", json(true))},
            {"tool_choice", b.value("tool_choice", json("auto"))},
            {"tools", b.value("tools", json::array())},
            {"text", b.value("text", json{{"format", {{"type", "text"}}}})},
            {"reasoning", b.value("reasoning", json{{"effort", nullptr}, {"summary", nullptr}})},
            {"metadata", b.value("metadata", json::object())},
            {"user", b.value("user", json())},
            {"truncation", "disabled"}};
  return r;
}

}  // namespace ferrum::server
