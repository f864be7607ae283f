#include "formats/convert_llama2c.h"

#include <filesystem>

#include "core/fail.h"
#include "formats/gguf_writer.h"
#include "formats/hf_tokenizer_meta.h"
#include "formats/llama2c.h"

namespace ferrum {
namespace {

// llama2.c stores SentencePiece pieces with ' ' where the model has U+2581 and wraps BOS/EOS in
// newlines; GGUF wants the SentencePiece text.
std::string gguf_token_text(const std::string& t) {
  if (t == "\n<s>\n") return "<s>";
  if (t == "\n</s>\n") return "</s>";
  std::string out;
  out.reserve(t.size() + 8);
  for (char c : t) {
    if (c == ' ')
      out += "\xe2\x96\x81";
    else
      out += c;
  }
  return out;
}

}  // namespace

void convert_llama2c_to_gguf(const std::string& checkpoint, const std::string& tokenizer_bin,
                             const std::string& out_gguf, const ProgressFn& progress) {
  const auto ck = llama2c::Checkpoint::open(checkpoint);
  const auto& cfg = ck.config();
  const auto tok = llama2c::read_tokenizer(tokenizer_bin, cfg.vocab_size);

  std::vector<std::string> tokens(tok.tokens.size());
  std::vector<int32_t> types(tok.tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = gguf_token_text(tok.tokens[i]);
    types[i] = i == 0                         ? hf::kUnknown
               : (i == 1 || i == 2)           ? hf::kControl
               : hf::is_byte_token(tokens[i]) ? hf::kByte
                                              : hf::kNormal;
  }

  gguf::Writer w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.type", "model");
  w.set_string("general.name", std::filesystem::path(checkpoint).stem().string());
  w.set_u32("general.file_type", 0);  // all F32
  w.set_u32("llama.vocab_size", static_cast<uint32_t>(cfg.vocab_size));
  w.set_u32("llama.context_length", static_cast<uint32_t>(cfg.seq_len));
  w.set_u32("llama.embedding_length", static_cast<uint32_t>(cfg.dim));
  w.set_u32("llama.block_count", static_cast<uint32_t>(cfg.n_layers));
  w.set_u32("llama.feed_forward_length", static_cast<uint32_t>(cfg.hidden_dim));
  w.set_u32("llama.attention.head_count", static_cast<uint32_t>(cfg.n_heads));
  w.set_u32("llama.attention.head_count_kv", static_cast<uint32_t>(cfg.n_kv_heads));
  w.set_u32("llama.rope.dimension_count", static_cast<uint32_t>(cfg.head_dim()));
  w.set_f32("llama.rope.freq_base", 10000.0f);                 // llama2.c's fixed RoPE base
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);  // llama2.c's rmsnorm epsilon
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", tok.scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_bool("tokenizer.ggml.add_eos_token", false);

  auto add = [&](const std::string& name, const TensorView& t) {
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    w.add_tensor(name, DType::F32, ne, t.data, t.nbytes);
  };
  add("token_embd.weight", ck.token_embedding());
  for (size_t l = 0; l < ck.layers().size(); ++l) {
    const auto& L = ck.layers()[l];
    const std::string p = fmt::format("blk.{}.", l);
    add(p + "attn_norm.weight", L.rms_att);
    add(p + "attn_q.weight", L.wq);
    add(p + "attn_k.weight", L.wk);
    add(p + "attn_v.weight", L.wv);
    add(p + "attn_output.weight", L.wo);
    add(p + "ffn_norm.weight", L.rms_ffn);
    add(p + "ffn_gate.weight", L.w1);
    add(p + "ffn_down.weight", L.w2);
    add(p + "ffn_up.weight", L.w3);
  }
  add("output_norm.weight", ck.rms_final());
  if (!cfg.shared_classifier) add("output.weight", ck.wcls());
  w.write(out_gguf, progress);
}

}  // namespace ferrum
