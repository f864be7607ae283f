#include "formats/gguf_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/fail.h"

namespace ferrum::gguf {
namespace {

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void put_string(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.append(s);
}

template <typename T>
std::string scalar(T v) {
  std::string s;
  put(s, v);
  return s;
}

template <typename T>
std::string array(ValueType et, const std::vector<T>& v) {
  std::string s;
  put<uint32_t>(s, static_cast<uint32_t>(et));
  put<uint64_t>(s, v.size());
  for (const T& x : v) put(s, x);
  return s;
}

}  // namespace

void Writer::set_raw(std::string_view key, ValueType type, std::string payload) {
  if (key.empty()) fail("gguf writer: empty metadata key");
  auto it = kv_index_.find(key);
  if (it != kv_index_.end()) {
    kvs_[it->second].type = type;
    kvs_[it->second].payload = std::move(payload);
    return;
  }
  kv_index_.emplace(std::string(key), kvs_.size());
  kvs_.push_back({std::string(key), type, std::move(payload)});
}

void Writer::set_string(std::string_view key, std::string_view v) {
  std::string s;
  put_string(s, v);
  set_raw(key, ValueType::STRING, std::move(s));
}
void Writer::set_u8(std::string_view key, uint8_t v) {
  set_raw(key, ValueType::U8, scalar(v));
}
void Writer::set_i8(std::string_view key, int8_t v) {
  set_raw(key, ValueType::I8, scalar(v));
}
void Writer::set_u16(std::string_view key, uint16_t v) {
  set_raw(key, ValueType::U16, scalar(v));
}
void Writer::set_i16(std::string_view key, int16_t v) {
  set_raw(key, ValueType::I16, scalar(v));
}
void Writer::set_u32(std::string_view key, uint32_t v) {
  set_raw(key, ValueType::U32, scalar(v));
}
void Writer::set_i32(std::string_view key, int32_t v) {
  set_raw(key, ValueType::I32, scalar(v));
}
void Writer::set_u64(std::string_view key, uint64_t v) {
  set_raw(key, ValueType::U64, scalar(v));
}
void Writer::set_i64(std::string_view key, int64_t v) {
  set_raw(key, ValueType::I64, scalar(v));
}
void Writer::set_f32(std::string_view key, float v) {
  set_raw(key, ValueType::F32, scalar(v));
}
void Writer::set_f64(std::string_view key, double v) {
  set_raw(key, ValueType::F64, scalar(v));
}
void Writer::set_bool(std::string_view key, bool v) {
  set_raw(key, ValueType::BOOL, scalar<uint8_t>(v ? 1 : 0));
}

void Writer::set_string_array(std::string_view key, const std::vector<std::string>& v) {
  std::string s;
  put<uint32_t>(s, static_cast<uint32_t>(ValueType::STRING));
  put<uint64_t>(s, v.size());
  for (const auto& x : v) put_string(s, x);
  set_raw(key, ValueType::ARRAY, std::move(s));
}
void Writer::set_f32_array(std::string_view key, const std::vector<float>& v) {
  set_raw(key, ValueType::ARRAY, array(ValueType::F32, v));
}
void Writer::set_i32_array(std::string_view key, const std::vector<int32_t>& v) {
  set_raw(key, ValueType::ARRAY, array(ValueType::I32, v));
}
void Writer::set_u32_array(std::string_view key, const std::vector<uint32_t>& v) {
  set_raw(key, ValueType::ARRAY, array(ValueType::U32, v));
}
void Writer::set_i64_array(std::string_view key, const std::vector<int64_t>& v) {
  set_raw(key, ValueType::ARRAY, array(ValueType::I64, v));
}
void Writer::set_f64_array(std::string_view key, const std::vector<double>& v) {
  set_raw(key, ValueType::ARRAY, array(ValueType::F64, v));
}
void Writer::set_u8_array(std::string_view key, const std::vector<uint8_t>& v) {
  set_raw(key, ValueType::ARRAY, array(ValueType::U8, v));
}
void Writer::set_bool_array(std::string_view key, const std::vector<bool>& v) {
  std::vector<uint8_t> b(v.begin(), v.end());
  set_raw(key, ValueType::ARRAY, array(ValueType::BOOL, b));
}

bool Writer::has(std::string_view key) const {
  return kv_index_.count(key) != 0;
}

void Writer::remove(std::string_view key) {
  auto it = kv_index_.find(key);
  if (it == kv_index_.end()) return;
  kvs_.erase(kvs_.begin() + static_cast<ptrdiff_t>(it->second));
  kv_index_.clear();
  for (size_t i = 0; i < kvs_.size(); ++i) kv_index_.emplace(kvs_[i].key, i);
}

void Writer::copy_metadata_from(const File& f) {
  for (const auto& k : f.keys()) set_raw(k, f.type_of(k), std::string(f.raw_value(k)));
}

void Writer::add_tensor(std::string_view name, DType type, std::vector<int64_t> ne, const void* data,
                        size_t nbytes) {
  if (name.empty()) fail("gguf writer: tensor with an empty name");
  if (tensor_index_.count(name)) fail("gguf writer: duplicate tensor '{}'", name);
  const auto info = dtype_info(static_cast<uint32_t>(type));
  if (!info && is_in_memory_type(type))
    fail("gguf writer: tensor '{}' has type {}, which no GGUF file holds", name, dtype_label(type));
  if (!info) fail("gguf writer: tensor '{}' has unknown type id {}", name, static_cast<uint32_t>(type));
  if (ne.empty() || ne.size() > 4)
    fail("gguf writer: tensor '{}' has {} dimensions, expected 1 to 4", name, ne.size());
  for (size_t d = 0; d < ne.size(); ++d)
    if (ne[d] <= 0) fail("gguf writer: tensor '{}' dimension {} is {}, expected > 0", name, d, ne[d]);
  if (ne[0] % info->block_size != 0)
    fail("gguf writer: tensor '{}' row length {} is not a multiple of the {} block size {}", name, ne[0],
         info->name, info->block_size);
  unsigned __int128 expect = static_cast<unsigned __int128>(ne[0] / info->block_size) * info->type_size;
  for (size_t d = 1; d < ne.size(); ++d) expect *= static_cast<uint64_t>(ne[d]);
  if (expect != nbytes)
    fail("gguf writer: tensor '{}' ({} with {} dims) has {} bytes of data, its shape needs {}", name,
         info->name, ne.size(), nbytes, static_cast<uint64_t>(expect));
  if (!data && nbytes) fail("gguf writer: tensor '{}' has no data", name);
  tensor_index_.emplace(std::string(name), tensors_.size());
  tensors_.push_back({std::string(name), type, std::move(ne), data, nbytes});
}

void Writer::add_tensor(const TensorView& t) {
  add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + std::max(t.n_dims, 1)), t.data,
             t.nbytes);
}

size_t Writer::alignment() const {
  auto it = kv_index_.find("general.alignment");
  if (it == kv_index_.end()) return kDefaultAlignment;
  const Kv& kv = kvs_[it->second];
  if (kv.type != ValueType::U32)
    fail("gguf writer: general.alignment has type {}, expected u32", value_type_name(kv.type));
  uint32_t a;
  std::memcpy(&a, kv.payload.data(), 4);
  if (a == 0 || (a & (a - 1)) != 0) fail("gguf writer: general.alignment is {}, expected a power of two", a);
  return a;
}

void Writer::write(const std::string& path, const ProgressFn& progress) const {
  const size_t align = alignment();
  std::string head;
  head.append("GGUF", 4);
  put<uint32_t>(head, 3);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, kvs_.size());
  for (const auto& kv : kvs_) {
    put_string(head, kv.key);
    put<uint32_t>(head, static_cast<uint32_t>(kv.type));
    head.append(kv.payload);
  }
  std::vector<uint64_t> offsets;
  uint64_t off = 0;
  for (const auto& t : tensors_) {
    put_string(head, t.name);
    put<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) put<uint64_t>(head, static_cast<uint64_t>(n));
    put<uint32_t>(head, static_cast<uint32_t>(t.type));
    put<uint64_t>(head, off);
    offsets.push_back(off);
    off += (t.nbytes + align - 1) / align * align;
  }
  head.resize((head.size() + align - 1) / align * align, '\0');

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail("{}: cannot create: {}", tmp, std::strerror(errno));
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  static const char zeros[256] = {};
  ProgressUpdate up{"write", 0, 0, 0, static_cast<int>(tensors_.size())};
  for (const auto& t : tensors_) up.total += t.nbytes;
  for (const auto& t : tensors_) {
    if (!ok) break;
    ok = t.nbytes == 0 || std::fwrite(t.data, 1, t.nbytes, f) == t.nbytes;
    up.done += t.nbytes;
    ++up.items;
    if (ok && progress) progress(up);
    size_t pad = (align - t.nbytes % align) % align;
    while (ok && pad) {
      const size_t n = std::min(pad, sizeof(zeros));
      ok = std::fwrite(zeros, 1, n, f) == n;
      pad -= n;
    }
  }
  const int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) ok = false;
  if (!ok) {
    std::remove(tmp.c_str());
    fail("{}: write failed: {}", path, std::strerror(err ? err : EIO));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail("{}: cannot rename {} into place: {}", path, tmp, ec.message());
  }
}

}  // namespace ferrum::gguf
