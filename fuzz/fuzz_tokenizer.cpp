// Hugging Face tokenizers: the input is split (at fuzz_util.h's separator line) into
// tokenizer.json, tokenizer_config.json and a text to encode. The tokenizer is loaded (vocab,
// added tokens, normalizer, pre-tokenizer, post-processor, decoder, merges, special tokens,
// chat template), then used to encode and decode.
#include <cstdint>
#include <filesystem>

#include "ferrum/error.h"
#include "ferrum/tokenizer.h"
#include "fuzz_model.h"
#include "fuzz_util.h"

using namespace ferrum;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_parts(data, size, 3);
  std::filesystem::create_directories(fuzz::scratch_dir() + "/tok");
  fuzz::write_file("tok/tokenizer.json", parts[0]);
  if (parts.size() > 1) {
    fuzz::write_file("tok/tokenizer_config.json", parts[1]);
  } else {
    fuzz::remove_file("tok/tokenizer_config.json");
  }
  std::unique_ptr<Tokenizer> tok;
  try {
    tok = Tokenizer::from_hf_dir(fuzz::scratch_dir() + "/tok");
  } catch (const Error&) {
    return 0;
  }
  fuzz::exercise_tokenizer(*tok, parts.size() > 2 ? parts[2] : std::string_view());
  return 0;
}
