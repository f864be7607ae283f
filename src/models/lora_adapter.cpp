// LoRA adapters: a file's pairs checked against the base model and put in its Q/K row order, then
// one or more files stacked per layer and fused product (lora_adapter.h).
#include "models/lora_adapter.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/fail.h"
#include "core/fp16.h"
#include "ferrum/model.h"
#include "formats/family.h"

namespace fs = std::filesystem;

namespace ferrum {

const char* lora_target_name(LoraTarget t) {
  switch (t) {
    case LoraTarget::Q:
      return "attn_q";
    case LoraTarget::K:
      return "attn_k";
    case LoraTarget::V:
      return "attn_v";
    case LoraTarget::Qkv:
      return "attn_qkv";
    case LoraTarget::O:
      return "attn_output";
    case LoraTarget::Gate:
      return "ffn_gate";
    case LoraTarget::Up:
      return "ffn_up";
    case LoraTarget::GateUp:
      return "ffn_gate_up";
    case LoraTarget::Down:
      return "ffn_down";
  }
  return "?";
}

LoraSite lora_site(LoraTarget t) {
  switch (t) {
    case LoraTarget::Q:
    case LoraTarget::K:
    case LoraTarget::V:
    case LoraTarget::Qkv:
      return LoraSite::Qkv;
    case LoraTarget::O:
      return LoraSite::Out;
    case LoraTarget::Gate:
    case LoraTarget::Up:
    case LoraTarget::GateUp:
      return LoraSite::GateUp;
    case LoraTarget::Down:
      return LoraSite::Down;
  }
  return LoraSite::Qkv;
}

namespace {

uint64_t next_lora_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

struct TargetShape {
  int64_t in, out, col0;  // inputs, outputs, first output column in the fused product
};

TargetShape target_shape(LoraTarget t, const ModelConfig& c) {
  const int64_t d = c.n_embd, qd = c.q_dim(), kvd = c.kv_dim(), ff = c.n_ff;
  switch (t) {
    case LoraTarget::Q:
      return {d, qd, 0};
    case LoraTarget::K:
      return {d, kvd, qd};
    case LoraTarget::V:
      return {d, kvd, qd + kvd};
    case LoraTarget::Qkv:
      return {d, qd + 2 * kvd, 0};
    case LoraTarget::O:
      return {qd, d, 0};
    case LoraTarget::Gate:
      return {d, ff, 0};
    case LoraTarget::Up:
      return {d, ff, ff};
    case LoraTarget::GateUp:
      return {d, 2 * ff, 0};
    case LoraTarget::Down:
      return {ff, d, 0};
  }
  return {0, 0, 0};
}

bool llama_like(Arch a) {
  return gguf_permutes_qk(a);
}

// Reorders the rows of each head of `m` (rows [row0, row0 + n_head * hd)) between the HF
// rotate-half order and GGUF's interleaved pairs: to_gguf moves row t*hd/2 + j to 2j + t, the
// inverse moves it back (the permutation convert_hf applies to the base's Q/K).
void permute_heads(TensorView& m, int64_t row0, int64_t n_head, int64_t hd, bool to_gguf) {
  const size_t rb = m.row_bytes();
  auto* base = const_cast<uint8_t*>(m.data) + row0 * rb;  // owned copy (copy_matrix)
  std::vector<uint8_t> src(base, base + n_head * hd * rb);
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t j = 0; j < hd / 2; ++j)
      for (int64_t t = 0; t < 2; ++t) {
        const int64_t hf = h * hd + t * hd / 2 + j, gg = h * hd + 2 * j + t;
        std::memcpy(base + (to_gguf ? gg : hf) * rb, src.data() + (to_gguf ? hf : gg) * rb, rb);
      }
}

void check_pair(const LoraFile& f, const LoraPair& p, const ModelConfig& c) {
  if (p.layer < 0 || p.layer >= c.n_layer)
    fail("{}: tensor '{}' is for layer {}, but the model has {} layers", f.source, p.name, p.layer,
         c.n_layer);
  const LoraSite site = lora_site(p.target);
  if (c.n_expert > 0 && (site == LoraSite::GateUp || site == LoraSite::Down))
    fail(
        "{}: tensor '{}' adapts the feed-forward block, which is a mixture of experts in this model (LoRA on "
        "experts is not supported)",
        f.source, p.name);
  const TargetShape s = target_shape(p.target, c);
  const int64_t r = p.a.ne[1];
  if (p.a.ne[0] != s.in || p.b.ne[1] != s.out || p.b.ne[0] != r)
    fail("{}: tensor '{}' pair has A {} and B {}; the model's {} (layer {}) needs A [{}, r] and B [r, {}]",
         f.source, p.name, p.a.shape_string(), p.b.shape_string(), lora_target_name(p.target), p.layer, s.in,
         s.out);
  if (!std::isfinite(p.scale))
    fail("{}: tensor '{}' has a scale that is not finite ({})", f.source, p.name, p.scale);
}

// Puts the Q/K rows of B in the base model's order.
void match_qk_order(LoraPair& p, const ModelConfig& c, bool adapter_permuted) {
  const bool base_permuted = llama_like(c.arch) && c.rope_interleaved;
  if (adapter_permuted == base_permuted) return;
  const bool to_gguf = base_permuted;
  const int64_t hd = c.head_dim;
  if (p.target == LoraTarget::Q || p.target == LoraTarget::Qkv) permute_heads(p.b, 0, c.n_head, hd, to_gguf);
  if (p.target == LoraTarget::K) permute_heads(p.b, 0, c.n_head_kv, hd, to_gguf);
  if (p.target == LoraTarget::Qkv) permute_heads(p.b, c.q_dim(), c.n_head_kv, hd, to_gguf);
}

bool is_gguf_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  f.read(magic, 4);
  return f.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

std::shared_ptr<uint8_t[]> owned(size_t n) {
  auto buf = std::shared_ptr<uint8_t[]>(static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64)),
                                        [](uint8_t* q) { std::free(q); });
  if (!buf) fail("out of memory for a LoRA adapter ({} bytes)", n);
  return buf;
}

// B (out x r) transposed into r rows of out values, same type.
TensorView transposed(const TensorView& b, LoraAdapter& out) {
  const int64_t r = b.ne[0], rows = b.ne[1];
  const size_t es = b.type == DType::F16 ? 2 : 4;
  auto buf = owned(b.nbytes);
  for (int64_t o = 0; o < rows; ++o)
    for (int64_t j = 0; j < r; ++j)
      std::memcpy(buf.get() + (j * rows + o) * es, b.data + (o * r + j) * es, es);
  TensorView t = b;
  t.name = b.name + " (transposed)";
  t.ne = {rows, r, 1, 1};
  t.data = buf.get();
  out.storage.push_back(std::shared_ptr<const void>(buf, buf.get()));
  out.bytes += t.nbytes;
  return t;
}

// The adapter matrices of one layer's site: A rows of every pair stacked (F16 when all are F16).
LoraSiteWeights stack_site(const std::vector<const LoraPair*>& pairs, const ModelConfig& c,
                           LoraAdapter& out) {
  LoraSiteWeights s;
  int64_t rank = 0;
  bool all_f16 = true;
  for (const LoraPair* p : pairs) {
    rank += p->a.ne[1];
    all_f16 = all_f16 && p->a.type == DType::F16;
  }
  const int64_t in = pairs[0]->a.ne[0];
  s.a.name = fmt::format("lora.{}.a", pairs[0]->name);
  s.a.type = all_f16 ? DType::F16 : DType::F32;
  s.a.n_dims = 2;
  s.a.ne = {in, rank, 1, 1};
  s.a.nbytes = row_size(s.a.type, in) * static_cast<size_t>(rank);
  auto buf = owned(s.a.nbytes);
  int64_t r0 = 0;
  for (const LoraPair* p : pairs) {
    uint8_t* dst = buf.get() + r0 * row_size(s.a.type, in);
    if (p->a.type == s.a.type)
      std::memcpy(dst, p->a.data, p->a.nbytes);
    else  // F16 -> F32, exact
      for (int64_t i = 0; i < p->a.n_elements(); ++i)
        reinterpret_cast<float*>(dst)[i] = f16_to_f32(reinterpret_cast<const uint16_t*>(p->a.data)[i]);
    s.slots.push_back({target_shape(p->target, c).col0, r0, transposed(p->b, out), p->scale});
    s.slot_of_rank.insert(s.slot_of_rank.end(), p->a.ne[1], static_cast<int64_t>(s.slots.size() - 1));
    r0 += p->a.ne[1];
  }
  s.a.data = buf.get();
  out.bytes += s.a.nbytes;
  out.storage.push_back(std::shared_ptr<const void>(buf, buf.get()));
  return s;
}

}  // namespace

LoraFile read_lora_file(const std::string& path, const ModelConfig& cfg) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("{}: no such file or directory", path);
  std::string src = path;
  if (!fs::is_directory(path, ec) && !is_gguf_file(path)) {
    const std::string leaf = fs::path(path).filename().string();
    if (leaf != "adapter_config.json" && leaf != "adapter_model.safetensors")
      fail("{}: not a LoRA adapter (a PEFT directory with adapter_config.json, or a GGUF LoRA file)", path);
    src = fs::path(path).parent_path().string();
  }
  LoraFileRaw raw = fs::is_directory(src, ec) ? read_peft_dir(src) : read_gguf_lora(src);
  LoraFile& f = raw.file;
  if (!raw.arch.empty()) {
    const Arch a = parse_arch(raw.arch, f.source);
    if (a != cfg.arch && !(llama_like(a) && llama_like(cfg.arch)))
      fail("{}: the adapter is for a '{}' model (general.architecture), but the model is '{}'", f.source,
           raw.arch, arch_name(cfg.arch));
  }
  if (f.pairs.empty()) fail("{}: the adapter has no LoRA tensors", f.source);
  for (size_t i = 0; i < f.pairs.size(); ++i) {
    check_pair(f, f.pairs[i], cfg);
    for (size_t j = 0; j < i; ++j)
      if (f.pairs[j].layer == f.pairs[i].layer && f.pairs[j].target == f.pairs[i].target)
        fail("{}: tensors '{}' and '{}' adapt the same matrix", f.source, f.pairs[j].name, f.pairs[i].name);
    match_qk_order(f.pairs[i], cfg, raw.qk_permuted);
  }
  return std::move(raw.file);
}

LoraSpec parse_lora_spec(const std::string& s) {
  LoraSpec spec{s, 1.0f};
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return spec;
  const std::string tail = s.substr(colon + 1);
  char* end = nullptr;
  const double v = std::strtod(tail.c_str(), &end);
  if (tail.empty() || end != tail.c_str() + tail.size()) return spec;  // part of the path
  if (!std::isfinite(v)) fail("--lora {}: the scale '{}' is not a finite number", s, tail);
  return LoraSpec{s.substr(0, colon), static_cast<float>(v)};
}

std::shared_ptr<const LoraAdapter> load_lora(const Model& model, std::span<const LoraSpec> specs) {
  return load_lora_for(model.config(), specs);
}

std::shared_ptr<const LoraAdapter> load_lora_for(const ModelConfig& c, std::span<const LoraSpec> specs) {
  if (c.is_encoder()) fail("LoRA adapters are for decoders; '{}' is an encoder", c.name);
  if (specs.empty()) fail("load_lora: no adapter given");
  std::vector<LoraFile> files;
  auto out = std::make_shared<LoraAdapter>();
  out->shape = LoraAdapter::shape_of(c);
  out->id = next_lora_id();
  for (const LoraSpec& s : specs) {
    files.push_back(read_lora_file(s.path, c));
    for (LoraPair& p : files.back().pairs) p.scale *= s.scale;
    out->name += (out->name.empty() ? "" : "+") + fs::path(s.path).filename().string() +
                 (s.scale != 1.0f ? fmt::format(":{}", s.scale) : "");
  }
  out->layers.resize(c.n_layer);
  for (int l = 0; l < c.n_layer; ++l)
    for (int site = 0; site < kLoraSites; ++site) {
      std::vector<const LoraPair*> pairs;
      for (const LoraFile& f : files)
        for (const LoraPair& p : f.pairs)
          if (p.layer == l && static_cast<int>(lora_site(p.target)) == site) pairs.push_back(&p);
      if (!pairs.empty()) out->layers[l].sites[site] = stack_site(pairs, c, *out);
    }
  return out;  // the files' own copies are freed: the adapter holds stacked / transposed ones
}

std::shared_ptr<const LoraAdapter> rescale_lora(const std::shared_ptr<const LoraAdapter>& a, float factor) {
  if (!std::isfinite(factor)) fail("LoRA scale {} is not finite", factor);
  auto out = std::make_shared<LoraAdapter>(*a);
  out->id = next_lora_id();  // other products: another namespace for cached prefixes
  for (LoraLayer& l : out->layers)
    for (LoraSiteWeights& s : l.sites)
      for (LoraSlot& slot : s.slots) slot.scale *= factor;
  out->name += fmt::format(":{}", factor);
  return out;
}

uint64_t lora_id(const LoraAdapter& a) {
  return a.id;
}

size_t lora_bytes(const LoraAdapter& a) {
  return a.bytes;
}

std::string lora_name(const LoraAdapter& a) {
  return a.name;
}

}  // namespace ferrum
