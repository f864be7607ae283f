#include "server/ollama_api.h"

#include <ctime>

#include "server/api_error.h"
#include "server/stream_answer.h"
#include "server/tool_answer.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// options.* (Ollama's names) as the OpenAI body's sampling fields.
void add_options(const json& b, json& out) {
  if (!b.contains("options") || b["options"].is_null()) return;
  const json& o = b["options"];
  if (!o.is_object()) bad_request("options", "'options' must be an object");
  static const std::pair<const char*, const char*> kNames[] = {{"temperature", "temperature"},
                                                               {"top_p", "top_p"},
                                                               {"top_k", "top_k"},
                                                               {"min_p", "min_p"},
                                                               {"seed", "seed"},
                                                               {"num_predict", "max_tokens"},
                                                               {"stop", "stop"},
                                                               {"repeat_penalty", "repetition_penalty"},
                                                               {"presence_penalty", "presence_penalty"},
                                                               {"frequency_penalty", "frequency_penalty"}};
  for (const auto& [from, to] : kNames)
    if (o.contains(from) && !o[from].is_null()) out[to] = o[from];
  // num_predict -1 (Ollama: until the end) is max_tokens unset; -2 (fill the context) likewise.
  if (out.contains("max_tokens") && out["max_tokens"].is_number_integer() &&
      out["max_tokens"].get<int64_t>() < 0)
    out.erase("max_tokens");
}

// `format`: "json" or a JSON schema, as response_format.
void add_format(const json& b, json& out) {
  if (!b.contains("format") || b["format"].is_null() || b["format"] == "") return;
  const json& f = b["format"];
  if (f == "json")
    out["response_format"] = {{"type", "json_object"}};
  else if (f.is_object())
    out["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "format"}, {"schema", f}}}};
  else
    bad_request("format", "'format' must be \"json\" or a JSON schema object");
}

// Ollama's messages as OpenAI's: tool call arguments are objects there, JSON text here.
json messages_of(const json& ms) {
  if (!ms.is_array()) bad_request("messages", "'messages' must be a list");
  json out = json::array();
  for (size_t i = 0; i < ms.size(); ++i) {
    json m = ms[i];
    if (!m.is_object()) bad_request(fmt::format("messages[{}]", i), "each message must be an object");
    if (m.contains("images") && !m["images"].is_null() && !m["images"].empty())
      bad_request(fmt::format("messages[{}].images", i), "images are not supported (text models only)");
    m.erase("images");
    m.erase("thinking");
    if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
      json calls = json::array();
      for (size_t k = 0; k < m["tool_calls"].size(); ++k) {
        const json& c = m["tool_calls"][k];
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object())
          bad_request(fmt::format("messages[{}].tool_calls[{}]", i, k),
                      "a tool call needs a 'function' object");
        const json& f = c["function"];
        const json args = f.contains("arguments") ? f["arguments"] : json::object();
        calls.push_back(
            {{"id", fmt::format("call_{}_{}", i, k)},
             {"type", "function"},
             {"function",
              {{"name", f.value("name", "")}, {"arguments", args.is_string() ? args : json(args.dump())}}}});
      }
      m["tool_calls"] = calls;
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace

std::string ollama_model_name(const std::string& name) {
  return name.ends_with(":latest") ? name.substr(0, name.size() - 7) : name;
}

json openai_body_of_ollama(const json& b, bool chat, bool* completion) {
  if (!b.is_object()) throw ApiError(400, "the request body must be a JSON object");
  json out = json::object();
  if (b.contains("model")) {
    if (!b["model"].is_string()) bad_request("model", "'model' must be a string");
    out["model"] = ollama_model_name(b["model"]);
  }
  out["stream"] =
      b.contains("stream") && !b["stream"].is_null() ? b["stream"] : json(true);  // Ollama's default
  if (b.contains("keep_alive")) out["keep_alive"] = b["keep_alive"];
  add_options(b, out);
  add_format(b, out);
  // `think`: true (or a level) lets a thinking template think, false turns it off; its reasoning
  // comes back as `thinking`.
  if (b.contains("think") && !b["think"].is_null()) {
    const json& t = b["think"];
    if (!t.is_boolean() && !(t.is_string() && (t == "low" || t == "medium" || t == "high")))
      bad_request("think", "'think' must be true, false, \"low\", \"medium\" or \"high\"");
    out["chat_template_kwargs"] = {{"enable_thinking", !t.is_boolean() || t.get<bool>()}};
    if (t.is_string()) out["reasoning_effort"] = t;  // gpt-oss's reasoning level
  }
  *completion = false;
  if (chat) {
    if (!b.contains("messages")) bad_request("messages", "'messages' is required");
    out["messages"] = messages_of(b["messages"]);
    if (b.contains("tools") && !b["tools"].is_null()) out["tools"] = b["tools"];
    return out;
  }
  if (!b.contains("prompt") || !b["prompt"].is_string()) bad_request("prompt", "'prompt' must be a string");
  if (b.contains("images") && !b["images"].is_null() && !b["images"].empty())
    bad_request("images", "images are not supported (text models only)");
  if (b.value("raw", false)) {  // the prompt as it is: a completion
    *completion = true;
    out["prompt"] = b["prompt"];
    return out;
  }
  json ms = json::array();
  if (b.contains("system") && b["system"].is_string() && !b["system"].get<std::string>().empty())
    ms.push_back({{"role", "system"}, {"content", b["system"]}});
  ms.push_back({{"role", "user"}, {"content", b["prompt"]}});
  out["messages"] = ms;
  return out;
}

std::string ollama_time_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms));
}

namespace {

int64_t ns(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// The final object's counts and durations (prompt evaluation up to the first token).
void add_counts(json& j, const std::string& finish_reason, int prompt_tokens, int completion_tokens,
                const OllamaTiming& t) {
  const auto end = Clock::now();
  const auto first = t.has_first ? t.first_token : end;
  j["done"] = true;
  j["done_reason"] = finish_reason == "length" ? "length" : "stop";
  j["total_duration"] = ns(end - t.start);
  j["load_duration"] = 0;
  j["prompt_eval_count"] = prompt_tokens;
  j["prompt_eval_duration"] = ns(first - t.start);
  j["eval_count"] = completion_tokens;
  j["eval_duration"] = ns(end - first);
}

// OpenAI tool calls as Ollama's: {function: {name, arguments: object}}.
json ollama_calls(const json& calls) {
  json out = json::array();
  for (const json& c : calls) {
    json args = json::parse(c["function"]["arguments"].get<std::string>(), nullptr, false);
    if (args.is_discarded()) args = json::object();
    out.push_back({{"function", {{"name", c["function"]["name"]}, {"arguments", args}}}});
  }
  return out;
}

// A thinking template's answer split into its reasoning and the rest.
chat::ReasoningSplit split_answer(const ParsedRequest& pr, const std::string& text) {
  if (!pr.reasoning) return {"", text};
  return chat::split_reasoning(text, *pr.reasoning, pr.reasoning_open, /*partial=*/false);
}

// The message of a finished chat answer (its reasoning already taken out): content, and tool_calls
// when the answer called tools.
json chat_message(const ParsedRequest& pr, const std::string& text, const std::string& finish_reason) {
  json m = {{"role", "assistant"}, {"content", text}};
  if (!pr.tools.active()) return m;
  const ToolAnswer a = tool_answer(pr.tool_style, pr.tools, text, finish_reason);
  m["content"] = a.content.is_string() ? a.content.get<std::string>() : "";
  if (a.called()) m["tool_calls"] = ollama_calls(a.tool_calls);
  return m;
}

}  // namespace

json ollama_answer(const std::string& model, bool chat, const ParsedRequest& pr, const Collected& c,
                   const OllamaTiming& t) {
  json j = {{"model", model}, {"created_at", ollama_time_now()}};
  const chat::ReasoningSplit s = split_answer(pr, c.text);
  if (chat) {
    j["message"] = chat_message(pr, s.content, c.finish_reason);
    if (!s.reasoning.empty()) j["message"]["thinking"] = s.reasoning;
  } else {
    j["response"] = s.content;
    if (!s.reasoning.empty()) j["thinking"] = s.reasoning;
  }
  add_counts(j, c.finish_reason, c.prompt_tokens, c.completion_tokens, t);
  return j;
}

OllamaStream::OllamaStream(std::string model, bool chat, ParsedRequest pr,
                           std::shared_ptr<RequestHandle> handle)
    : model_(std::move(model)),
      chat_(chat),
      pr_(std::move(pr)),
      handle_(std::move(handle)),
      splitter_(pr_.tool_style, pr_.tools.forced()) {
  timing_.start = Clock::now();
  if (pr_.reasoning) reasoning_.emplace(*pr_.reasoning, pr_.reasoning_open);
}

void OllamaStream::line(std::string& out, json j) const {
  out += body_text(j) + "\n";
}

bool OllamaStream::next(std::string& out) {
  if (finished_) return false;
  auto e = handle_->next(kEnginePoll);
  if (!e) return true;
  if (!timing_.has_first && !e->tokens.empty()) {
    timing_.first_token = Clock::now();
    timing_.has_first = true;
  }
  completion_tokens_ += static_cast<int>(e->tokens.size());
  const bool tools = chat_ && pr_.tools.active();
  const chat::ReasoningSplit d = chat::stream_piece(reasoning_, e->text, e->finished);
  const std::string piece = tools ? splitter_.push(d.content) : d.content;
  auto object = [&](const std::string& text) {
    json j = {{"model", model_}, {"created_at", ollama_time_now()}};
    if (chat_)
      j["message"] = {{"role", "assistant"}, {"content", text}};
    else
      j["response"] = text;
    return j;
  };
  if (!d.reasoning.empty()) {  // Ollama's thinking field, beside an empty content
    json j = object("");
    if (chat_)
      j["message"]["thinking"] = d.reasoning;
    else
      j["thinking"] = d.reasoning;
    j["done"] = false;
    line(out, std::move(j));
  }
  if (!piece.empty()) {
    json j = object(piece);
    j["done"] = false;
    line(out, std::move(j));
  }
  if (!e->finished) return true;
  finished_ = true;
  if (e->finish_reason == "error") {
    line(out, {{"error", e->error}});
    return false;
  }
  json last = object("");
  if (tools) {  // the rest of the text, and the calls (Ollama sends them on a message of their own)
    json m = chat_message(pr_, splitter_.text(), e->finish_reason);
    m["content"] = unsent_content(m["content"], splitter_.released());
    last["message"] = m;
  }
  add_counts(last, e->finish_reason, e->prompt_tokens, e->completion_tokens, timing_);
  line(out, last);
  return false;
}

}  // namespace ferrum::server
