#include "fuzz_model.h"

#include <algorithm>
#include <vector>

#include "ferrum/error.h"
#include "template/chat_template.h"

namespace ferrum::fuzz {

ModelOptions small_options() {
  ModelOptions o;
  o.n_threads = 1;
  o.max_batch = 8;
  return o;
}

bool small_enough(const ModelConfig& c, const WeightSet& w) {
  return c.n_layer <= 4 && c.n_embd <= 512 && c.n_vocab <= 4096 && c.n_ff <= 2048 &&
         static_cast<int64_t>(c.n_head) * c.head_dim <= 1024 && c.n_expert <= 16 && c.n_ff_expert <= 2048 &&
         w.total_bytes() <= (size_t{16} << 20);
}

void exercise_tokenizer(const Tokenizer& tok, std::string_view text) {
  static const char* const kTexts[] = {"Hello world",
                                       " leading space and  double",
                                       "<s>[INST] hi [/INST]</s>",
                                       "<|im_start|>user\nx<|im_end|>",
                                       "caf\xC3\xA9 \xE2\x96\x81 \xF0\x9F\x98\x80 1234",
                                       "\n\t "};
  std::vector<std::string_view> texts(std::begin(kTexts), std::end(kTexts));
  texts.push_back(text);
  for (std::string_view s : texts) {
    for (int mode = 0; mode < 4; ++mode) {
      std::vector<int32_t> ids;
      try {
        ids = tok.encode(s, mode & 1, mode & 2);
      } catch (const Error&) {
        continue;  // e.g. invalid UTF-8 in `text`
      }
      (void)tok.decode(ids, mode & 1);
      StreamDecoder sd(tok, mode & 2);
      for (int32_t id : ids) (void)sd.push(id);
      (void)sd.flush();
    }
  }
  const int32_t n = tok.n_vocab();
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < std::min<int32_t>(n, 300); ++i) ids.push_back(i);
  ids.push_back(n - 1);
  (void)tok.decode(ids, false);
  (void)tok.decode(ids, true);
  for (int32_t id : ids) {
    (void)tok.token_to_piece(id, false);
    (void)tok.token_type(id);
    (void)tok.is_eog(id);
  }
  (void)tok.bos_text();
  (void)tok.eos_text();
  for (int32_t bad : {-1, n, INT32_MIN, INT32_MAX}) {
    try {
      (void)tok.token_to_piece(bad);
      __builtin_trap();  // an out-of-range id was accepted
    } catch (const Error&) {
    }
  }
  if (!tok.chat_template().empty()) {
    try {
      ChatTemplate ct(tok.chat_template());
      ChatTemplateOptions opt;
      opt.bos_token = tok.bos_text();
      opt.eos_token = tok.eos_text();
      opt.strftime_now = [](const std::string&) { return std::string("01 Jan 2025"); };
      const auto messages = nlohmann::ordered_json::parse(
          R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},)"
          R"({"role":"assistant","content":"Hello"},{"role":"user","content":"Bye"}])");
      (void)ct.render(messages, opt);
    } catch (const Error&) {
    }
  }
}

void exercise_decoder(ModelConfig cfg, WeightSet w) {
  if (!small_enough(cfg, w)) return;
  auto model = create_model(std::move(cfg), std::move(w), small_options());
  const int32_t nv = model->config().n_vocab;
  std::vector<float> logits(static_cast<size_t>(nv));
  const int32_t prompt[2] = {0, nv - 1};
  KvOptions kvo;
  kvo.capacity = 32;
  kvo.pool_tokens = 64;
  auto kv = KvCache::for_model(*model, kvo);
  model->prefill(*kv, 0, prompt, logits.data());
  model->decode(*kv, 0, nv / 2, 2, logits.data());
}

}  // namespace ferrum::fuzz
