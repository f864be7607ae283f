// Collects the output tensors of an HF -> GGUF conversion: views into the safetensors mappings
// or converted copies owned by the sink, kept alive until the GGUF is written.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "formats/gguf_writer.h"

namespace ferrum::hfconv {

struct OutTensor {
  std::string name;
  DType type;
  std::vector<int64_t> ne;  // GGUF order
  const void* data;
  size_t nbytes;
};

class TensorSink {
 public:
  // force_f32 converts F16/BF16 data to F32 (llama.cpp stores norms, biases and routers in F32).
  void add(std::string name, DType type, std::vector<int64_t> ne, const void* data, size_t nbytes,
           bool force_f32 = false);
  void add(std::string name, const TensorView& t, bool force_f32 = false);
  uint8_t* alloc(size_t nbytes);  // scratch that lives as long as the sink

  const OutTensor* find(std::string_view name) const;
  void sort(const std::function<int(const std::string&)>& key);
  // general.file_type as llama.cpp writes it: 0 all F32, 1 mostly F16, 32 mostly BF16, 2/7/8 mostly
  // Q4_0/Q8_0/Q5_0 (tensors forced to F32 do not count).
  uint32_t file_type() const;
  void add_to(gguf::Writer& w) const;

 private:
  std::deque<std::vector<uint8_t>> owned_;
  std::vector<OutTensor> outs_;
  bool any_f16_ = false, any_bf16_ = false;
  std::map<DType, size_t> quant_bytes_;  // Q4_0/Q5_0/Q8_0 (GPTQ/AWQ layers), MXFP4 (gpt-oss experts)
};

// The last component of a directory path ("a/b/" -> "b"), used as general.name.
std::string dir_name(const std::string& dir);

// Layer (or expert) numbers in tensor names are at most this; larger ones are errors, not
// integers to overflow.
constexpr int64_t kMaxLayerIndex = (1 << 16) - 1;
// The decimal number `digits` taken from the name of tensor `tensor` in `where`; throws naming
// the tensor when it is above kMaxLayerIndex.
int64_t layer_index(const std::string& digits, const std::string& where, const std::string& tensor);
// The layer of a GGUF name "blk.<N>.<rest>" made by the converters (N already checked).
int layer_of(const std::string& gguf_name);

}  // namespace ferrum::hfconv
