// llama-server's helper routes, for the tools written against it: POST /tokenize (`content`, a
// string or a mix of strings and token ids; `add_special`, `parse_special`, `with_pieces`), POST
// /detokenize (`tokens`), POST /apply-template (a chat body in, the rendered `prompt` out) and
// GET /props (model, context, slots, chat template, special tokens, build).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "chat/chat_prompt.h"
#include "ferrum/tokenizer.h"

namespace ferrum::server {

nlohmann::json tokenize_answer(const nlohmann::json& body, const Tokenizer& tok);
nlohmann::json detokenize_answer(const nlohmann::json& body, const Tokenizer& tok);
nlohmann::json apply_template_answer(const nlohmann::json& body, const chat::ChatPrompt& prompt,
                                     bool special_tokens_in_messages);

// What /props reports about the served model and server.
struct PropsFacts {
  std::string model_name, model_path, chat_template, bos_token, eos_token;
  int64_t n_ctx = 0;
  int total_slots = 0;
  nlohmann::json sampling;  // the default generation settings
};
nlohmann::json props_answer(const PropsFacts& f);

}  // namespace ferrum::server
