#include "server/anthropic_messages.h"

#include <chrono>

#include "server/api_error.h"
#include "server/stream_answer.h"
#include "server/tool_answer.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;

// The text of a `system` or tool_result `content`: a string, or a list of text blocks.
std::string block_text(const json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) bad_request(where, fmt::format("'{}' must be a string or a list of text blocks", where));
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    const json& b = v[i];
    if (!b.is_object() || b.value("type", "") != "text" || !b.contains("text") || !b["text"].is_string())
      bad_request(fmt::format("{}[{}]", where, i),
                  "only text blocks ({\"type\": \"text\", \"text\": ...}) are supported here");
    out += (out.empty() ? "" : "\n") + b["text"].get<std::string>();
  }
  return out;
}

// One Anthropic message as OpenAI chat messages: text blocks become the content, tool_use blocks an
// assistant's tool_calls, each tool_result block a "tool" message of its own (before the user's text).
void add_message(const json& m, size_t i, json& out) {
  const std::string where = fmt::format("messages[{}]", i);
  if (!m.is_object()) bad_request(where, "each message must be an object with 'role' and 'content'");
  const std::string role = m.value("role", "");
  if (role != "user" && role != "assistant")
    bad_request(where + ".role", "'role' must be \"user\" or \"assistant\"");
  if (!m.contains("content")) bad_request(where + ".content", "'content' is required");
  const json& content = m["content"];
  if (content.is_string()) {
    out.push_back({{"role", role}, {"content", content}});
    return;
  }
  if (!content.is_array())
    bad_request(where + ".content", "'content' must be a string or a list of content blocks");
  std::string text;
  json calls = json::array();
  for (size_t k = 0; k < content.size(); ++k) {
    const json& b = content[k];
    const std::string at = fmt::format("{}.content[{}]", where, k);
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
      bad_request(at, "a content block needs a 'type'");
    const std::string type = b["type"];
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string())
        bad_request(at + ".text", "a text block needs a string 'text'");
      text += b["text"].get<std::string>();
    } else if (type == "tool_use" && role == "assistant") {
      if (!b.contains("id") || !b["id"].is_string() || !b.contains("name") || !b["name"].is_string())
        bad_request(at, "a tool_use block needs a string 'id' and 'name'");
      const json input = b.contains("input") ? b["input"] : json::object();
      calls.push_back({{"id", b["id"]},
                       {"type", "function"},
                       {"function", {{"name", b["name"]}, {"arguments", input.dump()}}}});
    } else if (type == "tool_result" && role == "user") {
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string())
        bad_request(at + ".tool_use_id", "a tool_result block needs a string 'tool_use_id'");
      const std::string result = b.contains("content") ? block_text(b["content"], at + ".content") : "";
      out.push_back({{"role", "tool"}, {"tool_call_id", b["tool_use_id"]}, {"content", result}});
    } else if (type == "thinking" || type == "redacted_thinking") {
      continue;  // earlier reasoning is not part of the prompt
    } else {
      bad_request(at + ".type",
                  fmt::format("content blocks of type '{}' are not supported in a {} message", type, role));
    }
  }
  if (role == "assistant") {
    json a = {{"role", "assistant"},
              {"content", text.empty() && !calls.empty() ? json(nullptr) : json(text)}};
    if (!calls.empty()) a["tool_calls"] = calls;
    out.push_back(a);
  } else if (!text.empty() || out.empty() || out.back().value("role", "") != "tool") {
    out.push_back({{"role", "user"}, {"content", text}});
  }
}

json tool_of(const json& t, size_t i) {
  const std::string where = fmt::format("tools[{}]", i);
  if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
    bad_request(where, "each tool needs a string 'name' (and an 'input_schema')");
  json f = {{"name", t["name"]},
            {"parameters", t.contains("input_schema") ? t["input_schema"] : json::object()}};
  if (t.contains("description")) f["description"] = t["description"];
  return {{"type", "function"}, {"function", f}};
}

json tool_choice_of(const json& c, json& chat) {
  if (!c.is_object() || !c.contains("type") || !c["type"].is_string())
    bad_request("tool_choice", "'tool_choice' must be an object with a 'type' (auto, any, tool or none)");
  if (c.value("disable_parallel_tool_use", false)) chat["parallel_tool_calls"] = false;
  const std::string type = c["type"];
  if (type == "auto") return "auto";
  if (type == "any") return "required";
  if (type == "none") return "none";
  if (type == "tool") {
    if (!c.contains("name") || !c["name"].is_string())
      bad_request("tool_choice.name", "tool_choice 'tool' needs a 'name'");
    return {{"type", "function"}, {"function", {{"name", c["name"]}}}};
  }
  bad_request("tool_choice.type",
              fmt::format("tool_choice type '{}' is not known (auto, any, tool or none)", type));
}

// `thinking`: {"type": "enabled", "budget_tokens": N} lets a thinking template think, at most N
// tokens; {"type": "disabled"} turns its thinking off (chat_template_kwargs.enable_thinking).
void add_thinking(const json& t, json& chat) {
  const std::string type = t.is_object() && t.contains("type") && t["type"].is_string() ? t["type"] : "";
  if (type != "enabled" && type != "disabled")
    bad_request("thinking.type", "'thinking.type' must be \"enabled\" or \"disabled\"");
  chat["chat_template_kwargs"] = {{"enable_thinking", type == "enabled"}};
  if (type == "enabled" && t.contains("budget_tokens")) {
    if (!t["budget_tokens"].is_number_integer() || t["budget_tokens"].get<int64_t>() < 0)
      bad_request("thinking.budget_tokens", "'thinking.budget_tokens' must be a whole number");
    chat["reasoning_budget"] = t["budget_tokens"];
  }
}

}  // namespace

json chat_body_of_messages(const json& b, bool count_tokens) {
  if (!b.is_object()) throw ApiError(400, "the request body must be a JSON object");
  json chat = json::object();
  if (b.contains("model")) chat["model"] = b["model"];
  if (!count_tokens) {
    if (!b.contains("max_tokens")) bad_request("max_tokens", "'max_tokens' is required");
    if (!b["max_tokens"].is_number_integer() || b["max_tokens"].get<int64_t>() < 1)
      bad_request("max_tokens", "'max_tokens' must be a whole number of at least 1");
    chat["max_tokens"] = b["max_tokens"];
  }
  json messages = json::array();
  if (b.contains("system") && !b["system"].is_null())
    messages.push_back({{"role", "system"}, {"content", block_text(b["system"], "system")}});
  if (!b.contains("messages") || !b["messages"].is_array() || b["messages"].empty())
    bad_request("messages", "'messages' must be a non-empty list");
  for (size_t i = 0; i < b["messages"].size(); ++i) add_message(b["messages"][i], i, messages);
  chat["messages"] = messages;
  if (b.contains("stop_sequences") && !b["stop_sequences"].is_null()) chat["stop"] = b["stop_sequences"];
  for (const char* k : {"temperature", "top_p", "top_k", "stream"})
    if (b.contains(k)) chat[k] = b[k];
  if (b.contains("tools") && !b["tools"].is_null()) {
    if (!b["tools"].is_array()) bad_request("tools", "'tools' must be a list");
    json tools = json::array();
    for (size_t i = 0; i < b["tools"].size(); ++i) tools.push_back(tool_of(b["tools"][i], i));
    if (!tools.empty()) chat["tools"] = tools;
  }
  if (b.contains("tool_choice") && !b["tool_choice"].is_null())
    chat["tool_choice"] = tool_choice_of(b["tool_choice"], chat);
  if (b.contains("thinking") && !b["thinking"].is_null()) add_thinking(b["thinking"], chat);
  return chat;
}

std::string message_stop_reason(const std::string& finish_reason, const std::string& stop_string,
                                bool tool_called) {
  if (finish_reason == "length") return "max_tokens";
  if (tool_called) return "tool_use";
  return stop_string.empty() ? "end_turn" : "stop_sequence";
}

json message_error(int status, const std::string& message) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 403 ? "permission_error"
                     : status == 404 ? "not_found_error"
                     : status == 413 ? "request_too_large"
                     : status == 429 ? "rate_limit_error"
                     : status == 503 ? "overloaded_error"
                     : status >= 500 ? "api_error"
                                     : "invalid_request_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
}

namespace {

// A tool call of a ToolAnswer as a tool_use block (its arguments are JSON text).
json tool_use_block(const json& call) {
  json input = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
  if (input.is_discarded() || !input.is_object()) input = json::object();
  return {{"type", "tool_use"}, {"id", call["id"]}, {"name", call["function"]["name"]}, {"input", input}};
}

json usage_of(int prompt_tokens, int completion_tokens, int cached_tokens) {
  return {{"input_tokens", prompt_tokens},
          {"output_tokens", completion_tokens},
          {"cache_read_input_tokens", cached_tokens}};
}

}  // namespace

json message_answer(const AnswerHeader& h, const ParsedRequest& pr, const Collected& c) {
  json content = json::array();
  bool called = false;
  std::string text = c.text;
  if (pr.reasoning) {  // a thinking template's reasoning as a thinking block
    chat::ReasoningSplit s = chat::split_reasoning(c.text, *pr.reasoning, pr.reasoning_open, false);
    if (!s.reasoning.empty())
      content.push_back({{"type", "thinking"}, {"thinking", s.reasoning}, {"signature", ""}});
    text = std::move(s.content);
  }
  if (pr.tools.active()) {
    const ToolAnswer a = tool_answer(pr.tool_style, pr.tools, text, c.finish_reason);
    if (a.content.is_string() && !a.content.get<std::string>().empty())
      content.push_back({{"type", "text"}, {"text", a.content}});
    for (const json& call : a.tool_calls) content.push_back(tool_use_block(call));
    called = a.called() && c.finish_reason != "length";
  } else if (!text.empty()) {
    content.push_back({{"type", "text"}, {"text", text}});
  }
  json m = {{"id", h.id},
            {"type", "message"},
            {"role", "assistant"},
            {"model", h.model},
            {"content", content},
            {"stop_reason", message_stop_reason(c.finish_reason, c.stop_string, called)},
            {"stop_sequence", c.stop_string.empty() ? json(nullptr) : json(c.stop_string)},
            {"usage", usage_of(c.prompt_tokens, c.completion_tokens, c.cached_tokens)}};
  return m;
}

namespace {
void event(std::string& out, const char* type, json data) {
  data["type"] = type;
  out += fmt::format("event: {}\ndata: {}\n\n", type, body_text(data));
}
}  // namespace

MessageStream::MessageStream(AnswerHeader h, ParsedRequest pr, std::shared_ptr<RequestHandle> handle,
                             int prompt_tokens)
    : h_(std::move(h)),
      pr_(std::move(pr)),
      handle_(std::move(handle)),
      prompt_tokens_(prompt_tokens),
      splitter_(pr_.tool_style, pr_.tools.forced()) {
  if (pr_.reasoning) reasoning_.emplace(*pr_.reasoning, pr_.reasoning_open);
}

void MessageStream::thinking(std::string& out, const std::string& s) {
  if (s.empty()) return;
  if (!thinking_open_) {
    event(
        out, "content_block_start",
        {{"index", index_}, {"content_block", {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}}});
    thinking_open_ = true;
  }
  event(out, "content_block_delta",
        {{"index", index_}, {"delta", {{"type", "thinking_delta"}, {"thinking", s}}}});
}

void MessageStream::text(std::string& out, const std::string& s) {
  if (s.empty()) return;
  if (thinking_open_) close_block(out);
  if (!text_open_) {
    event(out, "content_block_start",
          {{"index", index_}, {"content_block", {{"type", "text"}, {"text", ""}}}});
    text_open_ = true;
  }
  event(out, "content_block_delta", {{"index", index_}, {"delta", {{"type", "text_delta"}, {"text", s}}}});
}

void MessageStream::close_block(std::string& out) {
  if (!text_open_ && !thinking_open_) return;
  event(out, "content_block_stop", {{"index", index_++}});
  text_open_ = thinking_open_ = false;
}

bool MessageStream::next(std::string& out) {
  if (finished_) return false;
  if (!started_) {
    started_ = true;
    json m = {{"id", h_.id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", h_.model},
              {"content", json::array()},
              {"stop_reason", nullptr},
              {"stop_sequence", nullptr},
              {"usage", usage_of(prompt_tokens_, 0, 0)}};
    event(out, "message_start", {{"message", m}});
    return true;
  }
  auto e = handle_->next(kEnginePoll);
  if (!e) return true;
  completion_tokens_ += static_cast<int>(e->tokens.size());
  const chat::ReasoningSplit d = chat::stream_piece(reasoning_, e->text, e->finished);
  thinking(out, d.reasoning);
  text(out, pr_.tools.active() ? splitter_.push(d.content) : d.content);
  if (!e->finished) return true;
  return finish(out, *e);
}

// The end: an error event, or the rest of the text, the tool_use blocks, message_delta (stop
// reason, output tokens) and message_stop.
bool MessageStream::finish(std::string& out, const RequestEvent& e) {
  finished_ = true;
  if (e.finish_reason == "error") {
    json err = message_error(500, e.error);
    event(out, "error", {{"error", err["error"]}});
    return false;
  }
  bool called = false;
  if (pr_.tools.active()) {
    const ToolAnswer a = tool_answer(pr_.tool_style, pr_.tools, splitter_.text(), e.finish_reason);
    text(out, unsent_content(a.content, splitter_.released()));
    close_block(out);
    for (const json& call : a.tool_calls) {
      json block = tool_use_block(call);
      const std::string input = block["input"].dump();
      block["input"] = json::object();
      event(out, "content_block_start", {{"index", index_}, {"content_block", block}});
      event(out, "content_block_delta",
            {{"index", index_}, {"delta", {{"type", "input_json_delta"}, {"partial_json", input}}}});
      event(out, "content_block_stop", {{"index", index_++}});
    }
    called = a.called() && e.finish_reason != "length";
  }
  close_block(out);
  json delta = {{"stop_reason", message_stop_reason(e.finish_reason, e.stop_string, called)},
                {"stop_sequence", e.stop_string.empty() ? json(nullptr) : json(e.stop_string)}};
  event(out, "message_delta", {{"delta", delta}, {"usage", {{"output_tokens", e.completion_tokens}}}});
  event(out, "message_stop", json::object());
  return false;
}

}  // namespace ferrum::server
