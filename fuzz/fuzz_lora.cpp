// LoRA adapters: an input starting with "GGUF" is a GGUF LoRA file; any other is split (at
// fuzz_util.h's separator line) into adapter_config.json and adapter_model.safetensors of a PEFT
// directory. The adapter is loaded for the tiny llama fixture (shape, target, layer, rank and
// architecture checks, Q/K permutation) and, when it loads, used for a 3-token prefill next to a
// sequence without it.
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "ferrum/error.h"
#include "ferrum/lora.h"
#include "fuzz_model.h"
#include "fuzz_util.h"
#include "loading/loader.h"

using namespace ferrum;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static LoadedModel lm =
      load_model(FERRUM_SOURCE_DIR "/tests/data/models/llama/gguf/llama-Q8_0.gguf", fuzz::small_options());
  std::string path;
  if (size >= 4 && std::memcmp(data, "GGUF", 4) == 0) {
    path = fuzz::write_file("lora.gguf", std::string_view(reinterpret_cast<const char*>(data), size));
  } else {
    const auto parts = fuzz::split_parts(data, size, 2);
    std::filesystem::create_directories(fuzz::scratch_dir() + "/peft");
    static const char* const kNames[] = {"peft/adapter_config.json", "peft/adapter_model.safetensors"};
    for (size_t i = 0; i < 2; ++i) {
      if (i < parts.size())
        fuzz::write_file(kNames[i], parts[i]);
      else
        fuzz::remove_file(kNames[i]);
    }
    path = fuzz::scratch_dir() + "/peft";
  }
  try {
    const LoraSpec spec{path, 0.5f};
    auto adapter = load_lora(*lm.model, std::span(&spec, 1));
    auto kv = KvCache::for_model(*lm.model, KvOptions{KvLayout::Paged, KvType::F32, 32, 64, false});
    const int32_t ids[] = {1, 2, 3};
    SeqInput in[2];
    in[0].seq = 0;
    in[0].tokens = ids;
    in[0].lora = adapter.get();
    in[1].seq = 1;
    in[1].tokens = ids;
    std::vector<float> logits(2 * lm.model->config().n_vocab);
    lm.model->forward(*kv, in, ForwardOut{logits.data(), nullptr});
  } catch (const Error&) {
  }
  return 0;
}
