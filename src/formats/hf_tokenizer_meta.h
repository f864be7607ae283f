// Hugging Face tokenizer.json / tokenizer_config.json -> GGUF tokenizer metadata
// (tokenizer.ggml.*), the way llama.cpp's converter lays it out:
//  * SentencePiece-style vocabularies (BPE with byte_fallback, or Unigram) -> model "llama" with
//    tokens, scores and token types;
//  * byte-level BPE -> model "gpt2" with tokens, token types and merges ("a b").
// Special token ids come from tokenizer_config.json (by token text), else config.json.
#pragma once

#include <cstdint>
#include <string>

#include "formats/gguf_writer.h"
#include "formats/hf_config.h"

namespace ferrum::hf {

// A SentencePiece byte-fallback piece: "<0xAB>" (two hex digits).
bool is_byte_token(const std::string& s);

// GGUF token types (llama.cpp llama_token_type).
enum TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};

// Adds tokenizer.ggml.* keys read from dir/tokenizer.json (+ tokenizer_config.json). n_vocab is
// the embedding row count; missing ids are padded with "[PAD<i>]" UNUSED tokens as llama.cpp does.
// Returns false (writing nothing) when dir has no tokenizer.json.
bool add_tokenizer_metadata(gguf::Writer& w, const std::string& dir, const Config& cfg, int64_t n_vocab);

}  // namespace ferrum::hf
