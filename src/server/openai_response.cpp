#include "server/openai_response.h"

#include <chrono>

#include "server/api_error.h"
#include "server/stream_answer.h"
#include "server/tool_answer.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;

json token_bytes(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(c);
  return b;
}

json usage_json(int prompt, int completion, int cached) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

json chat_logprobs(const Tokenizer& tok, const std::vector<TokenLogprob>& lps) {
  json content = json::array();
  for (const auto& l : lps) {
    const std::string piece = tok.token_to_piece(l.id);
    json top = json::array();
    for (const auto& [id, lp] : l.top) {
      const std::string p = tok.token_to_piece(id);
      top.push_back({{"token", p}, {"logprob", lp}, {"bytes", token_bytes(p)}});
    }
    content.push_back(
        {{"token", piece}, {"logprob", l.logprob}, {"bytes", token_bytes(piece)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

json completion_logprobs(const Tokenizer& tok, const std::vector<TokenLogprob>& lps, size_t& text_offset) {
  json tokens = json::array(), lp = json::array(), top = json::array(), offs = json::array();
  for (const auto& l : lps) {
    const std::string piece = tok.token_to_piece(l.id);
    tokens.push_back(piece);
    lp.push_back(l.logprob);
    json t = json::object();
    for (const auto& [id, v] : l.top) t[tok.token_to_piece(id)] = v;
    top.push_back(t);
    offs.push_back(text_offset);
    text_offset += piece.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", lp}, {"top_logprobs", top}, {"text_offset", offs}};
}

}  // namespace

void Collected::add(RequestEvent& e) {
  text += e.text;
  for (auto& l : e.logprobs) logprobs.push_back(std::move(l));
  if (e.finished) {
    finish_reason = e.finish_reason;
    error = e.error;
    stop_string = e.stop_string;
    prompt_tokens = e.prompt_tokens;
    completion_tokens = e.completion_tokens;
    cached_tokens = e.cached_tokens;
  }
}

std::string answer_content(const ParsedRequest& pr, const std::string& text, json& message) {
  if (!pr.reasoning) return text;
  chat::ReasoningSplit s = chat::split_reasoning(text, *pr.reasoning, pr.reasoning_open, /*partial=*/false);
  if (!s.reasoning.empty()) message["reasoning_content"] = std::move(s.reasoning);
  return std::move(s.content);
}

json full_answer(const AnswerHeader& h, const ParsedRequest& pr, const Tokenizer& tok, const Collected& c) {
  json choice = {{"index", 0}, {"finish_reason", c.finish_reason}, {"logprobs", nullptr}};
  if (h.chat) {
    json& message = choice["message"] = {{"role", "assistant"}};
    const std::string content = answer_content(pr, c.text, message);
    message["content"] = content;
    if (pr.tools.active()) {
      const ToolAnswer a = tool_answer(pr.tool_style, pr.tools, content, c.finish_reason);
      choice["message"]["content"] = a.content;
      if (a.called()) choice["message"]["tool_calls"] = a.tool_calls;
      choice["finish_reason"] = tool_finish_reason(a, c.finish_reason);
    }
    if (pr.logprobs) choice["logprobs"] = chat_logprobs(tok, c.logprobs);
  } else {
    choice["text"] = c.text;
    size_t off = 0;
    if (pr.logprobs) choice["logprobs"] = completion_logprobs(tok, c.logprobs, off);
  }
  return {{"id", h.id},
          {"object", h.chat ? "chat.completion" : "text_completion"},
          {"created", h.created},
          {"model", h.model},
          {"system_fingerprint", "ferrum"},
          {"choices", json::array({choice})},
          {"usage", usage_json(c.prompt_tokens, c.completion_tokens, c.cached_tokens)}};
}

SseAnswer::SseAnswer(AnswerHeader h, ParsedRequest pr, const Tokenizer& tok,
                     std::shared_ptr<RequestHandle> handle)
    : h_(std::move(h)),
      pr_(std::move(pr)),
      tok_(tok),
      handle_(std::move(handle)),
      splitter_(pr_.tool_style, pr_.tools.forced()) {
  if (h_.chat && pr_.reasoning) reasoning_.emplace(*pr_.reasoning, pr_.reasoning_open);
}

// Moves the event's reasoning into a delta.reasoning_content chunk (with the step's logprobs),
// leaving its content in e.text.
void SseAnswer::reasoning_chunk(std::string& out, RequestEvent& e) {
  chat::ReasoningSplit d = chat::stream_piece(reasoning_, e.text, e.finished);
  e.text = std::move(d.content);
  if (d.reasoning.empty()) return;
  json c = {{"index", 0},
            {"delta", {{"reasoning_content", d.reasoning}}},
            {"logprobs", nullptr},
            {"finish_reason", nullptr}};
  if (pr_.logprobs && !e.logprobs.empty()) c["logprobs"] = chat_logprobs(tok_, e.logprobs);
  e.logprobs.clear();
  chunk(out, json::array({c}), nullptr);
}

void SseAnswer::chunk(std::string& out, json choices, json usage) const {
  json j = {{"id", h_.id},
            {"object", h_.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", h_.created},
            {"model", h_.model},
            {"system_fingerprint", "ferrum"},
            {"choices", std::move(choices)}};
  if (pr_.include_usage) j["usage"] = std::move(usage);
  out += "data: " + body_text(j) + "\n\n";
}

bool SseAnswer::next(std::string& out) {
  if (finished_) return false;
  if (h_.chat && !started_) {
    started_ = true;
    json c = {{"index", 0},
              {"delta", {{"role", "assistant"}, {"content", ""}}},
              {"logprobs", nullptr},
              {"finish_reason", nullptr}};
    chunk(out, json::array({c}), nullptr);
    return true;
  }
  auto e = handle_->next(kEnginePoll);
  if (!e) return true;
  completion_tokens_ += static_cast<int>(e->tokens.size());
  if (reasoning_) reasoning_chunk(out, *e);
  if (h_.chat && pr_.tools.active()) return tool_chunks(out, *e);
  if (e->finished && e->finish_reason == "error")
    out += "data: " + body_text(error_json(e->error, "server_error", "", "")) + "\n\n";
  if (!e->text.empty() || !e->logprobs.empty() || e->finished) {
    json c = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
    if (h_.chat) {
      c["delta"] = e->text.empty() && e->finished ? json::object() : json{{"content", e->text}};
      if (pr_.logprobs && !e->logprobs.empty()) c["logprobs"] = chat_logprobs(tok_, e->logprobs);
    } else {
      c["text"] = e->text;
      if (pr_.logprobs && !e->logprobs.empty())
        c["logprobs"] = completion_logprobs(tok_, e->logprobs, text_offset_);
    }
    if (e->finished && e->finish_reason != "error" && e->finish_reason != "cancelled")
      c["finish_reason"] = e->finish_reason;
    chunk(out, json::array({c}), nullptr);
  }
  if (!e->finished) return true;
  finished_ = true;
  if (pr_.include_usage)
    chunk(out, json::array(), usage_json(e->prompt_tokens, e->completion_tokens, e->cached_tokens));
  out += "data: [DONE]\n\n";
  return false;
}

// With tools, content is sent as far as it cannot be the start of a call (chat/tool_stream.h);
// at the end the answer is parsed and its calls sent as delta.tool_calls chunks, one per call.
bool SseAnswer::tool_chunks(std::string& out, RequestEvent& e) {
  for (auto& l : e.logprobs) held_logprobs_.push_back(std::move(l));
  auto delta_chunk = [&](json delta) {
    json c = {{"index", 0}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
    if (pr_.logprobs && !held_logprobs_.empty()) {
      c["logprobs"] = chat_logprobs(tok_, held_logprobs_);
      held_logprobs_.clear();
    }
    chunk(out, json::array({c}), nullptr);
  };
  const std::string content = splitter_.push(e.text);
  if (!content.empty()) delta_chunk({{"content", content}});
  if (!e.finished) return true;
  if (e.finish_reason == "error")
    out += "data: " + body_text(error_json(e.error, "server_error", "", "")) + "\n\n";
  const ToolAnswer a = tool_answer(pr_.tool_style, pr_.tools, splitter_.text(), e.finish_reason);
  if (const std::string rest = unsent_content(a.content, splitter_.released()); !rest.empty())
    delta_chunk({{"content", rest}});
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    json call = a.tool_calls[i];
    call["index"] = i;
    delta_chunk({{"tool_calls", json::array({call})}});
  }
  json last = {{"index", 0}, {"delta", json::object()}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  if (pr_.logprobs && !held_logprobs_.empty()) last["logprobs"] = chat_logprobs(tok_, held_logprobs_);
  if (e.finish_reason != "error" && e.finish_reason != "cancelled")
    last["finish_reason"] = tool_finish_reason(a, e.finish_reason);
  chunk(out, json::array({last}), nullptr);
  finished_ = true;
  if (pr_.include_usage)
    chunk(out, json::array(), usage_json(e.prompt_tokens, e.completion_tokens, e.cached_tokens));
  out += "data: [DONE]\n\n";
  return false;
}

}  // namespace ferrum::server
