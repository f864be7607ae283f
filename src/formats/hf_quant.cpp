#include "formats/hf_quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <exception>
#include <numeric>
#include <optional>
#include <thread>
#include <vector>

#include "core/ascii.h"
#include "core/fail.h"
#include "core/fp16.h"
#include "core/quant.h"
#include "core/quant_q4z.h"

namespace ferrum::hfquant {
namespace {

// Typed reads of the quantization_config object; errors name "<where>.<field>".
class Fields {
 public:
  Fields(const nlohmann::json& j, const std::string& where) : j_(j), where_(where) {}

  std::optional<int64_t> integer(std::string_view k) const {
    const nlohmann::json* v = find(k);
    if (!v) return std::nullopt;
    if (v->is_number_integer()) return v->get<int64_t>();
    if (v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>() &&
        std::fabs(v->get<double>()) < 1e15)
      return static_cast<int64_t>(v->get<double>());
    wrong(k, *v, "an integer");
  }
  std::optional<bool> boolean(std::string_view k) const {
    const nlohmann::json* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) wrong(k, *v, "true or false");
    return v->get<bool>();
  }
  std::optional<std::string> string(std::string_view k) const {
    const nlohmann::json* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong(k, *v, "a string");
    return v->get<std::string>();
  }

 private:
  const nlohmann::json* find(std::string_view k) const {
    const auto it = j_.find(k);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  [[noreturn]] void wrong(std::string_view k, const nlohmann::json& v, const char* expected) const {
    fail("{}.{} is a JSON {}, expected {}", where_, k, v.type_name(), expected);
  }
  const nlohmann::json& j_;
  const std::string& where_;
};

void read_gptq_fields(const Fields& f, QuantConfig& q) {
  if (q.bits != 4 && q.bits != 8)
    fail("{}.bits is {}: ferrum runs 4-bit and 8-bit GPTQ checkpoints", q.where, q.bits);
  q.desc_act = f.boolean("desc_act").value_or(false);
  auto format = f.string("checkpoint_format");
  if (!format) format = f.string("format");
  const std::string fmt_name = ascii_lower(format.value_or("gptq"));
  if (fmt_name == "gptq")
    q.zeros_minus_one = true;
  else if (fmt_name != "gptq_v2")
    fail("{}.checkpoint_format is '{}': ferrum reads the gptq and gptq_v2 formats", q.where, fmt_name);
}

void read_awq_fields(const Fields& f, QuantConfig& q) {
  if (q.bits != 4) fail("{}.bits is {}: ferrum runs 4-bit AWQ checkpoints", q.where, q.bits);
  if (!f.boolean("zero_point").value_or(true))
    fail("{}.zero_point is false: ferrum runs AWQ checkpoints with zero points", q.where);
  const std::string version = ascii_lower(f.string("version").value_or("gemm"));
  if (version != "gemm")
    fail("{}.version is '{}': ferrum reads AWQ's GEMM layout (version gemm)", q.where, version);
}

// The packed fields of one layer: q of (input column, output row), zero and scale of (group, output).
class PackedLayer {
 public:
  PackedLayer(const QuantConfig& q, const TensorView& qw, const TensorView& qz, const TensorView& sc)
      : awq_(q.method == Method::Awq),
        bits_(q.bits),
        per_(32 / q.bits),
        mask_((1u << q.bits) - 1),
        zero_add_(q.zeros_minus_one ? 1 : 0),
        qw_(qw),
        qz_(qz),
        sc_(sc) {
    out_ = awq_ ? qw.ne[0] * 8 : qw.ne[0];
    in_ = awq_ ? qw.ne[1] : qw.ne[1] * per_;
    groups_ = sc.ne[1];
  }
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  int64_t groups() const { return groups_; }

  int q(int64_t c, int64_t o) const {
    if (awq_) return nibble(word(qw_, c * (out_ / 8) + o / 8), o);
    return (word(qw_, (c / per_) * out_ + o) >> (bits_ * (c % per_))) & mask_;
  }
  int zero(int64_t g, int64_t o) const {
    if (awq_) return nibble(word(qz_, g * (out_ / 8) + o / 8), o);
    const int64_t cols = qz_.ne[0];
    return static_cast<int>((word(qz_, g * cols + o / per_) >> (bits_ * (o % per_))) & mask_) + zero_add_;
  }
  float scale(int64_t g, int64_t o) const {
    const int64_t i = g * out_ + o;
    if (sc_.type == DType::F16) return f16_to_f32(half(sc_, i));
    if (sc_.type == DType::BF16) return bf16_to_f32(half(sc_, i));
    float v;
    std::memcpy(&v, sc_.data + 4 * i, 4);
    return v;
  }

 private:
  // AWQ keeps output 8j + (0,2,4,6,1,3,5,7)[k] in nibble k of word j; output o is in nibble kNibble[o % 8].
  static int nibble(uint32_t w, int64_t o) {
    static constexpr std::array<int, 8> kNibble = {0, 4, 1, 5, 2, 6, 3, 7};
    return static_cast<int>((w >> (4 * kNibble[o % 8])) & 15);
  }
  static uint32_t word(const TensorView& t, int64_t i) {
    uint32_t w;
    std::memcpy(&w, t.data + 4 * i, 4);
    return w;
  }
  static uint16_t half(const TensorView& t, int64_t i) {
    uint16_t h;
    std::memcpy(&h, t.data + 2 * i, 2);
    return h;
  }
  bool awq_;
  int bits_, per_;
  uint32_t mask_;
  int zero_add_;
  const TensorView &qw_, &qz_, &sc_;
  int64_t in_ = 0, out_ = 0, groups_ = 0;
};

void check_shapes(const QuantConfig& q, const std::string& prefix, const TensorView& qw, const TensorView& qz,
                  const TensorView& sc) {
  for (const TensorView* t : {&qw, &qz})
    if (t->type != DType::I32 || t->n_dims != 2)
      fail("{}: tensor '{}' is {} {}, expected a 2-D I32 tensor", q.where, t->name, dtype_name(t->type),
           t->shape_string());
  if ((sc.type != DType::F16 && sc.type != DType::BF16 && sc.type != DType::F32) || sc.n_dims != 2)
    fail("{}: tensor '{}' is {} {}, expected a 2-D F16 tensor", q.where, sc.name, dtype_name(sc.type),
         sc.shape_string());
  const int64_t per = 32 / q.bits;
  const bool awq = q.method == Method::Awq;
  const int64_t out = awq ? qw.ne[0] * 8 : qw.ne[0];
  const int64_t in = awq ? qw.ne[1] : qw.ne[1] * per;
  const int64_t zcols = awq ? out / 8 : out / per;
  if (sc.ne[0] != out || qz.ne[0] != zcols || qz.ne[1] != sc.ne[1] || (!awq && out % per))
    fail("{}: the shapes of '{}' {}, '{}' {} and '{}' {} do not fit one {}-bit layer of {} outputs", q.where,
         qw.name, qw.shape_string(), qz.name, qz.shape_string(), sc.name, sc.shape_string(), q.bits, out);
  if (in % 32) fail("{}: layer '{}' has {} inputs; ferrum needs a multiple of 32", q.where, prefix, in);
}

// The group of each input column: g_idx, or column / group size.
std::vector<int32_t> column_groups(const QuantConfig& q, const safetensors::Tensors& st,
                                   const std::string& prefix, int64_t in, int64_t groups) {
  std::vector<int32_t> g(static_cast<size_t>(in));
  const TensorView* gi = q.method == Method::Gptq ? st.find(prefix + ".g_idx") : nullptr;
  if (gi) {
    if (gi->type != DType::I32 || gi->n_elements() != in)
      fail("{}: tensor '{}' is {} {}, expected {} I32 group indices", q.where, gi->name, dtype_name(gi->type),
           gi->shape_string(), in);
    std::memcpy(g.data(), gi->data, g.size() * 4);
  } else {
    const int64_t gs = q.group_size == -1 ? in : q.group_size;
    for (int64_t c = 0; c < in; ++c) g[c] = static_cast<int32_t>(c / gs);
  }
  for (int64_t c = 0; c < in; ++c)
    if (g[c] < 0 || g[c] >= groups)
      fail("{}: input column {} of '{}' is in group {}, but the layer has {} groups ({}.scales)", q.where, c,
           prefix, g[c], groups, prefix);
  return g;
}

// Input columns sorted by group (stable), checked to fill whole 32-column blocks per group.
std::vector<int32_t> block_order(const std::vector<int32_t>& g, const std::string& where,
                                 const std::string& prefix) {
  std::vector<int32_t> order(g.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return g[a] < g[b]; });
  for (size_t b = 0; b < order.size(); b += 32)
    for (size_t k = 1; k < 32; ++k)
      if (g[order[b + k]] != g[order[b]])
        fail(
            "{}: in '{}' input columns {} and {} share a 32-column block but are in groups {} and {} "
            "(g_idx); ferrum needs groups of whole 32-column blocks",
            where, prefix, order[b], order[b + k], g[order[b]], g[order[b + k]]);
  return order;
}

DType exact_type(const QuantConfig& q, const PackedLayer& L, const std::string& prefix, Storage storage) {
  const int mid = 1 << (q.bits - 1);
  for (int64_t g = 0; g < L.groups(); ++g)
    for (int64_t o = 0; o < L.out(); ++o)
      if (L.zero(g, o) != mid) {
        if (q.bits == 8)
          fail(
              "{}: '{}' has zero point {} (group {}, output {}); ferrum runs symmetric 8-bit layers "
              "(every zero point 128, sym true) only",
              q.where, prefix, L.zero(g, o), g, o);
        return storage == Storage::Gguf ? DType::Q5_0 : DType::Q4_Z;
      }
  return q.bits == 8 ? DType::Q8_0 : DType::Q4_0;
}

uint16_t exact_f16(const QuantConfig& q, const PackedLayer& L, int64_t g, int64_t o,
                   const std::string& prefix) {
  const float s = L.scale(g, o);
  const uint16_t h = f32_to_f16(s);
  if (!(f16_to_f32(h) == s) || !std::isfinite(s))
    fail("{}: '{}.scales' holds {} (group {}, output {}), which F16 cannot hold exactly", q.where, prefix, s,
         g, o);
  return h;
}

// One 32-column block of output row o: values q - zero in v (-16..15) with zero point z, written as
// `type`.
void encode_block(DType type, uint16_t d, int z, const int (&v)[32], uint8_t* dst) {
  if (type == DType::Q4_Z) {
    BlockQ4_Z b{{}, static_cast<uint8_t>(z), {}};
    set_q4z_scale(b, d);
    for (int k = 0; k < 16; ++k) b.qs[k] = static_cast<uint8_t>((v[k] + z) | ((v[k + 16] + z) << 4));
    std::memcpy(dst, &b, sizeof b);
  } else if (type == DType::Q8_0) {
    BlockQ8_0 b{d, {}};
    for (int k = 0; k < 32; ++k) b.qs[k] = static_cast<int8_t>(v[k]);
    std::memcpy(dst, &b, sizeof b);
  } else if (type == DType::Q4_0) {
    BlockQ4_0 b{d, {}};
    for (int k = 0; k < 16; ++k) b.qs[k] = static_cast<uint8_t>((v[k] + 8) | ((v[k + 16] + 8) << 4));
    std::memcpy(dst, &b, sizeof b);
  } else {
    BlockQ5_0 b{d, {}, {}};
    uint32_t qh = 0;
    for (int k = 0; k < 32; ++k) qh |= static_cast<uint32_t>(((v[k] + 16) >> 4) & 1) << k;
    std::memcpy(b.qh, &qh, 4);
    for (int k = 0; k < 16; ++k)
      b.qs[k] = static_cast<uint8_t>(((v[k] + 16) & 15) | (((v[k + 16] + 16) & 15) << 4));
    std::memcpy(dst, &b, sizeof b);
  }
}

// Runs fn(begin, end) over [0, rows) split among the cores (the decode of a 7B model's layers
// takes seconds on one); the first error is rethrown.
void for_row_ranges(int64_t rows, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t n =
      std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, std::max<int64_t>(1, rows / 64));
  if (n == 1) return fn(0, rows);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(n);
  for (int64_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        fn(rows * i / n, rows * (i + 1) / n);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

std::string QuantConfig::describe() const {
  if (method == Method::None) return "";
  std::string s = fmt::format("{} {}-bit, group {}", method == Method::Gptq ? "GPTQ" : "AWQ", bits,
                              group_size == -1 ? std::string("per row") : std::to_string(group_size));
  if (desc_act) s += ", act-order";
  return s;
}

QuantConfig read_quant_config(const hf::Config& cfg) {
  QuantConfig q;
  const nlohmann::json* obj = cfg.find_object("quantization_config");
  if (!obj) return q;
  q.where = cfg.path() + ": quantization_config";
  const Fields f(*obj, q.where);
  const auto method = f.string("quant_method");
  if (!method) fail("{}.quant_method is missing (gptq or awq)", q.where);
  const std::string m = ascii_lower(*method);
  if (m == "mxfp4") return QuantConfig{};  // gpt-oss's experts: MXFP4 blocks read as they are (hf_gpt_oss.h)
  if (m == "gptq")
    q.method = Method::Gptq;
  else if (m == "awq")
    q.method = Method::Awq;
  else
    fail(
        "{}.quant_method is '{}': ferrum runs GPTQ and AWQ checkpoints (gptq, awq) and gpt-oss's MXFP4 "
        "experts (mxfp4); other formats can be "
        "converted to GGUF with llama.cpp's convert_hf_to_gguf.py",
        q.where, *method);
  auto bits = f.integer("bits");
  if (!bits) bits = f.integer("w_bit");
  if (!bits) fail("{}.bits is missing", q.where);
  q.bits = static_cast<int>(std::clamp<int64_t>(*bits, -1, 1 << 20));
  auto gs = f.integer("group_size");
  if (!gs) gs = f.integer("q_group_size");
  q.group_size = gs.value_or(128);
  if (q.group_size != -1 && (q.group_size <= 0 || q.group_size % 32 != 0))
    fail("{}.group_size is {}: ferrum runs group sizes that are multiples of 32 (32, 64, 128, ...) or -1",
         q.where, q.group_size);
  if (q.method == Method::Gptq)
    read_gptq_fields(f, q);
  else
    read_awq_fields(f, q);
  return q;
}

bool is_quantized(const safetensors::Tensors& st, const std::string& prefix) {
  return st.find(prefix + ".qweight") != nullptr;
}

bool is_quant_part(const std::string& name) {
  for (const char* s : {".qweight", ".qzeros", ".scales", ".g_idx"}) {
    const size_t n = std::strlen(s);
    if (name.size() > n && name.compare(name.size() - n, n, s) == 0) return true;
  }
  return false;
}

TensorView decode_linear(const QuantConfig& q, const safetensors::Tensors& st, const std::string& prefix,
                         const std::string& name, const std::function<uint8_t*(size_t)>& alloc,
                         Storage storage) {
  const TensorView& qw = st.get(prefix + ".qweight");
  const TensorView& qz = st.get(prefix + ".qzeros");
  const TensorView& sc = st.get(prefix + ".scales");
  check_shapes(q, prefix, qw, qz, sc);
  const PackedLayer L(q, qw, qz, sc);
  const std::vector<int32_t> groups = column_groups(q, st, prefix, L.in(), L.groups());
  const std::vector<int32_t> order = block_order(groups, q.where, prefix);
  const bool reordered = !std::is_sorted(groups.begin(), groups.end());
  const DType type = exact_type(q, L, prefix, storage);

  TensorView v;
  v.name = name;
  v.type = type;
  v.n_dims = 2;
  v.ne = {L.in(), L.out(), 1, 1};
  v.nbytes = v.row_bytes() * static_cast<size_t>(L.out());
  uint8_t* dst = alloc(v.nbytes);
  v.data = dst;
  const size_t block_bytes = row_size(type, 32);
  for_row_ranges(L.out(), [&](int64_t o0, int64_t o1) {
    for (int64_t b = 0; b < L.in() / 32; ++b) {
      const int64_t g = groups[order[32 * b]];
      for (int64_t o = o0; o < o1; ++o) {
        const int z = L.zero(g, o);
        int vals[32];
        for (int k = 0; k < 32; ++k) vals[k] = L.q(order[32 * b + k], o) - z;
        encode_block(type, exact_f16(q, L, g, o, prefix), z, vals, dst + o * v.row_bytes() + b * block_bytes);
      }
    }
  });
  if (reordered) {
    auto* ord = reinterpret_cast<int32_t*>(alloc(order.size() * sizeof(int32_t)));
    std::memcpy(ord, order.data(), order.size() * sizeof(int32_t));
    v.input_order = ord;
  }
  return v;
}

}  // namespace ferrum::hfquant
