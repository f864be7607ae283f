// BERT encoders: bidirectional attention, LayerNorm (layer_norm_eps, GGUF
// attention.layer_norm_epsilon), absolute position embeddings, tied embeddings, hidden states only.
// Its GGUF keys are llama.cpp's bert ones, all written here.
#include "formats/family.h"
#include "formats/family_fields.h"
#include "formats/gguf_writer.h"

namespace ferrum {
namespace {

uint32_t u32(int v) {
  return static_cast<uint32_t>(v);  // validate_config() checked v >= 0
}

void write_gguf_bert(gguf::Writer& w, const ModelConfig& m, const std::string& A) {
  w.set_u32(A + ".vocab_size", u32(m.n_vocab));
  w.set_u32(A + ".context_length", u32(m.n_ctx_train));
  w.set_u32(A + ".embedding_length", u32(m.n_embd));
  w.set_u32(A + ".block_count", u32(m.n_layer));
  w.set_u32(A + ".feed_forward_length", u32(m.n_ff));
  w.set_u32(A + ".attention.head_count", u32(m.n_head));
  w.set_f32(A + ".attention.layer_norm_epsilon", m.norm_eps);
  w.set_bool(A + ".attention.causal", false);
}

}  // namespace

extern const Family kBert;

const Family kBert{.arch = Arch::Bert,
                   .name = "bert",
                   .gguf = "bert",
                   .hf_type = "bert",
                   .hf_class = "Bert",
                   .hf_n_ctx = 512,
                   .gguf_qk_permuted = false,
                   .hf_norm_eps = 1e-12,
                   .hf_tied_embeddings = true,
                   .encoder = true,
                   .write_gguf = write_gguf_bert};

}  // namespace ferrum
