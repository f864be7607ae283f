#include "formats/gguf.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <utility>

#include "core/fail.h"
#include "core/utf8.h"

namespace ferrum::gguf {
namespace {

constexpr uint32_t kMaxValueType = static_cast<uint32_t>(ValueType::F64);
constexpr int kMaxDims = 4;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

bool is_integer(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::U16:
    case ValueType::I16:
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::U64:
    case ValueType::I64:
      return true;
    default:
      return false;
  }
}

bool is_signed(ValueType t) {
  return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}

// Loads any integer value as a sign flag + magnitude-preserving pair (u64 for unsigned, i64 for signed).
struct IntVal {
  bool neg;
  uint64_t u;  // valid when !neg
  int64_t i;   // the value when it fits an int64
  bool fits_i64;
};

IntVal load_int(ValueType t, const uint8_t* p) {
  int64_t s = 0;
  uint64_t u = 0;
  switch (t) {
    case ValueType::U8:
      u = load<uint8_t>(p);
      break;
    case ValueType::U16:
      u = load<uint16_t>(p);
      break;
    case ValueType::U32:
      u = load<uint32_t>(p);
      break;
    case ValueType::U64:
      u = load<uint64_t>(p);
      break;
    case ValueType::I8:
      s = load<int8_t>(p);
      break;
    case ValueType::I16:
      s = load<int16_t>(p);
      break;
    case ValueType::I32:
      s = load<int32_t>(p);
      break;
    case ValueType::I64:
      s = load<int64_t>(p);
      break;
    default:
      fail("internal error: load_int on a non-integer type");
  }
  if (is_signed(t)) return {s < 0, static_cast<uint64_t>(s), s, true};
  return {false, u, static_cast<int64_t>(u), u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())};
}

std::string type_string(const File::Entry& e) {
  if (e.type == ValueType::ARRAY) return fmt::format("array[{}]", value_type_name(e.elem_type));
  return value_type_name(e.type);
}

// Bounds-checked cursor over the mapped file.
class Cursor {
 public:
  Cursor(const std::string& path, const uint8_t* data, size_t size) : path_(path), data_(data), size_(size) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  const uint8_t* here() const { return data_ + pos_; }

  template <typename What>
  void need(size_t n, What&& what) const {
    if (n > size_ - pos_)
      fail("{}: truncated file: {} at offset {} needs {} bytes, but the file has only {}", path_, what(),
           pos_, n, size_);
  }
  template <typename T, typename What>
  T read(What&& what) {
    need(sizeof(T), what);
    T v = load<T>(data_ + pos_);
    pos_ += sizeof(T);
    return v;
  }
  template <typename What>
  std::string_view read_string(What&& what) {
    const size_t at = pos_;
    const uint64_t len = read<uint64_t>([&] { return fmt::format("length of {}", what()); });
    if (len > size_ - pos_)
      fail("{}: {} at offset {} has length {}, but only {} bytes are left in the file", path_, what(), at,
           len, size_ - pos_);
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }
  void skip(size_t n) { pos_ += n; }

 private:
  const std::string& path_;
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8:
      return "u8";
    case ValueType::I8:
      return "i8";
    case ValueType::U16:
      return "u16";
    case ValueType::I16:
      return "i16";
    case ValueType::U32:
      return "u32";
    case ValueType::I32:
      return "i32";
    case ValueType::F32:
      return "f32";
    case ValueType::BOOL:
      return "bool";
    case ValueType::STRING:
      return "string";
    case ValueType::ARRAY:
      return "array";
    case ValueType::U64:
      return "u64";
    case ValueType::I64:
      return "i64";
    case ValueType::F64:
      return "f64";
  }
  return "unknown";
}

size_t value_type_size(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL:
      return 1;
    case ValueType::U16:
    case ValueType::I16:
      return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32:
      return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
      return 8;
    default:
      return 0;
  }
}

namespace {

// Reads one key/value pair. Values are not decoded, only located and bounds-checked (every
// string of a string array included, so accessors can decode without checks).
File::Entry parse_entry(Cursor& c, const std::string& path, uint64_t i) {
  File::Entry e;
  e.key_offset = c.pos();
  std::string_view key = c.read_string([&] { return fmt::format("key of metadata entry #{}", i); });
  e.key = std::string(key);
  const size_t type_at = c.pos();
  const uint32_t type = c.read<uint32_t>([&] { return fmt::format("type of metadata key '{}'", e.key); });
  if (type > kMaxValueType)
    fail("{}: metadata key '{}' has unknown value type {} at offset {}", path, e.key, type, type_at);
  e.type = static_cast<ValueType>(type);
  if (e.type == ValueType::STRING) {
    e.offset = c.pos();
    c.read_string([&] { return fmt::format("string value of metadata key '{}'", e.key); });
  } else if (e.type == ValueType::ARRAY) {
    const size_t et_at = c.pos();
    const uint32_t et = c.read<uint32_t>([&] { return fmt::format("element type of array '{}'", e.key); });
    if (et > kMaxValueType)
      fail("{}: metadata array '{}' has unknown element type {} at offset {}", path, e.key, et, et_at);
    e.elem_type = static_cast<ValueType>(et);
    if (e.elem_type == ValueType::ARRAY)
      fail("{}: metadata array '{}' at offset {} contains nested arrays, which are not supported", path,
           e.key, et_at);
    const size_t count_at = c.pos();
    e.count = c.read<uint64_t>([&] { return fmt::format("element count of array '{}'", e.key); });
    e.offset = c.pos();
    if (e.elem_type == ValueType::STRING) {
      if (e.count > c.remaining() / 8)
        fail(
            "{}: metadata array '{}' claims {} strings at offset {}, but only {} bytes are left in the "
            "file",
            path, e.key, e.count, count_at, c.remaining());
      // Validate every string length now so accessors can decode without checks.
      for (uint64_t j = 0; j < e.count; ++j) {
        if (c.remaining() < 8 || load<uint64_t>(c.here()) > c.remaining() - 8)
          c.read_string([&] { return fmt::format("string #{} of array '{}'", j, e.key); });  // throws
        c.skip(8 + load<uint64_t>(c.here()));
      }
    } else {
      const size_t es = value_type_size(e.elem_type);
      if (e.count > c.remaining() / es)
        fail(
            "{}: metadata array '{}' claims {} {} values at offset {}, but only {} bytes are left in the "
            "file",
            path, e.key, e.count, value_type_name(e.elem_type), count_at, c.remaining());
      c.skip(e.count * es);
    }
  } else {
    e.offset = c.pos();
    const size_t es = value_type_size(e.type);
    c.need(es, [&] { return fmt::format("value of metadata key '{}'", e.key); });
    c.skip(es);
  }
  return e;
}

// Reads one tensor info; returns the view (data not yet set) and its data offset.
std::pair<TensorView, uint64_t> parse_tensor_info(Cursor& c, const std::string& path, uint64_t i,
                                                  size_t size) {
  TensorView t;
  t.name = std::string(c.read_string([&] { return fmt::format("name of tensor #{}", i); }));
  const size_t nd_at = c.pos();
  const uint32_t n_dims = c.read<uint32_t>([&] { return fmt::format("n_dims of tensor '{}'", t.name); });
  if (n_dims > kMaxDims)
    fail("{}: tensor '{}' has {} dimensions at offset {}, at most {} are supported", path, t.name, n_dims,
         nd_at, kMaxDims);
  t.n_dims = static_cast<int>(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) {
    const size_t ne_at = c.pos();
    const uint64_t ne =
        c.read<uint64_t>([&] { return fmt::format("dimension {} of tensor '{}'", d, t.name); });
    if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail("{}: tensor '{}' has dimension {} = {} at offset {}, expected a positive size", path, t.name, d,
           static_cast<int64_t>(ne), ne_at);
    t.ne[d] = static_cast<int64_t>(ne);
  }
  const size_t type_at = c.pos();
  const uint32_t type = c.read<uint32_t>([&] { return fmt::format("type of tensor '{}'", t.name); });
  const auto info = dtype_info(type);
  if (!info) fail("{}: tensor '{}' has type id {}, unknown (at offset {})", path, t.name, type, type_at);
  t.type = info->type;
  if (t.ne[0] % info->block_size != 0)
    fail("{}: tensor '{}' has row length {}, which is not a multiple of the {} block size {}", path, t.name,
         t.ne[0], info->name, info->block_size);
  // Size in bytes, with overflow checks (each ne <= 2^63, so do it in 128 bits).
  unsigned __int128 nbytes = static_cast<unsigned __int128>(t.ne[0] / info->block_size) * info->type_size;
  for (int d = 1; d < kMaxDims; ++d) {
    nbytes *= static_cast<uint64_t>(t.ne[d]);
    if (nbytes > size) break;  // cannot fit anyway; reported below
  }
  const uint64_t offset = c.read<uint64_t>([&] { return fmt::format("data offset of tensor '{}'", t.name); });
  t.nbytes = nbytes > std::numeric_limits<size_t>::max() ? std::numeric_limits<size_t>::max()
                                                         : static_cast<size_t>(nbytes);
  return {std::move(t), offset};
}

}  // namespace

std::shared_ptr<const File> File::open(const std::string& path) {
  std::shared_ptr<File> f(new File());
  f->path_ = path;
  f->map_ = MappedFile(path);
  f->parse();
  return f;
}

void File::parse() {
  const std::string& path = path_;
  const uint8_t* base = map_.data();
  const size_t size = map_.size();
  Cursor c(path, base, size);

  if (size < 4) fail("{}: not a GGUF file: only {} bytes, expected the magic 'GGUF' at offset 0", path, size);
  if (std::memcmp(base, "GGUF", 4) != 0)
    fail(
        "{}: not a GGUF file: bad magic {:02x} {:02x} {:02x} {:02x} at offset 0, expected 'GGUF' (47 47 55 "
        "46)",
        path, base[0], base[1], base[2], base[3]);
  c.skip(4);
  version_ = c.read<uint32_t>([] { return "version"; });
  if (version_ == 1)
    fail(
        "{}: GGUF version 1 is not supported (only versions 2 and 3); re-convert the model with a newer tool",
        path);
  if (version_ != 2 && version_ != 3) {
    if ((version_ & 0xffff) == 0)
      fail(
          "{}: GGUF version field at offset 4 is {:#x}: this looks like a big-endian GGUF, which is not "
          "supported",
          path, version_);
    fail("{}: unsupported GGUF version {} at offset 4 (supported: 2 and 3)", path, version_);
  }
  const uint64_t n_tensors = c.read<uint64_t>([] { return "tensor count"; });
  const uint64_t n_kv = c.read<uint64_t>([] { return "metadata count"; });
  // Minimum encoded sizes: a kv pair is key length (8) + type (4) + a 1-byte value; a tensor info
  // is name length (8) + n_dims (4) + type (4) + offset (8). Rejecting impossible counts up front
  // keeps absurd values from turning into huge allocations.
  if (n_kv > c.remaining() / 13)
    fail("{}: metadata count {} at offset 16 is impossible: the file has only {} bytes", path, n_kv, size);
  if (n_tensors > c.remaining() / 24)
    fail("{}: tensor count {} at offset 8 is impossible: the file has only {} bytes", path, n_tensors, size);

  entries_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    Entry e = parse_entry(c, path, i);
    if (entry_index_.count(e.key))
      fail("{}: duplicate metadata key '{}' at offset {}", path, e.key, e.key_offset);
    entry_index_.emplace(e.key, entries_.size());
    entries_.push_back(std::move(e));
  }

  if (const Entry* a = find_entry("general.alignment")) {
    if (!is_integer(a->type))
      fail("{}: metadata key 'general.alignment' has type {}, expected an unsigned integer", path,
           type_string(*a));
    const IntVal v = load_int(a->type, base + a->offset);
    if (v.neg || v.u == 0 || (v.u & (v.u - 1)) != 0 || v.u > (1u << 30))
      fail("{}: general.alignment is {}, expected a power of two", path,
           v.neg ? v.i : static_cast<int64_t>(v.u));
    alignment_ = v.u;
  }

  // Tensor infos.
  std::vector<uint64_t> offsets;
  offsets.reserve(n_tensors);
  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    const size_t info_at = c.pos();
    auto [t, offset] = parse_tensor_info(c, path, i, size);
    if (tensor_index_.count(t.name))
      fail("{}: duplicate tensor name '{}' at offset {}", path, t.name, info_at);
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
    offsets.push_back(offset);
  }

  const size_t end_of_infos = c.pos();
  data_offset_ = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    TensorView& t = tensors_[i];
    const uint64_t off = offsets[i];
    if (off % alignment_ != 0)
      fail("{}: tensor '{}' has data offset {}, which is not a multiple of the alignment {}", path, t.name,
           off, alignment_);
    const unsigned __int128 abs = static_cast<unsigned __int128>(data_offset_) + off;
    if (abs > size || t.nbytes > size - static_cast<size_t>(abs))
      fail("{}: tensor '{}' {} {} needs {} bytes at offset {}, but the file has only {}", path, t.name,
           dtype_name(t.type), t.shape_string(), t.nbytes,
           static_cast<uint64_t>(std::min<unsigned __int128>(abs, std::numeric_limits<uint64_t>::max())),
           size);
    t.data = base + static_cast<size_t>(abs);
  }
}

// ---- metadata access ----

std::vector<std::string> File::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.key);
  return out;
}

const File::Entry* File::find_entry(std::string_view key) const {
  auto it = entry_index_.find(key);
  return it == entry_index_.end() ? nullptr : &entries_[it->second];
}

const File::Entry& File::entry(std::string_view key) const {
  const Entry* e = find_entry(key);
  if (!e) fail("{}: metadata key '{}' is missing", path_, key);
  return *e;
}

const File::Entry& File::array_entry(std::string_view key) const {
  const Entry& e = entry(key);
  if (e.type != ValueType::ARRAY) type_error(e, "array");
  return e;
}

void File::type_error(const Entry& e, std::string_view expected) const {
  fail("{}: metadata key '{}' has type {}, expected {}", path_, e.key, type_string(e), expected);
}

bool File::has(std::string_view key) const {
  return find_entry(key) != nullptr;
}
ValueType File::type_of(std::string_view key) const {
  return entry(key).type;
}
ValueType File::array_type_of(std::string_view key) const {
  return array_entry(key).elem_type;
}
size_t File::array_size(std::string_view key) const {
  return array_entry(key).count;
}

std::optional<std::string> File::find_string(std::string_view key) const {
  const Entry* e = find_entry(key);
  if (!e) return std::nullopt;
  if (e->type != ValueType::STRING) type_error(*e, "string");
  const uint8_t* p = map_.data() + e->offset;
  return std::string(reinterpret_cast<const char*>(p + 8), load<uint64_t>(p));
}
std::string File::get_string(std::string_view key) const {
  entry(key);
  return *find_string(key);
}

std::optional<uint64_t> File::uint_value(const Entry* e) const {
  if (!e) return std::nullopt;
  if (!is_integer(e->type)) type_error(*e, "an unsigned integer");
  const IntVal v = load_int(e->type, map_.data() + e->offset);
  if (v.neg) fail("{}: metadata key '{}' is {}, expected a non-negative value", path_, e->key, v.i);
  return v.u;
}
std::optional<uint64_t> File::find_uint(std::string_view key) const {
  return uint_value(find_entry(key));
}
uint64_t File::get_uint(std::string_view key) const {
  return *uint_value(&entry(key));
}

std::optional<int64_t> File::int_value(const Entry* e) const {
  if (!e) return std::nullopt;
  if (!is_integer(e->type)) type_error(*e, "an integer");
  const IntVal v = load_int(e->type, map_.data() + e->offset);
  if (!v.fits_i64)
    fail("{}: metadata key '{}' is {}, which does not fit a signed 64-bit integer", path_, e->key, v.u);
  return v.i;
}
std::optional<int64_t> File::find_int(std::string_view key) const {
  return int_value(find_entry(key));
}
int64_t File::get_int(std::string_view key) const {
  return *int_value(&entry(key));
}

std::optional<double> File::float_value(const Entry* e) const {
  if (!e) return std::nullopt;
  const uint8_t* p = map_.data() + e->offset;
  if (e->type == ValueType::F32) return load<float>(p);
  if (e->type == ValueType::F64) return load<double>(p);
  if (is_integer(e->type)) {
    const IntVal v = load_int(e->type, p);
    return v.neg ? static_cast<double>(v.i) : static_cast<double>(v.u);
  }
  type_error(*e, "a float");
}
std::optional<double> File::find_float(std::string_view key) const {
  return float_value(find_entry(key));
}
double File::get_float(std::string_view key) const {
  return *float_value(&entry(key));
}

std::optional<bool> File::find_bool(std::string_view key) const {
  const Entry* e = find_entry(key);
  if (!e) return std::nullopt;
  if (e->type != ValueType::BOOL) type_error(*e, "bool");
  return map_.data()[e->offset] != 0;
}
bool File::get_bool(std::string_view key) const {
  entry(key);
  return *find_bool(key);
}

std::vector<std::string_view> File::get_string_array_views(std::string_view key) const {
  const Entry& e = array_entry(key);
  if (e.elem_type != ValueType::STRING) type_error(e, "array[string]");
  std::vector<std::string_view> out;
  out.reserve(e.count);
  const uint8_t* p = map_.data() + e.offset;
  for (uint64_t i = 0; i < e.count; ++i) {  // lengths were validated by parse()
    const uint64_t len = load<uint64_t>(p);
    out.emplace_back(reinterpret_cast<const char*>(p + 8), len);
    p += 8 + len;
  }
  return out;
}

std::vector<std::string> File::get_string_array(std::string_view key) const {
  const auto views = get_string_array_views(key);
  std::vector<std::string> out;
  out.reserve(views.size());
  for (auto v : views) out.emplace_back(v);
  return out;
}

std::vector<float> File::get_float_array(std::string_view key) const {
  const Entry& e = array_entry(key);
  const uint8_t* p = map_.data() + e.offset;
  std::vector<float> out(e.count);
  if (e.elem_type == ValueType::F32) {
    if (e.count) std::memcpy(out.data(), p, e.count * 4);
  } else if (e.elem_type == ValueType::F64) {
    for (uint64_t i = 0; i < e.count; ++i) out[i] = static_cast<float>(load<double>(p + 8 * i));
  } else {
    type_error(e, "array[f32] or array[f64]");
  }
  return out;
}

std::vector<int64_t> File::get_int_array(std::string_view key) const {
  const Entry& e = array_entry(key);
  if (!is_integer(e.elem_type)) type_error(e, "an integer array");
  const uint8_t* p = map_.data() + e.offset;
  const size_t es = value_type_size(e.elem_type);
  std::vector<int64_t> out(e.count);
  for (uint64_t i = 0; i < e.count; ++i) {
    const IntVal v = load_int(e.elem_type, p + es * i);
    if (!v.fits_i64)
      fail("{}: metadata array '{}' element {} is {}, which does not fit a signed 64-bit integer", path_,
           e.key, i, v.u);
    out[i] = v.i;
  }
  return out;
}

std::vector<uint64_t> File::get_uint_array(std::string_view key) const {
  const Entry& e = array_entry(key);
  if (!is_integer(e.elem_type)) type_error(e, "an integer array");
  const uint8_t* p = map_.data() + e.offset;
  const size_t es = value_type_size(e.elem_type);
  std::vector<uint64_t> out(e.count);
  for (uint64_t i = 0; i < e.count; ++i) {
    const IntVal v = load_int(e.elem_type, p + es * i);
    if (v.neg)
      fail("{}: metadata array '{}' element {} is {}, expected a non-negative value", path_, e.key, i, v.i);
    out[i] = v.u;
  }
  return out;
}

std::string_view File::raw_value(std::string_view key) const {
  const Entry& e = entry(key);
  const uint8_t* p = map_.data() + e.offset;
  size_t begin = e.offset, end;
  if (e.type == ValueType::STRING) {
    end = e.offset + 8 + load<uint64_t>(p);
  } else if (e.type == ValueType::ARRAY) {
    begin = e.offset - 12;  // u32 element type + u64 count precede the elements
    const size_t es = value_type_size(e.elem_type);
    if (es) {
      end = e.offset + e.count * es;
    } else {
      for (uint64_t i = 0; i < e.count; ++i) p += 8 + load<uint64_t>(p);
      end = static_cast<size_t>(p - map_.data());
    }
  } else {
    end = e.offset + value_type_size(e.type);
  }
  return std::string_view(reinterpret_cast<const char*>(map_.data() + begin), end - begin);
}

// ---- JSON ----

nlohmann::json File::element_json(ValueType t, const uint8_t* p) const {
  switch (t) {
    case ValueType::F32:
      return load<float>(p);
    case ValueType::F64:
      return load<double>(p);
    case ValueType::BOOL:
      return *p != 0;
    case ValueType::STRING:
      return utf8::sanitize(std::string_view(reinterpret_cast<const char*>(p + 8), load<uint64_t>(p)));
    default: {
      const IntVal v = load_int(t, p);
      if (v.neg) return v.i;
      return v.u;
    }
  }
}

static nlohmann::json array_json(const File& f, const File::Entry& e, size_t limit,
                                 const std::function<nlohmann::json(ValueType, const uint8_t*)>& elem) {
  nlohmann::json arr = nlohmann::json::array();
  const uint8_t* p = f.mapping().data() + e.offset;
  const size_t es = value_type_size(e.elem_type);
  const uint64_t n = std::min<uint64_t>(e.count, limit);
  for (uint64_t i = 0; i < n; ++i) {
    arr.push_back(elem(e.elem_type, p));
    p += es ? es : 8 + load<uint64_t>(p);
  }
  return arr;
}

nlohmann::json File::value_json(std::string_view key) const {
  const Entry& e = entry(key);
  auto elem = [this](ValueType t, const uint8_t* p) { return element_json(t, p); };
  if (e.type == ValueType::ARRAY) return array_json(*this, e, e.count, elem);
  return element_json(e.type, map_.data() + e.offset);
}

nlohmann::json File::metadata_json(size_t max_array) const {
  nlohmann::json out = nlohmann::json::object();
  auto elem = [this](ValueType t, const uint8_t* p) { return element_json(t, p); };
  for (const auto& e : entries_) {
    // Keys are bytes too: a key that is not valid UTF-8 would make dump() throw.
    nlohmann::json& v = out[utf8::sanitize(e.key)];
    if (e.type != ValueType::ARRAY) {
      v = element_json(e.type, map_.data() + e.offset);
    } else if (e.count <= max_array) {
      v = array_json(*this, e, e.count, elem);
    } else {
      v = {{"type", "array"},
           {"element_type", value_type_name(e.elem_type)},
           {"count", e.count},
           {"head", array_json(*this, e, max_array, elem)}};
    }
  }
  return out;
}

// ---- tensors ----

const TensorView* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorView& File::tensor(std::string_view name) const {
  const TensorView* t = find_tensor(name);
  if (!t) fail("{}: tensor '{}' is missing", path_, name);
  return *t;
}

}  // namespace ferrum::gguf
