#include "dist/rank_check.h"

#include <cstring>

#include "core/fail.h"

namespace ferrum::dist {

uint64_t directory_hash(const ModelFiles& files, std::span<const int64_t> split) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 1099511628211ull;
  };
  const ModelConfig& c = files.config;
  for (int64_t v : {int64_t{c.n_layer}, int64_t{c.n_embd}, int64_t{c.n_vocab}, int64_t{c.n_head}}) mix(&v, 8);
  for (const auto& [name, t] : files.weights.all()) {
    mix(name.data(), name.size());
    const int type = static_cast<int>(t.type);
    mix(&type, sizeof type);
    const std::string shape = t.shape_string();
    mix(shape.data(), shape.size());
    mix(&t.nbytes, sizeof t.nbytes);
  }
  for (int64_t v : split) mix(&v, sizeof v);
  return h;
}

void check_ranks_agree(Transport& t, uint64_t hash, const std::string& path, const char* flag) {
  if (t.rank() > 0) {
    Bytes b(sizeof hash);
    std::memcpy(b.data(), &hash, sizeof hash);
    t.send(0, b);
    return;
  }
  for (int r = 1; r < t.size(); ++r) {
    const Bytes b = t.recv(r);
    uint64_t theirs = 0;
    if (b.size() == sizeof theirs) std::memcpy(&theirs, b.data(), sizeof theirs);
    if (theirs != hash)
      fail("{}: rank {} loaded a different {} (its tensors or split differ from rank 0's)", flag, r, path);
  }
}

}  // namespace ferrum::dist
