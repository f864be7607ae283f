#include "formats/hf_tensor_sink.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "core/fail.h"
#include "core/fp16.h"

namespace ferrum::hfconv {

uint8_t* TensorSink::alloc(size_t nbytes) {
  return owned_.emplace_back(nbytes).data();
}

void TensorSink::add(std::string name, DType type, std::vector<int64_t> ne, const void* data, size_t nbytes,
                     bool force_f32) {
  if (force_f32 && type != DType::F32) {
    if (type != DType::F16 && type != DType::BF16)
      fail("tensor '{}': cannot convert {} to F32", name, dtype_name(type));
    const size_t n = nbytes / 2;
    float* dst = reinterpret_cast<float*>(alloc(n * 4));
    const auto* src = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, src + 2 * i, 2);  // safetensors data need not be aligned
      dst[i] = type == DType::F16 ? f16_to_f32(v) : bf16_to_f32(v);
    }
    outs_.push_back({std::move(name), DType::F32, std::move(ne), dst, n * 4});
    return;
  }
  if (!force_f32) {
    any_f16_ |= type == DType::F16;
    any_bf16_ |= type == DType::BF16;
    if (type == DType::Q4_0 || type == DType::Q5_0 || type == DType::Q8_0 || type == DType::MXFP4)
      quant_bytes_[type] += nbytes;
  }
  outs_.push_back({std::move(name), type, std::move(ne), data, nbytes});
}

void TensorSink::add(std::string name, const TensorView& t, bool force_f32) {
  add(std::move(name), t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + std::max(t.n_dims, 1)),
      t.data, t.nbytes, force_f32);
}

const OutTensor* TensorSink::find(std::string_view name) const {
  for (const auto& o : outs_)
    if (o.name == name) return &o;
  return nullptr;
}

void TensorSink::sort(const std::function<int(const std::string&)>& key) {
  std::stable_sort(outs_.begin(), outs_.end(),
                   [&](const OutTensor& a, const OutTensor& b) { return key(a.name) < key(b.name); });
}

uint32_t TensorSink::file_type() const {
  if (!quant_bytes_.empty()) {  // the quantized type holding the most bytes (llama_ftype numbers)
    const auto most = std::max_element(quant_bytes_.begin(), quant_bytes_.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    switch (most->first) {
      case DType::Q4_0:
        return 2;
      case DType::Q8_0:
        return 7;
      case DType::MXFP4:
        return 38;  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
      default:
        return 8;
    }
  }
  return any_bf16_ ? 32 : any_f16_ ? 1 : 0;
}

void TensorSink::add_to(gguf::Writer& w) const {
  for (const auto& o : outs_) w.add_tensor(o.name, o.type, o.ne, o.data, o.nbytes);
}

std::string dir_name(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "a/b/" -> "a/b"
  return p.filename().string();
}

int64_t layer_index(const std::string& digits, const std::string& where, const std::string& tensor) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || v < 0 || v > kMaxLayerIndex)
    fail("{}: tensor '{}' has layer/expert number {}, expected at most {}", where, tensor, digits,
         kMaxLayerIndex);
  return v;
}

int layer_of(const std::string& gguf_name) {
  int v = 0;
  const char* b = gguf_name.data() + 4;  // after "blk."
  std::from_chars(b, gguf_name.data() + gguf_name.size(), v);
  return v;
}

}  // namespace ferrum::hfconv
