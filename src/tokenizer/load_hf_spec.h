// The pipeline sections of a Hugging Face tokenizer.json, read into TokenizerImpl; `where` names
// the file in messages. A JSON value of the wrong type throws nlohmann::json::exception (the
// loader reports it with the section being read).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer_impl.h"

namespace ferrum::tok {

void parse_hf_normalizer(const nlohmann::json& j, std::vector<NormStep>& out, const std::string& where);
void parse_hf_pre_tokenizer(const nlohmann::json& j, TokenizerImpl& t, const std::string& where);
// Post-processor: ids before / after the sequence for a single input (needs the vocabulary).
void parse_hf_post_processor(const nlohmann::json& j, TokenizerImpl& t, const std::string& where);
void parse_hf_decoder(const nlohmann::json& j, TokenizerImpl& t, const std::string& where);

}  // namespace ferrum::tok
