// Hugging Face model directories: the input is split (at fuzz_util.h's separator line) into
// config.json, model.safetensors and an optional tokenizer.json. The directory is loaded
// (config checks, safetensors header, q/k/v fusion, MoE stacking, BERT through its converter),
// small models are built and run, and the directory is converted to GGUF and read back.
#include <cstdint>
#include <filesystem>

#include "ferrum/embeddings.h"
#include "ferrum/error.h"
#include "formats/convert_hf.h"
#include "formats/gguf.h"
#include "fuzz_model.h"
#include "fuzz_util.h"
#include "loading/loader.h"

using namespace ferrum;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_parts(data, size, 3);
  static const char* const kNames[] = {"hf/config.json", "hf/model.safetensors", "hf/tokenizer.json"};
  std::filesystem::create_directories(fuzz::scratch_dir() + "/hf");
  for (size_t i = 0; i < 3; ++i) {
    if (i < parts.size()) {
      fuzz::write_file(kNames[i], parts[i]);
    } else {
      fuzz::remove_file(kNames[i]);
    }
  }
  const std::string dir = fuzz::scratch_dir() + "/hf";
  bool small = false;
  try {
    HfModel m = load_hf_dir(dir);
    small = fuzz::small_enough(m.config, m.weights);
    if (m.config.arch == Arch::Bert) {
      if (small) {
        LoadedModel b = load_model(dir, fuzz::small_options());
        (void)embeddings(*b.model, {{0, 1}}, EmbedOptions{Pooling::Cls, false, {}});
      };
    } else {
      fuzz::exercise_decoder(std::move(m.config), std::move(m.weights));
    }
  } catch (const Error&) {
  }
  if (!small) return 0;
  try {
    const std::string out = fuzz::scratch_dir() + "/hf-converted.gguf";
    convert_hf_to_gguf(dir, out);
    auto g = gguf::File::open(out);
    (void)config_from_gguf(*g);
    if (g->has("tokenizer.ggml.model")) fuzz::exercise_tokenizer(*Tokenizer::from_gguf(*g), "");
  } catch (const Error&) {
  }
  return 0;
}
