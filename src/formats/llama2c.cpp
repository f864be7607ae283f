#include "formats/llama2c.h"

#include <cstring>

#include "core/fail.h"

namespace ferrum::llama2c {
namespace {

constexpr size_t kHeaderBytes = 7 * sizeof(int32_t);

int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

Checkpoint Checkpoint::open(const std::string& path) {
  Checkpoint c;
  c.map_ = MappedFile(path);
  const uint8_t* base = c.map_.data();
  const size_t size = c.map_.size();
  if (size < kHeaderBytes)
    fail("{}: too small for a llama2.c checkpoint: {} bytes, the header alone needs {}", path, size,
         kHeaderBytes);
  if (std::memcmp(base, "ak42", 4) == 0)
    fail(
        "{}: this is a llama2.c 'ak42' versioned export (version {}); only the legacy checkpoint format is "
        "supported",
        path, load_i32(base + 4));
  int32_t h[7];
  for (int i = 0; i < 7; ++i) h[i] = load_i32(base + 4 * i);
  static const char* kNames[7] = {"dim",        "hidden_dim", "n_layers", "n_heads",
                                  "n_kv_heads", "vocab_size", "seq_len"};
  for (int i = 0; i < 7; ++i)
    if (h[i] == 0 || (h[i] < 0 && i != 5) || h[i] == INT32_MIN)
      fail("{}: header field {} (offset {}) is {}, expected a positive value", path, kNames[i], 4 * i, h[i]);
  Config& cfg = c.cfg_;
  cfg.dim = h[0];
  cfg.hidden_dim = h[1];
  cfg.n_layers = h[2];
  cfg.n_heads = h[3];
  cfg.n_kv_heads = h[4];
  cfg.shared_classifier = h[5] > 0;
  cfg.vocab_size = h[5] > 0 ? h[5] : -h[5];
  cfg.seq_len = h[6];
  if (cfg.dim % cfg.n_heads != 0)
    fail("{}: header dim {} is not a multiple of n_heads {}", path, cfg.dim, cfg.n_heads);
  if (cfg.n_kv_heads > cfg.n_heads || cfg.n_heads % cfg.n_kv_heads != 0)
    fail("{}: header n_heads {} is not a multiple of n_kv_heads {}", path, cfg.n_heads, cfg.n_kv_heads);
  if (cfg.head_dim() % 2 != 0) fail("{}: head size {} is odd, RoPE needs pairs", path, cfg.head_dim());

  // Expected file size, in 128 bits so absurd headers cannot overflow.
  using u128 = unsigned __int128;
  const u128 dim = cfg.dim, hid = cfg.hidden_dim, L = cfg.n_layers, V = cfg.vocab_size, kv = cfg.kv_dim();
  const u128 freq = static_cast<u128>(cfg.seq_len) * (cfg.head_dim() / 2);
  u128 floats =
      V * dim + L * (dim + dim * dim + 2 * dim * kv + dim * dim + dim + 3 * dim * hid) + dim + 2 * freq;
  if (!cfg.shared_classifier) floats += V * dim;
  const u128 expect = kHeaderBytes + floats * 4;
  if (expect != size)
    fail(
        "{}: llama2.c header (dim {}, hidden_dim {}, n_layers {}, n_heads {}, n_kv_heads {}, vocab_size {}, "
        "seq_len {}) "
        "implies a file of {} bytes, but it has {}",
        path, h[0], h[1], h[2], h[3], h[4], h[5], h[6],
        expect > static_cast<u128>(UINT64_MAX) ? UINT64_MAX : static_cast<uint64_t>(expect), size);

  size_t off = kHeaderBytes;
  auto take = [&](std::string name, int64_t ne0, int64_t ne1) {
    TensorView t;
    t.name = std::move(name);
    t.type = DType::F32;
    t.n_dims = ne1 > 1 ? 2 : 1;
    t.ne = {ne0, ne1, 1, 1};
    t.nbytes = static_cast<size_t>(ne0 * ne1) * 4;
    t.data = base + off;
    off += t.nbytes;
    return t;
  };
  c.tok_ = take("token_embedding_table", cfg.dim, cfg.vocab_size);
  c.layers_.resize(cfg.n_layers);
  // Weights are stored per kind, each kind for all layers in a row.
  const auto per_layer = [&](TensorView Layer::*m, const char* name, int64_t ne0, int64_t ne1) {
    for (int l = 0; l < cfg.n_layers; ++l) c.layers_[l].*m = take(fmt::format("{}[{}]", name, l), ne0, ne1);
  };
  per_layer(&Layer::rms_att, "rms_att_weight", cfg.dim, 1);
  per_layer(&Layer::wq, "wq", cfg.dim, cfg.dim);
  per_layer(&Layer::wk, "wk", cfg.dim, cfg.kv_dim());
  per_layer(&Layer::wv, "wv", cfg.dim, cfg.kv_dim());
  per_layer(&Layer::wo, "wo", cfg.dim, cfg.dim);
  per_layer(&Layer::rms_ffn, "rms_ffn_weight", cfg.dim, 1);
  per_layer(&Layer::w1, "w1", cfg.dim, cfg.hidden_dim);
  per_layer(&Layer::w2, "w2", cfg.hidden_dim, cfg.dim);
  per_layer(&Layer::w3, "w3", cfg.dim, cfg.hidden_dim);
  c.rms_final_ = take("rms_final_weight", cfg.dim, 1);
  off += static_cast<size_t>(2 * freq * 4);  // freq_cis_real / freq_cis_imag: unused (RoPE is recomputed)
  if (!cfg.shared_classifier) c.wcls_ = take("wcls", cfg.dim, cfg.vocab_size);
  FERRUM_ASSERT(off == size, "llama2.c layout walked {} of {} bytes", off, size);
  return c;
}

Tokenizer read_tokenizer(const std::string& path, std::optional<int32_t> n_tokens) {
  MappedFile map(path);
  const uint8_t* p = map.data();
  const size_t size = map.size();
  if (size < 4) fail("{}: too small for a llama2.c tokenizer: {} bytes", path, size);
  Tokenizer t;
  t.max_token_length = load_i32(p);
  if (t.max_token_length <= 0)
    fail("{}: max_token_length at offset 0 is {}, expected a positive value", path, t.max_token_length);
  size_t off = 4;
  if (n_tokens) {
    if (*n_tokens < 0) fail("{}: asked for {} tokens", path, *n_tokens);
    if (static_cast<size_t>(*n_tokens) > (size - 4) / 8)
      fail("{}: {} tokens need at least {} bytes, but the file has only {}", path, *n_tokens,
           4 + 8 * static_cast<uint64_t>(*n_tokens), size);
    t.tokens.reserve(*n_tokens);
    t.scores.reserve(*n_tokens);
  }
  while (n_tokens ? t.tokens.size() < static_cast<size_t>(*n_tokens) : off < size) {
    const size_t i = t.tokens.size();
    if (size - off < 8)
      fail("{}: truncated at offset {}: token {} needs a score and a length (8 bytes), {} left", path, off, i,
           size - off);
    float score;
    std::memcpy(&score, p + off, 4);
    const int32_t len = load_i32(p + off + 4);
    if (len < 0 || len > t.max_token_length)
      fail("{}: token {} at offset {} has length {}, expected 0..{} (max_token_length)", path, i, off + 4,
           len, t.max_token_length);
    if (static_cast<size_t>(len) > size - off - 8)
      fail("{}: token {} at offset {} needs {} bytes, but only {} are left", path, i, off + 8, len,
           size - off - 8);
    t.scores.push_back(score);
    t.tokens.emplace_back(reinterpret_cast<const char*>(p + off + 8), len);
    off += 8 + static_cast<size_t>(len);
  }
  if (off != size)
    fail("{}: {} unexpected bytes after the {} tokens (at offset {})", path, size - off, t.tokens.size(),
         off);
  return t;
}

}  // namespace ferrum::llama2c
