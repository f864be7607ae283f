// GGUF v3 writer: metadata in insertion order (setting an existing key replaces its value in
// place), tensors in add order, each aligned to general.alignment (default 32). write() goes to a
// temporary file that is renamed over the target, so readers never see a half-written file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/progress.h"
#include "core/tensor.h"
#include "ferrum/dtype.h"
#include "formats/gguf.h"

namespace ferrum::gguf {

class Writer {
 public:
  void set_string(std::string_view key, std::string_view v);
  void set_u8(std::string_view key, uint8_t v);
  void set_i8(std::string_view key, int8_t v);
  void set_u16(std::string_view key, uint16_t v);
  void set_i16(std::string_view key, int16_t v);
  void set_u32(std::string_view key, uint32_t v);
  void set_i32(std::string_view key, int32_t v);
  void set_u64(std::string_view key, uint64_t v);
  void set_i64(std::string_view key, int64_t v);
  void set_f32(std::string_view key, float v);
  void set_f64(std::string_view key, double v);
  void set_bool(std::string_view key, bool v);
  void set_string_array(std::string_view key, const std::vector<std::string>& v);
  void set_f32_array(std::string_view key, const std::vector<float>& v);
  void set_i32_array(std::string_view key, const std::vector<int32_t>& v);
  void set_u32_array(std::string_view key, const std::vector<uint32_t>& v);
  void set_i64_array(std::string_view key, const std::vector<int64_t>& v);
  void set_f64_array(std::string_view key, const std::vector<double>& v);
  void set_u8_array(std::string_view key, const std::vector<uint8_t>& v);
  void set_bool_array(std::string_view key, const std::vector<bool>& v);
  // Any value, given as its encoded GGUF payload (what follows the value-type field in a file).
  void set_raw(std::string_view key, ValueType type, std::string payload);

  bool has(std::string_view key) const;
  void remove(std::string_view key);
  // Copies every metadata pair of f (replacing keys already set here, keeping their position).
  void copy_metadata_from(const File& f);

  // Registers a tensor; data must stay valid until write(). nbytes must match the shape.
  // ne is in GGUF order (ne[0] = row length), 1 to 4 positive dimensions.
  void add_tensor(std::string_view name, DType type, std::vector<int64_t> ne, const void* data,
                  size_t nbytes);
  void add_tensor(const TensorView& t);  // same name/type/shape/data as the view
  size_t tensor_count() const { return tensors_.size(); }

  // Writes the file (GGUF v3), reporting each tensor written (stage "write"). Throws ferrum::Error
  // naming the path on I/O errors.
  void write(const std::string& path, const ProgressFn& progress = {}) const;

 private:
  struct Kv {
    std::string key;
    ValueType type;
    std::string payload;
  };
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> ne;
    const void* data;
    size_t nbytes;
  };
  size_t alignment() const;

  std::vector<Kv> kvs_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<Tensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace ferrum::gguf
