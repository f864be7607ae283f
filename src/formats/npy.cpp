#include "formats/npy.h"

#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/fail.h"

namespace ferrum::npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr int64_t kMaxElements = int64_t(1) << 40;  // far beyond any file ferrum reads

// The header is a Python dict literal, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
// This parses exactly that subset: quoted-string keys; string, True/False or integer-tuple values.
struct HeaderParser {
  std::string_view s;
  const std::string& name;
  size_t i = 0;

  [[noreturn]] void bad(const std::string& what) const {
    fail("{}: malformed .npy header ({} at offset {}): {}", name, what, i, std::string(s));
  }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  std::string str() {
    ws();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) bad("expected a quoted string");
    const char q = s[i++];
    const size_t end = s.find(q, i);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string out(s.substr(i, end - i));
    i = end + 1;
    return out;
  }
  bool word(std::string_view w) {
    ws();
    if (s.substr(i, w.size()) == w) {
      i += w.size();
      return true;
    }
    return false;
  }
  std::vector<int64_t> tuple() {
    if (!eat('(')) bad("expected a shape tuple");
    std::vector<int64_t> dims;
    while (!eat(')')) {
      ws();
      if (i >= s.size() || s[i] < '0' || s[i] > '9') bad("expected a non-negative dimension");
      int64_t v = 0;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        v = v * 10 + (s[i++] - '0');
        if (v > kMaxElements) bad("dimension too large");
      }
      if (i < s.size() && s[i] == 'L') ++i;  // Python 2 long
      dims.push_back(v);
      if (!eat(',')) {
        if (!eat(')')) bad("expected ',' or ')' in the shape");
        break;
      }
    }
    return dims;
  }
};

}  // namespace

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

void write_f32(const std::string& path, const float* data, std::span<const int64_t> shape) {
  std::string header =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': {}, }}", shape_string(shape));
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::ofstream f(path, std::ios::binary);
  if (!f) fail("{}: cannot open for writing", path);
  const uint16_t hlen = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(hlen & 0xff));
  f.put(static_cast<char>(hlen >> 8));
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(float)));
  f.close();
  if (!f) fail("{}: write failed", path);
}

void write_f32(const std::string& path, const std::vector<float>& data, int64_t rows, int64_t cols) {
  FERRUM_ASSERT(static_cast<int64_t>(data.size()) == rows * cols, "{} floats for ({}, {})", data.size(), rows,
                cols);
  const int64_t shape[2] = {rows, cols};
  write_f32(path, data.data(), shape);
}

Array parse_f32(std::string_view raw, const std::string& name) {
  if (raw.size() < 10 || raw.substr(0, kMagicLen) != std::string_view(kMagic, kMagicLen))
    fail("{}: not a .npy file (bad magic)", name);
  const int major = static_cast<uint8_t>(raw[6]), minor = static_cast<uint8_t>(raw[7]);
  if (major < 1 || major > 3 || minor != 0)
    fail("{}: unsupported .npy format version {}.{}", name, major, minor);
  size_t hlen = 0, off = 0;
  if (major == 1) {
    hlen = static_cast<uint8_t>(raw[8]) | (static_cast<size_t>(static_cast<uint8_t>(raw[9])) << 8);
    off = 10;
  } else {
    if (raw.size() < 12) fail("{}: truncated .npy header", name);
    for (int k = 0; k < 4; ++k) hlen |= static_cast<size_t>(static_cast<uint8_t>(raw[8 + k])) << (8 * k);
    off = 12;
  }
  if (hlen > raw.size() - off) fail("{}: truncated .npy header ({} bytes announced)", name, hlen);
  HeaderParser p{raw.substr(off, hlen), name};
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> shape;
  if (!p.eat('{')) p.bad("expected '{'");
  while (!p.eat('}')) {
    const std::string key = p.str();
    if (!p.eat(':')) p.bad("expected ':'");
    if (key == "descr") {
      descr = p.str();
    } else if (key == "fortran_order") {
      if (p.word("True"))
        fortran = true;
      else if (p.word("False"))
        fortran = false;
      else
        p.bad("fortran_order must be True or False");
    } else if (key == "shape") {
      shape = p.tuple();
    } else {
      p.bad("unknown key '" + key + "'");
    }
    if (!p.eat(',')) {
      if (!p.eat('}')) p.bad("expected ',' or '}'");
      break;
    }
  }
  p.ws();
  if (p.i != p.s.size()) p.bad("text after the header dict");
  if (!descr || !fortran || !shape) p.bad("missing 'descr', 'fortran_order' or 'shape'");
  if (*descr != "<f4")
    fail("{}: dtype '{}' is not little-endian float32 ('<f4'); save the array with .astype('<f4')", name,
         *descr);
  if (*fortran) fail("{}: the array is in Fortran order; save a C-order array (np.ascontiguousarray)", name);
  int64_t count = 1;
  for (int64_t d : *shape) {
    if (d != 0 && count > kMaxElements / d) fail("{}: shape {} is too large", name, shape_string(*shape));
    count *= d;
  }
  const size_t want = static_cast<size_t>(count) * sizeof(float), have = raw.size() - off - hlen;
  if (have != want)
    fail("{}: shape {} needs {} bytes of float32 data, the file has {}", name, shape_string(*shape), want,
         have);
  Array a;
  a.shape = std::move(*shape);
  a.data.resize(count);
  if (count) std::memcpy(a.data.data(), raw.data() + off + hlen, want);
  return a;
}

Array read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("{}: cannot open: {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail("{}: read failed", path);
  const std::string raw = ss.str();
  return parse_f32(raw, path);
}

}  // namespace ferrum::npy
