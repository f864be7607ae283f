#include "server/responses_answer.h"

#include <random>

#include "server/api_error.h"
#include "server/stream_answer.h"
#include "server/tool_answer.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;

json reasoning_item(const std::string& id, const std::string& text) {
  return {{"type", "reasoning"},
          {"id", id},
          {"summary", json::array()},
          {"content", json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}

json text_part(const std::string& text) {
  return {
      {"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}};
}

json message_item(const std::string& id, const std::string& text, const char* status) {
  return {{"type", "message"},
          {"id", id},
          {"status", status},
          {"role", "assistant"},
          {"content", json::array({text_part(text)})}};
}

json function_call_item(const json& call, const char* status) {
  return {{"type", "function_call"},
          {"id", response_item_id("fc")},
          {"call_id", call["id"]},
          {"name", call["function"]["name"]},
          {"arguments", call["function"]["arguments"]},
          {"status", status}};
}

json usage_json(const Collected& c) {
  return {{"input_tokens", c.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", c.cached_tokens}}},
          {"output_tokens", c.completion_tokens},
          {"total_tokens", c.prompt_tokens + c.completion_tokens}};
}

const char* status_of(const std::string& finish_reason) {
  if (finish_reason == "error") return "failed";
  if (finish_reason == "length" || finish_reason == "cancelled") return "incomplete";
  return "completed";
}

}  // namespace

std::string response_item_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}_{:016x}{:016x}", prefix, rng(), rng());
}

json response_output(const ParsedRequest& pr, const std::string& text, const std::string& finish_reason) {
  json out = json::array();
  std::string content = text;
  if (pr.reasoning) {
    chat::ReasoningSplit s = chat::split_reasoning(text, *pr.reasoning, pr.reasoning_open, /*partial=*/false);
    if (!s.reasoning.empty()) out.push_back(reasoning_item(response_item_id("rs"), s.reasoning));
    content = std::move(s.content);
  }
  json calls = json::array();
  if (pr.tools.active()) {
    const ToolAnswer a = tool_answer(pr.tool_style, pr.tools, content, finish_reason);
    content = a.content.is_string() ? a.content.get<std::string>() : "";
    calls = a.tool_calls;
  }
  if (!content.empty() || calls.empty())
    out.push_back(message_item(response_item_id("msg"), content, "completed"));
  for (const json& call : calls) out.push_back(function_call_item(call, "completed"));
  return out;
}

json response_object(const ResponseHeader& h, json output, const Collected& c) {
  json r = {{"id", h.id},
            {"object", "response"},
            {"created_at", h.created},
            {"status", status_of(c.finish_reason)},
            {"error", nullptr},
            {"incomplete_details", nullptr},
            {"model", h.model},
            {"output", std::move(output)},
            {"previous_response_id", h.previous_response_id.empty() ? json() : json(h.previous_response_id)},
            {"store", h.store},
            {"usage", usage_json(c)}};
  for (const auto& [k, v] : h.echo.items()) r[k] = v;
  if (c.finish_reason == "length") r["incomplete_details"] = {{"reason", "max_output_tokens"}};
  if (c.finish_reason == "cancelled") r["incomplete_details"] = {{"reason", "cancelled"}};
  if (c.finish_reason == "error") r["error"] = {{"code", "server_error"}, {"message", c.error}};
  return r;
}

json answer_messages(const json& output) {
  json msg = {{"role", "assistant"}, {"content", ""}};
  json calls = json::array();
  for (const json& item : output) {
    if (item["type"] == "message")
      for (const json& part : item["content"])
        msg["content"] = msg["content"].get<std::string>() + part["text"].get<std::string>();
    if (item["type"] == "function_call")
      calls.push_back({{"id", item["call_id"]},
                       {"type", "function"},
                       {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}});
  }
  if (!calls.empty()) msg["tool_calls"] = std::move(calls);
  return json::array({msg});
}

ResponseStream::ResponseStream(ResponseHeader h, ParsedRequest pr, std::shared_ptr<RequestHandle> handle,
                               std::function<void(const json&)> done)
    : h_(std::move(h)),
      pr_(std::move(pr)),
      handle_(std::move(handle)),
      done_(std::move(done)),
      splitter_(pr_.tool_style, pr_.tools.forced()) {
  if (pr_.reasoning) reasoning_.emplace(*pr_.reasoning, pr_.reasoning_open);
}

void ResponseStream::event(std::string& out, const char* type, json e) {
  e["type"] = type;
  e["sequence_number"] = seq_++;
  out += fmt::format("event: {}\ndata: {}\n\n", type, body_text(e));
}

json ResponseStream::snapshot(const char* status) const {
  Collected c;
  json r = response_object(h_, output_, c);
  r["status"] = status;
  r["usage"] = nullptr;
  return r;
}

void ResponseStream::reasoning_text(std::string& out, const std::string& s) {
  if (s.empty()) return;
  if (!rs_open_) {
    rs_open_ = true;
    rs_id_ = response_item_id("rs");
    json item = reasoning_item(rs_id_, "");
    item["content"] = json::array();
    event(out, "response.output_item.added", {{"output_index", output_.size()}, {"item", item}});
  }
  rs_text_ += s;
  event(out, "response.reasoning_text.delta",
        {{"item_id", rs_id_}, {"output_index", output_.size()}, {"content_index", 0}, {"delta", s}});
}

void ResponseStream::close_reasoning(std::string& out) {
  if (!rs_open_) return;
  rs_open_ = false;
  event(out, "response.reasoning_text.done",
        {{"item_id", rs_id_}, {"output_index", output_.size()}, {"content_index", 0}, {"text", rs_text_}});
  json item = reasoning_item(rs_id_, rs_text_);
  event(out, "response.output_item.done", {{"output_index", output_.size()}, {"item", item}});
  output_.push_back(std::move(item));
}

void ResponseStream::open_message(std::string& out) {
  if (msg_open_) return;
  close_reasoning(out);
  msg_open_ = true;
  msg_id_ = response_item_id("msg");
  json item = message_item(msg_id_, "", "in_progress");
  item["content"] = json::array();
  event(out, "response.output_item.added", {{"output_index", output_.size()}, {"item", item}});
  event(out, "response.content_part.added",
        {{"item_id", msg_id_},
         {"output_index", output_.size()},
         {"content_index", 0},
         {"part", text_part("")}});
}

void ResponseStream::message_text(std::string& out, const std::string& s) {
  if (s.empty()) return;
  open_message(out);
  msg_text_ += s;
  event(out, "response.output_text.delta",
        {{"item_id", msg_id_},
         {"output_index", output_.size()},
         {"content_index", 0},
         {"delta", s},
         {"logprobs", json::array()}});
}

void ResponseStream::close_message(std::string& out) {
  if (!msg_open_) return;
  msg_open_ = false;
  const json at = {{"item_id", msg_id_}, {"output_index", output_.size()}, {"content_index", 0}};
  json e = at;
  e["text"] = msg_text_;
  e["logprobs"] = json::array();
  event(out, "response.output_text.done", e);
  e = at;
  e["part"] = text_part(msg_text_);
  event(out, "response.content_part.done", e);
  json item = message_item(msg_id_, msg_text_, "completed");
  event(out, "response.output_item.done", {{"output_index", output_.size()}, {"item", item}});
  output_.push_back(std::move(item));
}

void ResponseStream::function_calls(std::string& out, const json& tool_calls) {
  for (const json& call : tool_calls) {
    json item = function_call_item(call, "in_progress");
    const std::string args = item["arguments"];
    item["arguments"] = "";
    const size_t index = output_.size();
    event(out, "response.output_item.added", {{"output_index", index}, {"item", item}});
    event(out, "response.function_call_arguments.delta",
          {{"item_id", item["id"]}, {"output_index", index}, {"delta", args}});
    event(out, "response.function_call_arguments.done",
          {{"item_id", item["id"]}, {"output_index", index}, {"arguments", args}});
    item["arguments"] = args;
    item["status"] = "completed";
    event(out, "response.output_item.done", {{"output_index", index}, {"item", item}});
    output_.push_back(std::move(item));
  }
}

bool ResponseStream::next(std::string& out) {
  if (finished_) return false;
  if (!started_) {
    started_ = true;
    event(out, "response.created", {{"response", snapshot("in_progress")}});
    event(out, "response.in_progress", {{"response", snapshot("in_progress")}});
    return true;
  }
  auto e = handle_->next(kEnginePoll);
  if (!e) return true;
  completion_tokens_ += static_cast<int>(e->tokens.size());
  const chat::ReasoningSplit d = chat::stream_piece(reasoning_, e->text, e->finished);
  reasoning_text(out, d.reasoning);
  message_text(out, pr_.tools.active() ? splitter_.push(d.content) : d.content);
  if (e->finished) return finish(out, *e);
  return true;
}

bool ResponseStream::finish(std::string& out, const RequestEvent& e) {
  json calls = json::array();
  if (pr_.tools.active()) {
    const ToolAnswer a = tool_answer(pr_.tool_style, pr_.tools, splitter_.text(), e.finish_reason);
    message_text(out, unsent_content(a.content, splitter_.released()));
    calls = a.tool_calls;
  }
  close_reasoning(out);
  if (calls.empty()) open_message(out);  // an answer without calls has a message, if empty
  close_message(out);
  function_calls(out, calls);
  Collected c;
  c.finish_reason = e.finish_reason;
  c.error = e.error;
  c.prompt_tokens = e.prompt_tokens;
  c.completion_tokens = e.completion_tokens;
  c.cached_tokens = e.cached_tokens;
  const json r = response_object(h_, output_, c);
  const std::string status = r["status"];
  const char* type = status == "completed"    ? "response.completed"
                     : status == "incomplete" ? "response.incomplete"
                                              : "response.failed";
  event(out, type, {{"response", r}});
  finished_ = true;
  if (done_) done_(r);
  return false;
}

}  // namespace ferrum::server
