#include "models/registry.h"

#include <filesystem>
#include <fstream>

#include "core/fail.h"
#include "models/llama_model.h"

namespace fs = std::filesystem;

namespace ferrum {

const char* arch_name(Arch a) {
  switch (a) {
    case Arch::Llama:
      return "llama";
    case Arch::Mistral:
      return "mistral";
    case Arch::Qwen2:
      return "qwen2";
    case Arch::Qwen3:
      return "qwen3";
    case Arch::Qwen3Moe:
      return "qwen3moe";
    case Arch::Bert:
      return "bert";
  }
  return "?";
}

const char* format_name(ModelFormat f) {
  switch (f) {
    case ModelFormat::Gguf:
      return "gguf";
    case ModelFormat::HuggingFace:
      return "huggingface";
    case ModelFormat::Llama2c:
      return "llama2.c";
  }
  return "?";
}

ModelFormat detect_format(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("{}: no such file or directory", path);
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(fs::path(path) / "config.json", ec))
      fail("{}: a model directory needs a config.json (Hugging Face layout)", path);
    return ModelFormat::HuggingFace;
  }
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {0, 0, 0, 0};
  f.read(magic, 4);
  if (f.gcount() == 4 && std::string(magic, 4) == "GGUF") return ModelFormat::Gguf;
  // A .gguf file without the magic is a corrupt GGUF (the reader names what is wrong), not a checkpoint.
  if (fs::path(path).extension() == ".gguf") return ModelFormat::Gguf;
  return ModelFormat::Llama2c;
}

Arch parse_arch(const std::string& raw, const std::string& source) {
  std::string n;
  for (char c : raw) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "llama" || n == "llamaforcausallm") return Arch::Llama;
  if (n == "mistral" || n == "mistralforcausallm") return Arch::Mistral;
  if (n == "qwen2" || n == "qwen2forcausallm") return Arch::Qwen2;
  if (n == "qwen3" || n == "qwen3forcausallm") return Arch::Qwen3;
  if (n == "qwen3moe" || n == "qwen3_moe" || n == "qwen3moeforcausallm") return Arch::Qwen3Moe;
  if (n == "bert" || n == "bertmodel" || n == "bertformaskedlm") return Arch::Bert;
  fail("{}: unknown architecture '{}' (supported: llama, mistral, qwen2, qwen3, qwen3moe, bert)", source,
       raw);
}

ModelConfig config_from_gguf(const gguf::File& f) {
  ModelConfig c;
  const std::string arch = f.get_string("general.architecture");
  c.arch = parse_arch(arch, f.path());
  c.name = f.find_string("general.name").value_or(fs::path(f.path()).stem().string());
  auto key = [&](const char* k) { return arch + "." + k; };
  // Sizes are read as ints: anything above INT32_MAX is an error here, the rest is checked
  // against the other fields by validate_config().
  auto opt_int = [&](const char* k, int64_t def) {
    const std::optional<uint64_t> v = f.find_uint(key(k));
    if (v && *v > static_cast<uint64_t>(INT32_MAX))
      fail("{}: metadata key '{}' is {}, too large", f.path(), key(k), *v);
    return static_cast<int>(v ? static_cast<int64_t>(*v) : def);
  };
  auto req_int = [&](const char* k) {
    f.get_uint(key(k));  // throws naming the key when it is missing or not an integer
    return opt_int(k, 0);
  };
  c.n_layer = req_int("block_count");
  c.n_embd = req_int("embedding_length");
  c.n_head = req_int("attention.head_count");
  if (c.n_head <= 0)
    fail("{}: metadata key '{}' is {}, expected a positive value", f.path(), key("attention.head_count"),
         c.n_head);
  c.n_head_kv = opt_int("attention.head_count_kv", c.n_head);
  c.n_ctx_train = opt_int("context_length", 2048);
  c.n_ff = opt_int("feed_forward_length", 0);
  if (!f.has(key("attention.key_length")) && c.n_embd % c.n_head != 0)
    fail("{}: {} {} is not a multiple of {} {} (and {} is not given)", f.path(), key("embedding_length"),
         c.n_embd, key("attention.head_count"), c.n_head, key("attention.key_length"));
  c.head_dim = opt_int("attention.key_length", c.n_embd / c.n_head);
  c.n_rot = opt_int("rope.dimension_count", c.head_dim);
  c.rope_theta = static_cast<float>(f.find_float(key("rope.freq_base")).value_or(10000.0));
  if (c.arch == Arch::Bert) {
    c.norm_eps = static_cast<float>(f.find_float(key("attention.layer_norm_epsilon")).value_or(1e-12));
  } else {
    c.norm_eps = static_cast<float>(f.find_float(key("attention.layer_norm_rms_epsilon")).value_or(1e-5));
  }
  if (auto st = f.find_string(key("rope.scaling.type")); st && *st == "linear") {
    const double factor = f.find_float(key("rope.scaling.factor")).value_or(1.0);
    if (factor <= 0) fail("{}: rope.scaling.factor must be positive, got {}", f.path(), factor);
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
  } else if (auto lin = f.find_float(key("rope.scale_linear"))) {
    c.rope_freq_scale = static_cast<float>(1.0 / *lin);
  }
  c.sliding_window = opt_int("attention.sliding_window", 0);
  c.rope_interleaved = c.arch == Arch::Llama || c.arch == Arch::Mistral;
  c.qk_norm = c.arch == Arch::Qwen3 || c.arch == Arch::Qwen3Moe;
  // Q/K/V biases: always in qwen2, in other families when the file has them (as the HF loader does).
  c.qkv_bias =
      c.arch == Arch::Qwen2 || f.find_tensor("blk.0.attn_q.bias") || f.find_tensor("blk.0.attn_qkv.bias");
  if (c.arch == Arch::Qwen3Moe) {
    c.n_expert = req_int("expert_count");
    c.n_expert_used = req_int("expert_used_count");
    c.n_ff_expert = req_int("expert_feed_forward_length");
    // HF norm_topk_prob as written by `ferrum convert`; llama.cpp's own files lack the key and
    // llama.cpp always renormalises for qwen3moe.
    c.norm_topk_prob = f.find_bool(key("expert_weights_norm")).value_or(true);
  }
  const TensorView& emb = f.tensor("token_embd.weight");
  if (emb.ne[1] > INT32_MAX)
    fail("{}: tensor 'token_embd.weight' has shape {}: too many rows for a vocabulary", f.path(),
         emb.shape_string());
  c.n_vocab = opt_int("vocab_size", emb.ne[1]);
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  validate_config(c, f.path(), ConfigFields{false, arch + "."});
  return c;
}

WeightSet weights_from_gguf(std::shared_ptr<const gguf::File> f) {
  WeightSet w(f->path());
  const uint8_t *lo = nullptr, *hi = nullptr;
  for (const TensorView& t : f->tensors()) {
    if (!dtype_info(t.type).supported)
      fail("{}: tensor '{}' has type {}, which ferrum does not support", f->path(), t.name,
           dtype_name(t.type));
    w.add(t);
    if (t.data && (!lo || t.data < lo)) lo = t.data;
    if (t.data && (!hi || t.data + t.nbytes > hi)) hi = t.data + t.nbytes;
  }
  w.set_file_mapping(lo, hi);  // the tensors live in the file's read-only mapping
  w.keep_alive(f);
  return w;
}

std::unique_ptr<Model> create_model(ModelConfig cfg, WeightSet weights, const ModelOptions& opts) {
  validate_config(cfg, weights.source(), ConfigFields{false, std::string(arch_name(cfg.arch)) + "."});
  if (cfg.arch != Arch::Bert) check_decoder_weights(cfg, weights);
  switch (cfg.arch) {
    case Arch::Llama:
    case Arch::Mistral:
    case Arch::Qwen2:
    case Arch::Qwen3:
      if (cfg.n_ff <= 0) fail("{}: feed_forward_length is missing", weights.source());
      return std::make_unique<LlamaModel>(std::move(cfg), std::move(weights), opts);
    case Arch::Qwen3Moe:
      // Attention is the dense decoder's; make_feed_forward gives every layer a MoeFeedForward.
      if (cfg.n_expert <= 0 || cfg.n_ff_expert <= 0)
        fail("{}: a qwen3moe model needs a positive expert count ({}) and expert feed-forward length ({})",
             weights.source(), cfg.n_expert, cfg.n_ff_expert);
      if (cfg.n_expert_used <= 0 || cfg.n_expert_used > cfg.n_expert)
        fail("{}: experts used per token ({}) must be between 1 and the expert count ({})", weights.source(),
             cfg.n_expert_used, cfg.n_expert);
      return std::make_unique<LlamaModel>(std::move(cfg), std::move(weights), opts);
    case Arch::Bert:
      fail(
          "{}: '{}' is an encoder (embeddings only): use BertModel / `ferrum embed`, not the decoder "
          "interface",
          weights.source(), arch_name(cfg.arch));
  }
  fail("unreachable");
}

}  // namespace ferrum
