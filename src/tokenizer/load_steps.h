// Steps the tokenizer loaders (GGUF, Hugging Face directory, llama2.c) share; each loader is its
// spec (which fields it reads, in what order) calling these and TokenizerImpl::finalize.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer_impl.h"

namespace ferrum::tok {

// The whole file; fails with "<path>: cannot open[ <what>]".
std::string read_file(const std::string& path, std::string_view what = {});

// llama.cpp's SentencePiece vocabulary ("llama" GGUF model, llama2.c): <unk>=0, <s>=1, </s>=2,
// a space prefix, BOS added, one leading space dropped when decoding.
void set_llamacpp_spm_defaults(TokenizerImpl& t);

// Vocabulary text shaped like a SentencePiece byte token, "<0xAB>" (the digits unchecked).
inline bool is_byte_token_text(std::string_view s) {
  return s.size() == 6 && s.substr(0, 3) == "<0x" && s[5] == '>';
}

// A merges entry "a b": split at the first space after the first byte (so a may be " ").
// False if there is none.
bool split_merge(std::string_view m, std::string_view& a, std::string_view& b);
// Records the merge (a, b) -> a+b with its rank; false (nothing recorded) if a, b or a+b is not in
// the vocabulary. Call after finalize() (it looks texts up).
bool add_merge(TokenizerImpl& t, std::string_view a, std::string_view b, int32_t rank);

}  // namespace ferrum::tok
