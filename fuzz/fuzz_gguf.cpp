// GGUF files: the reader (header, metadata, tensor infos), `ferrum info`'s JSON, the tokenizer
// from tokenizer.ggml.* (encode/decode, chat template), the model config and weights, and for
// small models the model itself (a BERT encoder or a decoder, run on a few tokens).
#include <cstdint>

#include "ferrum/embeddings.h"
#include "ferrum/error.h"
#include "formats/gguf.h"
#include "fuzz_model.h"
#include "fuzz_util.h"
#include "loading/loader.h"

using namespace ferrum;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      fuzz::write_file("input.gguf", std::string_view(reinterpret_cast<const char*>(data), size));
  std::shared_ptr<const gguf::File> f;
  try {
    f = gguf::File::open(path);
  } catch (const Error&) {
    return 0;
  }
  (void)f->metadata_json(8).dump();
  for (const std::string& k : f->keys()) (void)f->raw_value(k);
  try {
    fuzz::exercise_tokenizer(*Tokenizer::from_gguf(*f), "");
  } catch (const Error&) {
  }
  try {
    ModelConfig cfg = config_from_gguf(*f);
    WeightSet w = weights_from_gguf(f);
    if (cfg.arch == Arch::Bert) {
      if (!fuzz::small_enough(cfg, w)) return 0;
      LoadedModel b = load_model(path, fuzz::small_options());
      (void)embeddings(*b.model, {{0, 1}, {0}}, EmbedOptions{Pooling::Mean, true, {}});
    } else {
      fuzz::exercise_decoder(std::move(cfg), std::move(w));
    }
  } catch (const Error&) {
  }
  return 0;
}
