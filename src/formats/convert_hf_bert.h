// BERT (BertModel / sentence-transformers) Hugging Face dir -> GGUF arch "bert", laid out like
// llama.cpp's converter: WordPiece vocabulary in "phantom space" form (word-initial pieces get a
// U+2581 prefix, "##" continuations lose it), pooling type from the sentence-transformers config.
#pragma once

#include <string>

#include "ferrum/model_config.h"
#include "formats/convert_hf.h"
#include "formats/hf_config.h"

namespace ferrum::hfconv {

// `m` is hf::model_config(cfg, name) (formats/hf_model_config.h); its name is general.name.
void convert_bert(const hf::Config& cfg, const ModelConfig& m, const std::string& hf_dir,
                  const std::string& out_gguf, const HfConvertOptions& opt);

}  // namespace ferrum::hfconv
