// Encoders: a BERT model and its WordPiece tokenizer from a GGUF file or a Hugging Face
// directory (converted to a temporary GGUF by ferrum's converter, so both go through one path).
#include <unistd.h>

#include <filesystem>

#include "core/fail.h"
#include "formats/convert_hf_bert.h"
#include "formats/hf_config.h"
#include "formats/hf_model_config.h"
#include "formats/hf_tensor_sink.h"
#include "loading/loader.h"

namespace fs = std::filesystem;

namespace ferrum {

namespace {

// llama.cpp's pooling type ids (bert.pooling_type): 0 none, 1 mean, 2 cls, 3 last.
Pooling pooling_from_gguf(const gguf::File& f) {
  const uint64_t p = f.find_uint("bert.pooling_type").value_or(1);
  switch (p) {
    case 0:  // none (per-token output in llama.cpp): mean is the sensible sentence default
    case 1:
      return Pooling::Mean;
    case 2:
      return Pooling::Cls;
    case 3:
      return Pooling::Last;
  }
  fail("{}: bert.pooling_type {} is not supported (0 none, 1 mean, 2 cls, 3 last)", f.path(), p);
}

// sentence-transformers appends a Normalize module when its embeddings are L2-normalized.
bool hf_normalizes(const std::string& dir) {
  const fs::path modules = fs::path(dir) / "modules.json";
  if (!fs::exists(modules)) return false;
  const nlohmann::json mods = hf::read_json_file(modules.string());
  if (!mods.is_array()) fail("{}: expected a JSON list of modules", modules.string());
  for (const auto& m : mods)
    if (m.is_object() && m.value("type", "") == "sentence_transformers.models.Normalize") return true;
  return false;
}

}  // namespace

std::shared_ptr<const gguf::File> bert_hf_as_gguf(const std::string& dir) {
  const hf::Config cfg = hf::Config::load(dir);
  const ModelConfig m = hf::model_config(cfg, hfconv::dir_name(dir));
  if (m.arch != Arch::Bert) fail("{}: not a BERT model (architecture '{}')", dir, cfg.architecture());
  const std::string tmp = (fs::temp_directory_path() /
                           fmt::format("ferrum-bert-{}-{}.gguf", getpid(), reinterpret_cast<uintptr_t>(&cfg)))
                              .string();
  HfConvertOptions o;
  o.name = m.name;
  std::shared_ptr<const gguf::File> g;
  try {
    hfconv::convert_bert(cfg, m, dir, tmp, o);
    g = gguf::File::open(tmp);
  } catch (...) {
    fs::remove(tmp);
    throw;
  }
  fs::remove(tmp);
  return g;
}

namespace {
std::shared_ptr<const gguf::File> open_bert_gguf(const std::string& path, bool& normalize) {
  const ModelFormat fmt = detect_format(path);
  normalize = false;
  if (fmt == ModelFormat::HuggingFace) {
    normalize = hf_normalizes(path);
    return bert_hf_as_gguf(path);
  }
  if (fmt != ModelFormat::Gguf)
    fail("{}: a BERT model must be a GGUF file or a Hugging Face directory", path);
  return gguf::File::open(path);
}
}  // namespace

BertDefaults bert_defaults(const std::string& path) {
  BertDefaults d;
  auto g = open_bert_gguf(path, d.normalize);
  d.pooling = pooling_from_gguf(*g);
  return d;
}

LoadedModel load_encoder(const std::string& path, const ModelOptions& opts) {
  bool normalize = false;
  auto g = open_bert_gguf(path, normalize);
  ModelConfig cfg = config_from_gguf(*g);
  if (cfg.arch != Arch::Bert)
    fail("{}: architecture '{}' is not a BERT encoder (embeddings need arch bert)", path,
         arch_name(cfg.arch));
  cfg.pooling = pooling_from_gguf(*g);
  cfg.normalize = normalize;
  LoadedModel lm;
  lm.path = path;
  lm.format = detect_format(path);
  lm.tokenizer = Tokenizer::from_gguf(*g);
  lm.model = create_model(std::move(cfg), weights_from_gguf(g), opts);
  return lm;
}

}  // namespace ferrum
