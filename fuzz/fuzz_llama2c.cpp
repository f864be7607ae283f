// llama2.c checkpoints: the input is split (at fuzz_util.h's separator line) into the
// checkpoint and its tokenizer.bin. Both are read directly, converted to GGUF as `ferrum run`
// does, and the result is loaded and, when small, run.
#include <cstdint>

#include "ferrum/error.h"
#include "formats/convert_llama2c.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"
#include "fuzz_model.h"
#include "fuzz_util.h"
#include "loading/loader.h"

using namespace ferrum;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_parts(data, size, 2);
  const std::string ckpt = fuzz::write_file("model.bin", parts[0]);
  const std::string tok = fuzz::write_file("tokenizer.bin", parts.size() > 1 ? parts[1] : std::string_view());
  try {
    fuzz::exercise_tokenizer(*Tokenizer::from_llama2c(tok), "");
  } catch (const Error&) {
  }
  try {
    (void)llama2c::read_tokenizer(tok, std::nullopt);
  } catch (const Error&) {
  }
  try {
    (void)llama2c::Checkpoint::open(ckpt);
    const std::string out = fuzz::scratch_dir() + "/llama2c.gguf";
    convert_llama2c_to_gguf(ckpt, tok, out);
    auto g = gguf::File::open(out);
    ModelConfig cfg = config_from_gguf(*g);
    fuzz::exercise_tokenizer(*Tokenizer::from_gguf(*g), "");
    fuzz::exercise_decoder(std::move(cfg), weights_from_gguf(g));
  } catch (const Error&) {
  }
  return 0;
}
