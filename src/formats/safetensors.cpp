#include "formats/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/fail.h"

namespace ferrum::safetensors {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kMaxHeader = 100u << 20;  // the safetensors spec caps the header at 100 MB

struct DtypeMap {
  const char* name;
  DType type;
};
constexpr DtypeMap kDtypes[] = {{"F32", DType::F32},
                                {"F16", DType::F16},
                                {"BF16", DType::BF16},
                                {"I32", DType::I32},  // GPTQ/AWQ packed weights
                                {"U8", DType::I8}};   // raw bytes: gpt-oss's MXFP4 blocks and scales

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("{}: cannot open", path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

void Tensors::add_file(const std::string& path) {
  MappedFile map(path);
  const uint8_t* base = map.data();
  const size_t size = map.size();
  if (size < 8)
    fail("{}: not a safetensors file: {} bytes, expected at least an 8-byte header length", path, size);
  uint64_t hlen;
  std::memcpy(&hlen, base, 8);
  if (hlen > size - 8)
    fail("{}: safetensors header length {} at offset 0 exceeds the file size {}", path, hlen, size);
  if (hlen > kMaxHeader) fail("{}: safetensors header length {} is larger than the 100 MB limit", path, hlen);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(reinterpret_cast<const char*>(base + 8),
                                   reinterpret_cast<const char*>(base + 8 + hlen));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: bad safetensors JSON header (bytes 8..{}): {}", path, 8 + hlen, e.what());
  }
  if (!header.is_object())
    fail("{}: safetensors header is a JSON {}, expected an object", path, header.type_name());
  const size_t data_start = 8 + hlen;
  const size_t data_size = size - data_start;

  const size_t file_idx = maps_.size();
  const size_t first = tensors_.size();
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    if (!info.is_object())
      fail("{}: safetensors entry for tensor '{}' is a JSON {}, expected an object", path, name,
           info.type_name());
    const auto dt = info.find("dtype");
    if (dt == info.end() || !dt->is_string()) fail("{}: tensor '{}' has no string field 'dtype'", path, name);
    const std::string dts = dt->get<std::string>();
    const DtypeMap* m = nullptr;
    for (const auto& d : kDtypes)
      if (dts == d.name) m = &d;
    const auto sh = info.find("shape");
    if (sh == info.end() || !sh->is_array()) fail("{}: tensor '{}' has no array field 'shape'", path, name);
    if (sh->size() > 4)
      fail("{}: tensor '{}' has {} dimensions, at most 4 are supported", path, name, sh->size());
    const auto offs = info.find("data_offsets");
    if (offs == info.end() || !offs->is_array() || offs->size() != 2 || !(*offs)[0].is_number_unsigned() ||
        !(*offs)[1].is_number_unsigned())
      fail("{}: tensor '{}' needs 'data_offsets': [begin, end] with non-negative integers", path, name);
    const uint64_t begin = (*offs)[0].get<uint64_t>(), end = (*offs)[1].get<uint64_t>();
    if (end < begin || end > data_size)
      fail("{}: tensor '{}' has data_offsets [{}, {}], outside the {} data bytes of the file", path, name,
           begin, end, data_size);
    if (!m) {
      // Kept out of the tensor list (e.g. BERT's I64 position_ids buffer); using it is an error.
      unsupported_[name] = dts;
      continue;
    }

    TensorView t;
    t.name = name;
    t.type = m->type;
    t.n_dims = static_cast<int>(sh->size());
    unsigned __int128 count = 1;
    for (size_t d = 0; d < sh->size(); ++d) {
      const auto& v = (*sh)[d];
      if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 ||
          v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail("{}: tensor '{}' has shape {}: dimension {} must be a positive integer", path, name, sh->dump(),
             d);
      // Reverse: safetensors lists the outermost dimension first, GGUF the contiguous one.
      t.ne[sh->size() - 1 - d] = v.get<int64_t>();
      count *= v.get<uint64_t>();
      if (count > (static_cast<unsigned __int128>(1) << 64)) break;
    }
    const unsigned __int128 nbytes = count * dtype_info(m->type).type_size;
    if (nbytes != end - begin)
      fail("{}: tensor '{}' ({} {}) needs {} bytes, but its data_offsets [{}, {}] span {}", path, name, dts,
           sh->dump(),
           nbytes > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max()
                                                         : static_cast<uint64_t>(nbytes),
           begin, end, end - begin);
    if (index_.count(name))
      fail("{}: tensor '{}' appears twice (also in {})", path, name,
           maps_[tensor_file_[index_.find(name)->second]].path());
    t.data = base + data_start + begin;
    t.nbytes = static_cast<size_t>(nbytes);
    tensors_.push_back(std::move(t));
    tensor_file_.push_back(file_idx);
  }
  // File order = data order (the JSON object itself is unordered).
  std::stable_sort(tensors_.begin() + static_cast<ptrdiff_t>(first), tensors_.end(),
                   [](const TensorView& a, const TensorView& b) { return a.data < b.data; });
  for (size_t i = first; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
  maps_.push_back(std::move(map));
}

Tensors Tensors::open_file(const std::string& path) {
  Tensors t;
  t.source_ = path;
  t.add_file(path);
  return t;
}

Tensors Tensors::open_dir(const std::string& dir) {
  Tensors t;
  t.source_ = dir;
  if (!fs::is_directory(dir)) fail("{}: not a directory", dir);
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_text(index.string()));
    } catch (const nlohmann::json::exception& e) {
      fail("{}: bad JSON: {}", index.string(), e.what());
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      fail("{}: expected an object with a 'weight_map' object", index.string());
    std::vector<std::string> shards;
    std::set<std::string> seen;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) fail("{}: weight_map entry '{}' is not a string", index.string(), name);
      const std::string f = file.get<std::string>();
      if (f.find('/') != std::string::npos || f == "..")
        fail("{}: weight_map entry '{}' names shard '{}' outside the directory", index.string(), name, f);
      if (seen.insert(f).second) shards.push_back(f);
    }
    std::sort(shards.begin(), shards.end());
    for (const auto& s : shards) t.add_file((fs::path(dir) / s).string());
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (t.unsupported_.count(name)) continue;
      const auto it = t.index_.find(name);
      if (it == t.index_.end())
        fail("{}: tensor '{}' is listed in the weight_map (shard {}) but missing from the shards",
             index.string(), name, file.get<std::string>());
      if (fs::path(t.maps_[t.tensor_file_[it->second]].path()).filename() != file.get<std::string>())
        fail("{}: tensor '{}' is listed in shard {} but found in {}", index.string(), name,
             file.get<std::string>(), t.maps_[t.tensor_file_[it->second]].path());
    }
    return t;
  }
  const fs::path single = fs::path(dir) / "model.safetensors";
  if (fs::exists(single)) {
    t.add_file(single.string());
    return t;
  }
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
  if (files.empty())
    fail("{}: no model.safetensors, model.safetensors.index.json or *.safetensors file", dir);
  std::sort(files.begin(), files.end());
  for (const auto& f : files) t.add_file(f);
  return t;
}

void Tensors::check_supported(std::string_view name) const {
  const auto it = unsupported_.find(name);
  if (it != unsupported_.end())
    fail("{}: tensor '{}' has dtype {}, unsupported (only F32, F16, BF16, I32 and U8 are)", source_, name,
         it->second);
}

const TensorView* Tensors::find(std::string_view name) const {
  check_supported(name);
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorView& Tensors::get(std::string_view name) const {
  const TensorView* t = find(name);
  if (!t) fail("{}: tensor '{}' is missing", source_, name);
  return *t;
}

const std::string& Tensors::file_of(std::string_view name) const {
  check_supported(name);
  auto it = index_.find(name);
  if (it == index_.end()) fail("{}: tensor '{}' is missing", source_, name);
  return maps_[tensor_file_[it->second]].path();
}

std::vector<std::string> Tensors::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& t : tensors_) out.push_back(t.name);
  return out;
}

}  // namespace ferrum::safetensors
