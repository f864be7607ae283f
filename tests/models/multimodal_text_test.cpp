// The text model of a vision-language checkpoint (Gemma3ForConditionalGeneration and the like):
// config.json wraps the text model's config in text_config and the tensors carry a language_model
// prefix, in either of transformers' layouts, next to a vision tower that ferrum does not run. Made
// here from the Gemma 3 family fixture (same weights, renamed), so the logits must be the fixture's
// bit for bit, loaded directly and converted to GGUF.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ferrum/sampler.h"
#include "formats/convert_hf.h"
#include "loading/loader.h"
#include "model_test_util.h"
#include "test_util.h"

namespace ferrum::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The fixture's safetensors with every tensor renamed by `rename`, and a small vision tensor added.
void write_renamed(const std::string& from, const std::string& to,
                   std::string (*rename)(const std::string&)) {
  const std::string bytes = read_bytes(from);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const json header = json::parse(bytes.substr(8, n));
  std::string data = bytes.substr(8 + n);
  json out = json::object();
  for (const auto& [name, info] : header.items()) out[name == "__metadata__" ? name : rename(name)] = info;
  const uint64_t at = data.size();
  data.append(16, '\0');  // 4 F32 zeros
  out["vision_tower.vision_model.embeddings.patch_embedding.weight"] = {
      {"dtype", "F32"}, {"shape", {2, 2}}, {"data_offsets", {at, at + 16}}};
  const std::string h = out.dump();
  const uint64_t hn = h.size();
  std::ofstream f(to, std::ios::binary);
  f.write(reinterpret_cast<const char*>(&hn), 8);
  f << h << data;
}

// A wrapped copy of the Gemma 3 fixture; `layout`: transformers' older (language_model.model.*) or
// newer (model.language_model.*) tensor names.
std::string wrapped_gemma3(bool newer) {
  const std::string src = data_dir("families/gemma3/hf");
  const std::string dir = temp_dir();
  for (const char* f : {"tokenizer.json", "generation_config.json"})
    fs::copy_file(src + "/" + f, dir + "/" + f);
  // The chat template in chat_template.json (as transformers saves a processor's), not in
  // tokenizer_config.json.
  json tc = json::parse(read_bytes(src + "/tokenizer_config.json"));
  tc["chat_template"] = "{% for m in messages %}<turn>{{ m['content'] }}</turn>{% endfor %}";
  std::ofstream(dir + "/chat_template.json") << json{{"chat_template", tc["chat_template"]}}.dump();
  tc.erase("chat_template");
  std::ofstream(dir + "/tokenizer_config.json") << tc.dump();
  json text = json::parse(read_bytes(src + "/config.json"));
  text.erase("architectures");
  json cfg = {{"architectures", {"Gemma3ForConditionalGeneration"}},
              {"model_type", "gemma3"},
              {"text_config", text},
              {"vision_config", {{"model_type", "siglip_vision_model"}, {"hidden_size", 16}}},
              {"mm_tokens_per_image", 256},
              {"eos_token_id", text["eos_token_id"]}};
  cfg["text_config"].erase("eos_token_id");  // the wrapper's is used
  std::ofstream(dir + "/config.json") << cfg.dump(2);
  write_renamed(src + "/model.safetensors", dir + "/model.safetensors",
                newer ? +[](const std::string& n) {
                  return n.starts_with("model.") ? "model.language_model." + n.substr(6) : "language_model." + n;
                }
                      : +[](const std::string& n) { return "language_model." + n; });
  return dir;
}

std::vector<float> last_logits(const std::string& path) {
  LoadedModel lm = load_model(path);
  const std::vector<int32_t> ids = prompt_ids("gemma3", "p3");
  auto kv = KvCache::for_model(*lm.model, KvOptions{});
  std::vector<float> logits(lm.model->config().n_vocab);
  lm.model->prefill(*kv, 0, ids, logits.data());
  return logits;
}

TEST(MultimodalText, GemmaConditionalGenerationRunsItsTextModel) {
  const std::vector<float> want = last_logits(data_dir("families/gemma3/hf"));
  for (bool newer : {false, true}) {
    const std::string dir = wrapped_gemma3(newer);
    EXPECT_EQ(last_logits(dir), want) << (newer ? "model.language_model.*" : "language_model.model.*");
    EXPECT_NE(load_model(dir).tokenizer->chat_template().find("<turn>"), std::string::npos);
    // `ferrum convert` keeps the text model and drops the vision tower.
    const std::string gguf = dir + "/text.gguf";
    convert_hf_to_gguf(dir, gguf, HfConvertOptions{});
    const std::vector<float> conv = last_logits(gguf);
    ASSERT_EQ(conv.size(), want.size());
    EXPECT_EQ(argmax(conv.data(), static_cast<int>(conv.size())),
              argmax(want.data(), static_cast<int>(want.size())));
  }
}

}  // namespace
}  // namespace ferrum::test
