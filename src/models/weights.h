// The set of weight tensors of a model under canonical (GGUF) names, whatever file format they
// came from. Views point into memory-mapped files or into buffers this object owns (tensors fused
// or converted at load).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/cpu/linear.h"

namespace ferrum {

class WeightSet {
 public:
  explicit WeightSet(std::string source = "") : source_(std::move(source)) {}

  const std::string& source() const { return source_; }
  void add(TensorView t) { tensors_[t.name] = std::move(t); }
  void remove(const std::string& name) { tensors_.erase(name); }
  const TensorView* find(const std::string& name) const;
  // Throws "<source>: tensor '<name>' is missing".
  const TensorView& get(const std::string& name) const;
  // Like get(), and checks the shape (ne order); throws naming expected and actual shapes.
  const TensorView& get(const std::string& name, std::vector<int64_t> ne) const;
  const std::map<std::string, TensorView>& all() const { return tensors_; }

  // Keeps an object (a file mapping) alive as long as the weights.
  void keep_alive(std::shared_ptr<const void> owner) { owners_.push_back(std::move(owner)); }
  // Allocates an owned buffer of n bytes (64-byte aligned) for a derived tensor.
  uint8_t* allocate(size_t n);

  size_t total_bytes() const;
  // The bytes of the tensors whose names start with `prefix` (e.g. "blk.3.").
  size_t bytes_with_prefix(const std::string& prefix) const;

  // Marks [begin, end) as a read-only private file mapping (a GGUF file) that the weights point into.
  void set_file_mapping(const uint8_t* begin, const uint8_t* end) { map_begin_ = begin, map_end_ = end; }
  // Drops the resident pages of a tensor that lies in the file mapping (after it was repacked into
  // its own memory): they are re-read from the file if touched again (e.g. a few embedding rows).
  // Does nothing for tensors in owned memory. Returns the bytes released.
  size_t release_pages(const TensorView& t) const;
  // release_pages() for every part of `lin` that it holds in its own memory (packed or a BF16 copy),
  // and release_owned() for such parts that were marked transient.
  size_t release_packed(const kernels::Linear& lin);
  // Marks the owned tensor `name` (a copy made at load, such as a tensor-parallel rank's column
  // slice) as needed only until a packed copy replaces it.
  void mark_transient(const std::string& name) { transient_.insert(name); }
  // Frees the owned buffer that holds exactly the tensor `name` (a stack a loader rewrote, such as
  // gpt-oss's HF experts) once a packed copy replaced it; the tensor's view is left with null data,
  // so a later use fails instead of reading freed memory. Returns the bytes freed (0 for a tensor in
  // a file mapping or sharing its buffer).
  size_t release_owned(const std::string& name);
  // The bytes of the buffers this set owns (tensors converted or rewritten at load).
  size_t owned_bytes() const;

 private:
  std::string source_;
  std::map<std::string, TensorView> tensors_;
  std::set<std::string> transient_;
  std::vector<std::shared_ptr<const void>> owners_;
  struct Owned {
    std::unique_ptr<uint8_t[], void (*)(uint8_t*)> data;
    size_t bytes;
  };
  std::vector<Owned> buffers_;
  const uint8_t* map_begin_ = nullptr;
  const uint8_t* map_end_ = nullptr;
};

}  // namespace ferrum
