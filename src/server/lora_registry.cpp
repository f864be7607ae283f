#include "server/lora_registry.h"

#include <algorithm>
#include <ctime>

#include "core/fail.h"

namespace ferrum::server {

void LoraRegistry::add(const std::string& name, const std::string& path,
                       const std::vector<std::string>& reserved) {
  if (name.empty() || name.size() > 256) fail("a LoRA adapter name must have 1 to 256 characters");
  if (std::find(reserved.begin(), reserved.end(), name) != reserved.end())
    fail("the LoRA adapter name '{}' is the base model's", name);
  if (find(name)) fail("a LoRA adapter named '{}' is already loaded", name);
  const LoraSpec spec = parse_lora_spec(path);
  auto e = std::make_shared<LoraEntry>();
  e->name = name;
  e->path = spec.path;
  e->adapter = load_lora(model_, std::span(&spec, 1));  // slow: outside the lock
  e->counters = std::make_shared<LoraCounters>();
  e->created = static_cast<int64_t>(std::time(nullptr));
  std::lock_guard lk(mu_);
  if (!entries_.emplace(name, std::move(e)).second) fail("a LoRA adapter named '{}' is already loaded", name);
}

bool LoraRegistry::remove(const std::string& name) {
  std::lock_guard lk(mu_);
  return entries_.erase(name) > 0;
}

std::shared_ptr<const LoraEntry> LoraRegistry::find(const std::string& name) const {
  std::lock_guard lk(mu_);
  const auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const LoraEntry>> LoraRegistry::list() const {
  std::lock_guard lk(mu_);
  std::vector<std::shared_ptr<const LoraEntry>> out;
  for (const auto& [_, e] : entries_) out.push_back(e);
  return out;
}

}  // namespace ferrum::server
