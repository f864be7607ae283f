// Open-addressing string -> value map for vocabulary lookups on the tokenization hot paths
// (no per-node allocation, no pointer chasing; the first value inserted for a key wins).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferrum::tok {

inline uint64_t hash_bytes(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  uint64_t v = 0;
  std::memcpy(&v, p, n);
  h = (h ^ v) * 0x94D049BB133111EBull;
  return h ^ (h >> 29);
}

template <typename V>
class FlatStrMap {
 public:
  void clear() {
    keys_.clear();
    vals_.clear();
    slots_.assign(16, 0);
    hashes_.assign(16, 0);
  }
  void reserve(size_t n) {
    keys_.reserve(n);
    vals_.reserve(n);
    if (slots_.size() < n * 2) rehash(n * 2);
  }
  size_t size() const { return keys_.size(); }

  const V* find(std::string_view key) const {
    if (slots_.empty()) return nullptr;
    const uint64_t h = hash_bytes(key);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const uint32_t s = slots_[i];
      if (s == 0) return nullptr;
      if (hashes_[i] == static_cast<uint32_t>(h >> 32) && keys_[s - 1] == key) return &vals_[s - 1];
    }
  }
  // Inserts unless the key is present; returns false if it was.
  bool emplace(std::string_view key, V value) {
    if (slots_.empty()) clear();
    if ((keys_.size() + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    const uint64_t h = hash_bytes(key);
    const size_t mask = slots_.size() - 1;
    size_t i = h & mask;
    for (; slots_[i] != 0; i = (i + 1) & mask) {
      if (hashes_[i] == static_cast<uint32_t>(h >> 32) && keys_[slots_[i] - 1] == key) return false;
    }
    keys_.emplace_back(key);
    vals_.push_back(std::move(value));
    slots_[i] = static_cast<uint32_t>(keys_.size());
    hashes_[i] = static_cast<uint32_t>(h >> 32);
    return true;
  }

 private:
  void rehash(size_t want) {
    size_t cap = 16;
    while (cap < want) cap <<= 1;
    slots_.assign(cap, 0);
    hashes_.assign(cap, 0);
    for (size_t k = 0; k < keys_.size(); ++k) {
      const uint64_t h = hash_bytes(keys_[k]);
      size_t i = h & (cap - 1);
      while (slots_[i] != 0) i = (i + 1) & (cap - 1);
      slots_[i] = static_cast<uint32_t>(k + 1);
      hashes_[i] = static_cast<uint32_t>(h >> 32);
    }
  }

  std::vector<std::string> keys_;
  std::vector<V> vals_;
  std::vector<uint32_t> slots_;   // index + 1 into keys_/vals_, 0 = empty
  std::vector<uint32_t> hashes_;  // high hash bits per slot (cheap mismatch test)
};

}  // namespace ferrum::tok
