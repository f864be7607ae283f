// A minimal ferrum program: load a model, tokenize a prompt, prefill it into a KV cache, then
// pick the most likely next token (greedy) and decode it, until an end-of-generation token or
// 200 tokens; prints the prompt and the continuation. With no prompt it starts from the BOS token
// alone: on models/stories260K.gguf that is llama2.c's reference story (200 steps), the text of
// `ferrum run models/stories260K.gguf -n 200 --temp 0 </dev/null`.
//
//   generate MODEL [PROMPT]
#include <ferrum/ferrum.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

void print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s MODEL [PROMPT]\n", argv[0]);
    return 2;
  }
  try {
    ferrum::LoadedModel lm = ferrum::load_model(argv[1]);  // GGUF, HF directory or llama2.c
    ferrum::Model& model = *lm.model;
    const ferrum::Tokenizer& tok = *lm.tokenizer;
    std::unique_ptr<ferrum::KvCache> kv = ferrum::KvCache::for_model(model, ferrum::KvOptions{});

    // The prompt's ids with the model's BOS; special-token texts in it stay text.
    const std::vector<int32_t> prompt = tok.encode(argc > 2 ? argv[2] : "", /*add_special=*/true,
                                                   /*parse_special=*/false);
    if (prompt.empty()) throw ferrum::Error("the prompt is empty and the model adds no BOS token");

    // Pieces become text through a StreamDecoder: it never splits a UTF-8 character.
    ferrum::StreamDecoder text(tok, /*skip_special=*/true);
    for (int32_t id : prompt) print(text.push(id));

    const int seq = 0, max_tokens = 200;
    std::vector<float> logits(model.config().n_vocab);
    model.prefill(*kv, seq, prompt, logits.data());  // logits of the last prompt token
    for (int i = 0; i < max_tokens; ++i) {
      const int32_t next = ferrum::argmax(logits.data(), model.config().n_vocab);
      if (tok.is_eog(next)) break;
      print(text.push(next));
      if (i + 1 == max_tokens || kv->seq_len(seq) >= kv->capacity()) break;
      model.decode(*kv, seq, next, kv->seq_len(seq), logits.data());
    }
    print(text.flush() + "\n");
  } catch (const ferrum::Error& e) {
    std::fprintf(stderr, "generate: %s\n", e.what());
    return 1;
  }
  return 0;
}
