// The public loader (ferrum/loader.h): format detection, then GGUF, Hugging Face directory or
// llama2.c checkpoint into a config, weights and a tokenizer.
#include "loading/loader.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/fail.h"
#include "formats/convert_llama2c.h"

namespace fs = std::filesystem;

namespace ferrum {

const char* format_name(ModelFormat f) {
  switch (f) {
    case ModelFormat::Gguf:
      return "gguf";
    case ModelFormat::HuggingFace:
      return "huggingface";
    case ModelFormat::Llama2c:
      return "llama2.c";
  }
  return "?";
}

ModelFormat detect_format(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("{}: no such file or directory", path);
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(fs::path(path) / "config.json", ec))
      fail("{}: a model directory needs a config.json (Hugging Face layout)", path);
    return ModelFormat::HuggingFace;
  }
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {0, 0, 0, 0};
  f.read(magic, 4);
  if (f.gcount() == 4 && std::string(magic, 4) == "GGUF") return ModelFormat::Gguf;
  // A .gguf file without the magic is a corrupt GGUF (the reader names what is wrong), not a checkpoint.
  if (fs::path(path).extension() == ".gguf") return ModelFormat::Gguf;
  return ModelFormat::Llama2c;
}

std::string llama2c_tokenizer_path(const std::string& checkpoint, const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  const fs::path dir = fs::path(checkpoint).parent_path();
  for (const char* name : {"tokenizer.bin", "tok512.bin", "tok32000.bin"}) {
    fs::path p = dir / name;
    if (fs::exists(p)) return p.string();
  }
  fail("{}: looks like a llama2.c checkpoint, but no tokenizer.bin was found beside it (pass --tokenizer)",
       checkpoint);
}

namespace {

// llama2.c checkpoints are converted to a temporary GGUF (ferrum's own converter) and loaded
// from there; the file is unlinked at once and lives on in the mapping.
std::shared_ptr<const gguf::File> open_llama2c_as_gguf(const std::string& path, const std::string& tok) {
  const std::string tmp = (fs::temp_directory_path() /
                           fmt::format("ferrum-l2c-{}-{}.gguf", getpid(), reinterpret_cast<uintptr_t>(&path)))
                              .string();
  convert_llama2c_to_gguf(path, llama2c_tokenizer_path(path, tok), tmp);
  auto f = gguf::File::open(tmp);
  fs::remove(tmp);
  return f;
}

}  // namespace

WeightSet weights_from_gguf(std::shared_ptr<const gguf::File> f) {
  WeightSet w(f->path());
  const uint8_t *lo = nullptr, *hi = nullptr;
  for (const TensorView& t : f->tensors()) {
    if (!dtype_info(t.type).supported)
      fail("{}: tensor '{}' has type {}, which ferrum does not run (it runs {})", f->path(), t.name,
           dtype_label(t.type), supported_dtype_names());
    w.add(t);
    if (t.data && (!lo || t.data < lo)) lo = t.data;
    if (t.data && (!hi || t.data + t.nbytes > hi)) hi = t.data + t.nbytes;
  }
  w.set_file_mapping(lo, hi);  // the tensors live in the file's read-only mapping
  w.keep_alive(f);
  return w;
}

ModelFiles open_model_files(const std::string& path, const std::string& tokenizer_path) {
  const ModelFormat fmt = detect_format(path);
  if (fmt == ModelFormat::HuggingFace) {
    HfModel hf = load_hf_dir(path);
    return ModelFiles{std::move(hf.config), std::move(hf.weights), fmt, nullptr};
  }
  auto g = fmt == ModelFormat::Gguf ? gguf::File::open(path) : open_llama2c_as_gguf(path, tokenizer_path);
  ModelConfig cfg = config_from_gguf(*g);
  WeightSet w = weights_from_gguf(g);
  return ModelFiles{std::move(cfg), std::move(w), fmt, g};
}

LoadedModel load_model(const std::string& path, const ModelOptions& opts, const std::string& tokenizer_path) {
  ModelFiles files = open_model_files(path, tokenizer_path);
  if (files.config.is_encoder()) return load_encoder(path, opts);
  LoadedModel lm;
  lm.path = path;
  lm.format = files.format;
  if (files.gguf) {
    lm.tokenizer = Tokenizer::from_gguf(*files.gguf);
  } else {
    lm.tokenizer = Tokenizer::from_hf_dir(path);
  }
  lm.model = create_model(std::move(files.config), std::move(files.weights), opts);
  if (lm.tokenizer->n_vocab() > lm.model->config().n_vocab)
    fail("{}: the tokenizer has {} tokens but the model's vocabulary has only {}", path,
         lm.tokenizer->n_vocab(), lm.model->config().n_vocab);
  return lm;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path, const std::string& tokenizer_path) {
  switch (detect_format(path)) {
    case ModelFormat::Gguf:
      return Tokenizer::from_gguf(*gguf::File::open(path));
    case ModelFormat::HuggingFace:
      return Tokenizer::from_hf_dir(path);
    case ModelFormat::Llama2c:
      return Tokenizer::from_llama2c(llama2c_tokenizer_path(path, tokenizer_path));
  }
  fail("unreachable");
}

}  // namespace ferrum
