// Prefix-cache blocks kept on disk (KvOptions::prefix_cache_dir), so that cached prompt prefixes
// survive a restart: a block the prefix cache evicts, and every cached block when the cache goes
// away, is written to a file of its own; after a restart a lookup that misses in memory reads the
// block's file, if there is one, back into the pool (lazily, one block at a time).
//
// A file is named by the block's chain hash (which covers every token before it) and lives in a
// folder named by a hash of the identity of what computed it: the caller's key (the model's
// fingerprint, precision and kernels) and the cache's own layout (KV type, block size, layers,
// heads, head size, windows). Its header repeats the identity, the parent hash and the tokens, and
// a checksum covers the bytes: a file of another model, type or format version, a truncated or
// corrupted one is ignored with one log line and never used. The folder is kept under max_bytes by
// removing the oldest files.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

namespace ferrum::runtime {

class PrefixStore {
 public:
  using Log = std::function<void(const std::string&)>;
  // Creates dir/<identity hash>/ if needed; throws ferrum::Error naming the folder when it cannot.
  PrefixStore(const std::string& dir, std::string identity, uint64_t max_bytes, Log log = nullptr);

  bool has(uint64_t hash) const;
  // Writes one block unless its file exists: `group_mask` says which cache groups' data `payload`
  // holds (the caller's layout: for each group in the mask, each layer's K block then V block).
  void save(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens, uint32_t group_mask,
            std::span<const std::span<const uint8_t>> payload);
  // Reads the block's file: true with its group mask and bytes when the header names this block of
  // this identity and the checksum holds; false (logged once per file) otherwise.
  bool load(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens, uint32_t& group_mask,
            std::vector<uint8_t>& payload);

  const std::string& folder() const { return folder_; }
  int64_t saved() const { return saved_; }
  int64_t loaded() const { return loaded_; }

 private:
  std::string path_of(uint64_t hash) const;
  void trim();  // oldest files out until the folder is under 90% of max_bytes

  std::string folder_, identity_;
  uint64_t max_bytes_, bytes_ = 0;
  Log log_;
  std::mutex mu_;
  std::unordered_set<uint64_t> bad_;  // files found unusable: not read (or logged) again
  int64_t saved_ = 0, loaded_ = 0;
};

}  // namespace ferrum::runtime
