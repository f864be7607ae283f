// Incremental detokenizer shared by Tokenizer::decode and StreamDecoder: token pieces, the
// leading-space rule, the WordPiece joining rule and clean-up passes, all streaming (each
// clean-up pass holds back only a tail that could still start one of its patterns).
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer_impl.h"

namespace ferrum::tok {

class DecodeState {
 public:
  DecodeState(const TokenizerImpl& t, bool skip_special, bool clean_up_spaces = true,
              bool at_text_start = true);
  // Appends the text made final by this token to out.
  void push(int32_t id, std::string& out);
  // Appends everything still held back; the next token starts a new text.
  void finish(std::string& out);

 private:
  void run_passes(std::string text, bool final, std::string& out);
  const TokenizerImpl& t_;
  bool skip_;
  bool first_ = true;
  std::vector<std::string> pending_;  // one buffer per clean-up pass
  std::string scratch_;
};

// The decode-time clean-ups, all built from one table of replacements (decoder.cpp):
//  - Transformers: transformers' clean_up_tokenization (tokenizer_config.json's
//    clean_up_tokenization_spaces);
//  - WordPieceDecoder: the `cleanup` of tokenizers' WordPiece decoder, applied to each token
//    (transformers' list plus " do not" -> " don't");
//  - LlamaCpp: llama.cpp's detokenize with clean_spaces (BPE and WordPiece GGUF vocabularies).
enum class Cleanup { Transformers, WordPieceDecoder, LlamaCpp };
const std::vector<CleanupPass>& cleanup_passes(Cleanup which);

// Applies clean-up passes to a complete string.
std::string apply_cleanup(const std::vector<CleanupPass>& passes, std::string s);

}  // namespace ferrum::tok
