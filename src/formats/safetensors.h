// Safetensors reader: a single file (u64 header length + JSON header + data) or a Hugging Face
// model directory (model.safetensors, or shards listed in model.safetensors.index.json). Files are
// memory-mapped and kept alive by the Tensors object; tensors are exposed as TensorViews in GGUF
// dimension order (a safetensors shape [rows, cols] becomes ne = {cols, rows}).
// Data is aligned to 8 bytes only if the writer padded the header (the safetensors library does);
// copy with memcpy when in doubt.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/mmap.h"
#include "core/tensor.h"

namespace ferrum::safetensors {

class Tensors {
 public:
  // A directory with model.safetensors.index.json (sharded) or model.safetensors (or, failing
  // both, every *.safetensors file in it).
  static Tensors open_dir(const std::string& dir);
  static Tensors open_file(const std::string& path);

  // Tensors with another dtype (I64, F64, F8_*, ...) than F32/F16/BF16/I32/U8 (as I8) are not loaded: they
  // are missing from names()/tensors(), listed by unsupported(), and find()/get() on them throw naming the
  // dtype.
  const TensorView* find(std::string_view name) const;  // nullptr if absent
  const TensorView& get(std::string_view name) const;   // throws naming the tensor and the source
  std::vector<std::string> names() const;               // per file in data order, files in order
  const std::map<std::string, std::string, std::less<>>& unsupported() const {
    return unsupported_;
  }  // name -> dtype
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const std::string& source() const { return source_; }  // the directory or file opened
  // The file (shard) a tensor comes from.
  const std::string& file_of(std::string_view name) const;

 private:
  void add_file(const std::string& path);
  void check_supported(std::string_view name) const;

  std::string source_;
  std::vector<MappedFile> maps_;
  std::vector<TensorView> tensors_;
  std::vector<size_t> tensor_file_;  // index into maps_
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string, std::less<>> unsupported_;
};

}  // namespace ferrum::safetensors
