// Tokenizer from a llama2.c tokenizer.bin: int32 max_token_length, then per token
// {float score, int32 len, len bytes} until end of file. Pieces spell '▁' as ' ' and ids 1/2 are
// "\n<s>\n" / "\n</s>\n"; they are mapped to the SentencePiece form llama.cpp's converter
// produces (<unk>/<s>/</s>, <0xXX> byte tokens), so encoding follows the GGUF "llama" path.
#include <cstring>

#include "core/fail.h"
#include "tokenizer/load_steps.h"
#include "tokenizer/tokenizer_impl.h"

namespace ferrum::tok {

std::unique_ptr<TokenizerImpl> load_llama2c(const std::string& path) {
  const std::string data = read_file(path, "llama2.c tokenizer");
  if (data.size() < 4) fail("{}: too short for a llama2.c tokenizer header (4 bytes)", path);
  int32_t max_len;
  std::memcpy(&max_len, data.data(), 4);
  if (max_len <= 0 || max_len > (1 << 20)) {
    fail("{}: max_token_length {} at offset 0 is implausible", path, max_len);
  }

  auto t = std::make_unique<TokenizerImpl>();
  set_llamacpp_spm_defaults(*t);

  size_t off = 4;
  while (off < data.size()) {
    if (off + 8 > data.size()) {
      fail("{}: truncated token record {} at offset {}", path, t->text.size(), off);
    }
    float score;
    int32_t len;
    std::memcpy(&score, data.data() + off, 4);
    std::memcpy(&len, data.data() + off + 4, 4);
    if (len < 0 || len > max_len || off + 8 + size_t(len) > data.size()) {
      fail("{}: token {} at offset {} has length {} (max_token_length {}, file size {})", path,
           t->text.size(), off, len, max_len, data.size());
    }
    std::string s(data.data() + off + 8, static_cast<size_t>(len));
    off += 8 + static_cast<size_t>(len);
    const size_t id = t->text.size();
    TokenType ty = TokenType::Normal;
    if (id == 0) {
      s = "<unk>", ty = TokenType::Unknown;
    } else if (id == 1) {
      s = "<s>", ty = TokenType::Control;
    } else if (id == 2) {
      s = "</s>", ty = TokenType::Control;
    } else if (is_byte_token_text(s)) {
      ty = TokenType::Byte;
    } else {
      std::string esc;
      for (char c : s) {
        if (c == ' ') {
          esc += "\xE2\x96\x81";
        } else {
          esc += c;
        }
      }
      s.swap(esc);
    }
    t->text.push_back(std::move(s));
    t->score.push_back(score);
    t->type.push_back(ty);
  }
  if (t->text.size() < 3) fail("{}: only {} tokens; expected at least 3", path, t->text.size());
  t->finalize();
  return t;
}

}  // namespace ferrum::tok
