// Shared helpers for the tokenizer tests: fixture loading (xz-compressed vocabularies and
// tokenizer.json files under tests/data/tokenizer) and a per-process tokenizer cache.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ferrum/tokenizer.h"
#include "formats/gguf.h"
#include "test_util.h"

namespace ferrum::test {

// GGUF vocabulary: "llama-spm", "bert-bge", "gpt-2", "phi-3", "llama3-tokref", "qwen3-tokref".
inline const Tokenizer& gguf_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[name];
  if (!slot) {
    auto f = gguf::File::open(unxz("tokenizer/gguf/ggml-vocab-" + name + ".gguf"));
    slot = Tokenizer::from_gguf(*f);
  }
  return *slot;
}

// Directory holding tokenizer.json (decompressed) and tokenizer_config.json for hf/<name>.
inline std::string hf_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path tj = unxz("tokenizer/hf/" + name + "/tokenizer.json");
  const fs::path cfg = data_path("tokenizer/hf/" + name + "/tokenizer_config.json");
  const fs::path dst = tj.parent_path() / "tokenizer_config.json";
  if (fs::exists(cfg) && cfg != dst && !fs::exists(dst)) {
    // copy then rename: safe when test processes run in parallel
    const fs::path tmp = dst.string() + ".tmp" + std::to_string(::getpid());
    fs::copy_file(cfg, tmp, fs::copy_options::overwrite_existing);
    fs::rename(tmp, dst);
  }
  return tj.parent_path().string();
}

// "llama3", "qwen3", "mistral-7b-v0.1", "llama2-rebuilt-from-gguf", ...
inline const Tokenizer& hf_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[name];
  if (!slot) slot = Tokenizer::from_hf_dir(hf_dir(name));
  return *slot;
}

inline std::vector<nlohmann::json> load_jsonl(const std::string& rel) {
  std::ifstream in(unxz(rel));
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  }
  return rows;
}

}  // namespace ferrum::test
