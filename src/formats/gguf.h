// GGUF (v2/v3) reader. The file is memory-mapped; metadata values and arrays are kept as offsets
// into the mapping and decoded on access, so opening a file with a 150k-entry vocabulary is cheap.
// Every read is bounds-checked and every problem is reported as ferrum::Error naming the file,
// the key/tensor and the byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/mmap.h"
#include "core/tensor.h"

namespace ferrum::gguf {

enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

// "u8", "i32", "f32", "bool", "string", "array", ... ; "unknown" for an out-of-range value.
const char* value_type_name(ValueType);
// Size in bytes of a fixed-size value type; 0 for STRING/ARRAY.
size_t value_type_size(ValueType);

constexpr uint32_t kDefaultAlignment = 32;

class File {
 public:
  static std::shared_ptr<const File> open(const std::string& path);  // throws ferrum::Error

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }      // general.alignment, default 32
  size_t data_offset() const { return data_offset_; }  // start of tensor data

  std::vector<std::string> keys() const;  // in file order
  bool has(std::string_view key) const;
  ValueType type_of(std::string_view key) const;        // throws if missing
  ValueType array_type_of(std::string_view key) const;  // element type; throws if not an array
  size_t array_size(std::string_view key) const;        // throws if not an array

  // get_* throw "<file>: metadata key '<key>' is missing" or "... has type <T>, expected <U>";
  // find_* return nullopt when the key is missing but still throw on a wrong type.
  std::string get_string(std::string_view key) const;
  std::optional<std::string> find_string(std::string_view key) const;
  uint64_t get_uint(std::string_view key) const;  // any integer type, range checked
  std::optional<uint64_t> find_uint(std::string_view key) const;
  int64_t get_int(std::string_view key) const;  // any integer type, range checked
  std::optional<int64_t> find_int(std::string_view key) const;
  double get_float(std::string_view key) const;  // F32/F64 (integers accepted too)
  std::optional<double> find_float(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;

  std::vector<std::string> get_string_array(std::string_view key) const;
  // Same strings as views into the mapping (valid as long as the File lives); no copies.
  std::vector<std::string_view> get_string_array_views(std::string_view key) const;
  std::vector<float> get_float_array(std::string_view key) const;    // from F32/F64 arrays
  std::vector<int64_t> get_int_array(std::string_view key) const;    // from any integer array
  std::vector<uint64_t> get_uint_array(std::string_view key) const;  // integer array, >= 0

  // All metadata as JSON for `ferrum info`. Arrays longer than max_array become
  // {"type": "array", "element_type": "<T>", "count": N, "head": [first max_array values]}.
  // Strings that are not valid UTF-8 get the bad bytes replaced by U+FFFD so dump() never throws.
  nlohmann::json metadata_json(size_t max_array = 16) const;
  // The encoded GGUF payload of a value: the bytes that follow its value-type field in the file
  // (for arrays: element type, count and elements). Used to copy metadata verbatim.
  std::string_view raw_value(std::string_view key) const;
  // One metadata value as JSON (arrays in full).
  nlohmann::json value_json(std::string_view key) const;

  const std::vector<TensorView>& tensors() const { return tensors_; }  // file order
  const TensorView* find_tensor(std::string_view name) const;
  const TensorView& tensor(std::string_view name) const;  // throws "<file>: tensor '<name>' is missing"
  // Offset of a tensor's data relative to data_offset(), as stored in the file.
  size_t tensor_offset(const TensorView& t) const { return static_cast<size_t>(t.data - data_base()); }

  const MappedFile& mapping() const { return map_; }

  // Internal: one metadata entry. Scalars point at their value; arrays at their first element.
  struct Entry {
    std::string key;
    ValueType type;
    ValueType elem_type = ValueType::U8;  // arrays only
    uint64_t count = 0;                   // arrays only
    size_t offset = 0;                    // value (or first element) offset in the file
    size_t key_offset = 0;                // where the key/value pair starts (for messages)
  };

 private:
  File() = default;
  void parse();
  const uint8_t* data_base() const { return map_.data() + data_offset_; }
  const Entry* find_entry(std::string_view key) const;
  const Entry& entry(std::string_view key) const;  // throws if missing
  const Entry& array_entry(std::string_view key) const;
  [[noreturn]] void type_error(const Entry& e, std::string_view expected) const;
  std::optional<uint64_t> uint_value(const Entry* e) const;
  std::optional<int64_t> int_value(const Entry* e) const;
  std::optional<double> float_value(const Entry* e) const;
  nlohmann::json element_json(ValueType t, const uint8_t* p) const;

  std::string path_;
  MappedFile map_;
  uint32_t version_ = 0;
  size_t alignment_ = kDefaultAlignment;
  size_t data_offset_ = 0;
  std::vector<Entry> entries_;
  std::map<std::string, size_t, std::less<>> entry_index_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace ferrum::gguf
