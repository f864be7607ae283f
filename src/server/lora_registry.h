// The LoRA adapters a server offers by name (`ferrum serve --lora name=PATH`, and at run time
// POST /v1/load_lora_adapter when allowed), with per-adapter request and token counters. Requests
// pick one with "model": "<name>" (vLLM's convention); an unloaded adapter stays alive until the
// requests using it finish (they hold it).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ferrum/lora.h"
#include "ferrum/model.h"

namespace ferrum::server {

struct LoraCounters {
  std::atomic<uint64_t> requests{0}, prompt_tokens{0}, completion_tokens{0};
};

struct LoraEntry {
  std::string name, path;
  std::shared_ptr<const LoraAdapter> adapter;
  std::shared_ptr<LoraCounters> counters;
  int64_t created = 0;
};

class LoraRegistry {
 public:
  explicit LoraRegistry(const Model& model) : model_(model) {}
  // Loads `path` ("PATH[:scale]") for the model under `name`; throws ferrum::Error for a name in
  // use (or reserved: the base model's ids) or an adapter that does not fit the model.
  void add(const std::string& name, const std::string& path, const std::vector<std::string>& reserved);
  bool remove(const std::string& name);  // false: no such adapter
  std::shared_ptr<const LoraEntry> find(const std::string& name) const;
  std::vector<std::shared_ptr<const LoraEntry>> list() const;  // by name

 private:
  const Model& model_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const LoraEntry>> entries_;
};

}  // namespace ferrum::server
