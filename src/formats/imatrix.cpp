#include "formats/imatrix.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/fail.h"
#include "formats/gguf.h"

namespace ferrum {
namespace {

void check_values(const std::string& path, const std::string& name, const std::vector<float>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]) || v[i] < 0)
      fail("{}: importance matrix entry '{}' has a bad value {} at {} (must be finite and >= 0)", path, name,
           v[i], i);
}

std::vector<float> floats_of(const gguf::File& f, const TensorView& t) {
  if (t.type != DType::F32)
    fail("{}: importance matrix tensor '{}' has type {}, expected F32", f.path(), t.name, dtype_name(t.type));
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  std::memcpy(v.data(), t.data, v.size() * sizeof(float));
  return v;
}

bool strip_suffix(std::string& s, const std::string& suffix) {
  if (s.size() <= suffix.size() || s.compare(s.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  s.resize(s.size() - suffix.size());
  return true;
}

// GGUF: each entry's sums divided by its matrix's count (an unseen expert's columns weigh 1, as
// llama-quantize does).
void read_gguf(const std::string& path, ImportanceMatrix& m) {
  auto f = gguf::File::open(path);
  std::map<std::string, std::pair<const TensorView*, const TensorView*>> parts;
  for (const TensorView& t : f->tensors()) {
    std::string name = t.name;
    if (strip_suffix(name, ".in_sum2"))
      parts[name].first = &t;
    else if (strip_suffix(name, ".counts"))
      parts[name].second = &t;
    else
      fail("{}: tensor '{}' is not part of an importance matrix (expected <name>.in_sum2 and <name>.counts)",
           path, t.name);
  }
  if (parts.empty()) fail("{}: the importance matrix has no entries", path);
  for (const auto& [name, p] : parts) {
    if (!p.first || !p.second)
      fail("{}: importance matrix entry '{}' lacks its {}", path, name, p.first ? "counts" : "sums");
    std::vector<float> sums = floats_of(*f, *p.first);
    const std::vector<float> counts = floats_of(*f, *p.second);
    if (counts.empty() || sums.empty() || sums.size() % counts.size() != 0)
      fail("{}: importance matrix entry '{}' has {} sums for {} counts", path, name, sums.size(),
           counts.size());
    const size_t cols = sums.size() / counts.size();
    for (size_t e = 0; e < counts.size(); ++e) {
      if (!std::isfinite(counts[e]) || counts[e] < 0)
        fail("{}: importance matrix entry '{}' has a bad count {}", path, name, counts[e]);
      const float count = std::round(counts[e]);
      for (size_t i = 0; i < cols; ++i) sums[e * cols + i] = count > 0 ? sums[e * cols + i] / count : 1.0f;
    }
    check_values(path, name, sums);
    m.entries[name] = std::move(sums);
  }
  if (f->has("imatrix.datasets")) m.datasets = f->get_string_array("imatrix.datasets");
  m.chunk_count = static_cast<int64_t>(f->find_uint("imatrix.chunk_count").value_or(0));
}

// The binary .dat format: int32 entry count; per entry int32 name length, the name, int32 call
// count, int32 value count, float values (sums already divided per call, times the call count);
// then optionally int32 chunk count, int32 dataset name length and the name.
class DatReader {
 public:
  explicit DatReader(const std::string& path) : path_(path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open the importance matrix file", path);
    bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  int32_t i32(const char* what) {
    int32_t v;
    take(&v, 4, what);
    return v;
  }
  std::string str(int32_t n, const char* what) {
    if (n < 0 || static_cast<size_t>(n) > left())
      fail("{}: bad {} length {} at byte {}", path_, what, n, pos_);
    std::string s(bytes_.data() + pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  void take(void* dst, size_t n, const char* what) {
    if (n > left()) fail("{}: importance matrix truncated reading {} at byte {}", path_, what, pos_);
    std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
  }
  size_t left() const { return bytes_.size() - pos_; }

 private:
  std::string path_;
  std::string bytes_;
  size_t pos_ = 0;
};

void read_dat(const std::string& path, ImportanceMatrix& m) {
  DatReader r(path);
  const int32_t n = r.i32("the entry count");
  if (n < 1) fail("{}: the importance matrix has no entries (count {})", path, n);
  for (int32_t i = 0; i < n; ++i) {
    std::string name = r.str(r.i32("a name length"), "name");
    const int32_t calls = r.i32("a call count");
    const int32_t nval = r.i32("a value count");
    if (nval < 1 || static_cast<size_t>(nval) > r.left() / 4)
      fail("{}: importance matrix entry '{}' has a bad value count {}", path, name, nval);
    std::vector<float> v(static_cast<size_t>(nval));
    r.take(v.data(), v.size() * 4, "values");
    if (calls > 0)
      for (float& x : v) x /= static_cast<float>(calls);
    check_values(path, name, v);
    m.entries[std::move(name)] = std::move(v);
  }
  if (r.left() >= 4) m.chunk_count = r.i32("the chunk count");
  if (r.left() >= 4) {
    const int32_t len = r.i32("the dataset name length");
    if (len > 0) m.datasets.push_back(r.str(len, "dataset name"));
  }
}

}  // namespace

const float* ImportanceMatrix::find(const std::string& tensor, int64_t cols, int64_t n_mat) const {
  auto it = entries.find(tensor);
  if (it == entries.end()) return nullptr;
  if (static_cast<int64_t>(it->second.size()) != cols * n_mat)
    fail("{}: importance matrix entry '{}' has {} values, the tensor has {} columns x {} matrices", path,
         tensor, it->second.size(), cols, n_mat);
  return it->second.data();
}

ImportanceMatrix read_imatrix(const std::string& path) {
  ImportanceMatrix m;
  m.path = path;
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open the importance matrix file", path);
  in.read(magic, 4);
  if (in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0)
    read_gguf(path, m);
  else
    read_dat(path, m);
  return m;
}

}  // namespace ferrum
