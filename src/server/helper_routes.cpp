#include "server/helper_routes.h"

#include "chat/tool_prompt.h"
#include "chat/tools.h"
#include "core/utf8.h"
#include "ferrum/version.h"
#include "server/api_error.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;

bool flag(const json& b, const char* k, bool dflt) {
  if (!b.contains(k) || b[k].is_null()) return dflt;
  if (!b[k].is_boolean()) bad_request(k, fmt::format("'{}' must be a boolean", k));
  return b[k].get<bool>();
}

int32_t token_id(const json& v, const Tokenizer& tok, const char* param) {
  if (!v.is_number_integer()) bad_request(param, fmt::format("'{}' must hold token ids (integers)", param));
  const int64_t id = v.get<int64_t>();
  if (id < 0 || id >= tok.n_vocab())
    bad_request(param, fmt::format("token {} is outside the vocabulary [0, {})", id, tok.n_vocab()));
  return static_cast<int32_t>(id);
}

// A piece as text when it is valid UTF-8, else its bytes (as llama-server answers).
json piece_json(const std::string& piece) {
  if (utf8::valid(piece)) return piece;
  json bytes = json::array();
  for (unsigned char c : piece) bytes.push_back(c);
  return bytes;
}

}  // namespace

json tokenize_answer(const json& b, const Tokenizer& tok) {
  if (!b.is_object()) bad_request("", "the request body must be a JSON object");
  const bool add_special = flag(b, "add_special", false);
  const bool parse_special = flag(b, "parse_special", true);
  const bool with_pieces = flag(b, "with_pieces", false);
  std::vector<int32_t> ids;
  if (b.contains("content")) {
    const json& c = b["content"];
    auto add_text = [&](const std::string& s, bool first) {
      const auto t = tok.encode(s, add_special && first, parse_special);
      ids.insert(ids.end(), t.begin(), t.end());
    };
    if (c.is_string()) {
      add_text(c.get<std::string>(), true);
    } else if (c.is_array()) {  // strings and token ids mixed
      for (size_t i = 0; i < c.size(); ++i)
        if (c[i].is_string())
          add_text(c[i].get<std::string>(), i == 0);
        else
          ids.push_back(token_id(c[i], tok, "content"));
    } else {
      bad_request("content", "'content' must be a string or an array of strings and token ids");
    }
  }
  json tokens = json::array();
  for (int32_t id : ids)
    if (with_pieces)
      tokens.push_back({{"id", id}, {"piece", piece_json(tok.token_to_piece(id))}});
    else
      tokens.push_back(id);
  return {{"tokens", tokens}};
}

json detokenize_answer(const json& b, const Tokenizer& tok) {
  if (!b.is_object()) bad_request("", "the request body must be a JSON object");
  std::vector<int32_t> ids;
  if (b.contains("tokens")) {
    if (!b["tokens"].is_array()) bad_request("tokens", "'tokens' must be an array of token ids");
    for (const json& v : b["tokens"]) ids.push_back(token_id(v, tok, "tokens"));
  }
  return {{"content", tok.decode(ids)}};
}

json apply_template_answer(const json& b, const chat::ChatPrompt& prompt, bool special_tokens_in_messages) {
  if (!b.is_object()) bad_request("", "the request body must be a JSON object");
  if (!b.contains("messages")) bad_request("messages", "'messages' is required");
  const json kwargs = b.contains("chat_template_kwargs") ? b["chat_template_kwargs"] : json();
  if (!kwargs.is_null() && !kwargs.is_object())
    bad_request("chat_template_kwargs", "'chat_template_kwargs' must be an object");
  try {
    const chat::ToolRequest tools = chat::parse_tool_request(b);
    const chat::ToolPrompt tp =
        chat::tool_prompt(prompt.tool_style(), b["messages"], tools, prompt.system_role());
    return {{"prompt", prompt.render(tp.messages, tp.tools, kwargs, special_tokens_in_messages).text}};
  } catch (const chat::ChatError& e) {
    bad_request(e.param, e.what());
  }
}

json props_answer(const PropsFacts& f) {
  return {{"default_generation_settings", {{"n_ctx", f.n_ctx}, {"params", f.sampling}}},
          {"total_slots", f.total_slots},
          {"model_alias", f.model_name},
          {"model_path", f.model_path},
          {"modalities", {{"vision", false}, {"audio", false}}},
          {"chat_template", f.chat_template},
          {"bos_token", f.bos_token},
          {"eos_token", f.eos_token},
          {"build_info", fmt::format("ferrum {}", FERRUM_VERSION_STRING)}};
}

}  // namespace ferrum::server
