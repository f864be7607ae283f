#include "formats/family_fields.h"

#include <algorithm>

#include "core/fail.h"

namespace ferrum {

int GgufKeys::opt_int(const char* k, int64_t def) const {
  const std::optional<uint64_t> v = f.find_uint(key(k));
  if (v && *v > static_cast<uint64_t>(INT32_MAX))
    fail("{}: metadata key '{}' is {}, too large", f.path(), key(k), *v);
  return static_cast<int>(v ? static_cast<int64_t>(*v) : def);
}

int GgufKeys::req_int(const char* k) const {
  f.get_uint(key(k));
  return opt_int(k, 0);
}

namespace hf {
namespace {
int as_int(const Config& c, const char* k, int64_t v) {
  if (v < INT32_MIN || v > INT32_MAX) fail("{}: field '{}' is {}, out of range", c.path(), k, v);
  return static_cast<int>(v);
}
}  // namespace

int hf_int(const Config& c, const char* k) {
  return as_int(c, k, c.get_int(k));
}

int hf_int_or(const Config& c, const char* k, int64_t def) {
  return as_int(c, k, c.find_int(k).value_or(def));
}

bool read_layer_types(const Config& c, ModelConfig& m) {
  const auto types = c.json().find("layer_types");
  if (types == c.json().end() || !types->is_array()) return false;
  if (types->size() != static_cast<size_t>(m.n_layer))
    fail("{}: layer_types has {} entries for {} layers", c.path(), types->size(), m.n_layer);
  for (const auto& t : *types) {
    const std::string s = t.is_string() ? t.get<std::string>() : "";
    if (s != "sliding_attention" && s != "full_attention")
      fail("{}: layer_types holds {}, expected sliding_attention or full_attention", c.path(), t.dump());
    m.swa_layers.push_back(s == "sliding_attention");
  }
  return true;
}

}  // namespace hf

std::vector<uint8_t> swa_layers_every(int n_layer, int period) {
  std::vector<uint8_t> v;
  for (int l = 0; l < n_layer; ++l) v.push_back(period == 0 || l % period < period - 1);
  return v;
}

std::vector<uint8_t> smollm3_rope_layers(int n_layer) {
  std::vector<uint8_t> r(static_cast<size_t>(std::max(n_layer, 0)));
  for (int l = 0; l < n_layer; ++l) r[static_cast<size_t>(l)] = (l + 1) % 4 != 0;
  return r;
}

}  // namespace ferrum
