// `ferrum embed`: sentence embeddings from a BERT model (GGUF or Hugging Face directory), or
// from a decoder's final hidden states (last-token or mean pooling, L2-normalized by default).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/fail.h"
#include "loading/loader.h"
#include "models/bert_model.h"
#include "models/decoder_embed.h"

namespace ferrum::cli {

Runner add_embed(CLI::App& app) {
  struct Flags {
    std::string model, pooling, precision = "fast";
    std::vector<std::string> texts;
    bool normalize = false, raw = false, json = false;
    int threads = 0;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("embed", "print sentence embeddings of a BERT model or a decoder");
  sub->add_option(
         "model", f->model,
         "GGUF file or Hugging Face directory: a BERT encoder, or a decoder (its final hidden states)")
      ->required();
  sub->add_option("text", f->texts, "one or more texts (each is embedded separately)")->required();
  sub->add_option("--pooling", f->pooling,
                  "mean, cls or last (default: a BERT model's own setting; last for a decoder)")
      ->check(one_of({"mean", "cls", "last"}));
  sub->add_flag("--normalize", f->normalize,
                "L2-normalize the vectors (default: as a BERT model says; always for a decoder)");
  sub->add_flag("--raw", f->raw, "never L2-normalize, even if the model's files ask for it");
  sub->add_flag("--json", f->json, "print JSON");
  sub->add_option("-t,--threads", f->threads, "worker threads")
      ->transform(whole(1, ModelFlags::kMaxThreads))
      ->default_str("all cores");
  add_precision_option(sub, f->precision);
  return [f] {
    if (f->normalize && f->raw) fail("--normalize and --raw exclude each other");
    ModelOptions o;
    o.n_threads = f->threads;
    o.precision = parse_precision(f->precision);
    Pooling pooling;
    bool normalize;
    int64_t dim;
    std::vector<std::vector<int32_t>> batch;
    std::vector<std::vector<float>> vecs;
    if (open_model_files(f->model).config.arch == Arch::Bert) {
      LoadedBert b = load_bert(f->model, o);
      pooling = f->pooling.empty() ? b.model->default_pooling() : parse_pooling(f->pooling);
      normalize = f->normalize || (!f->raw && b.model->default_normalize());
      dim = b.model->dim();
      for (const std::string& t : f->texts) batch.push_back(b.tokenizer->encode(t, true, false));
      vecs = b.model->embed(batch, pooling, normalize);
    } else {
      pooling = f->pooling.empty() ? Pooling::Last : parse_pooling(f->pooling);
      if (pooling == Pooling::Cls) fail("--pooling cls: a decoder has no CLS token (use last or mean)");
      normalize = !f->raw;
      LoadedModel lm = load_model(f->model, o);
      dim = lm.model->config().n_embd;
      for (const std::string& t : f->texts) batch.push_back(lm.tokenizer->encode(t, true, false));
      DecoderEmbedOptions eo;
      eo.pooling = pooling;
      eo.normalize = normalize;
      vecs = decoder_embeddings(*lm.model, batch, eo);
    }
    if (f->json) {
      nlohmann::json j;
      j["model"] = f->model;
      j["pooling"] = pooling_name(pooling);
      j["normalized"] = normalize;
      j["dim"] = dim;
      j["embeddings"] = nlohmann::json::array();
      for (size_t i = 0; i < vecs.size(); ++i)
        j["embeddings"].push_back(
            {{"text", f->texts[i]}, {"n_tokens", batch[i].size()}, {"embedding", vecs[i]}});
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    for (const auto& v : vecs) {
      for (size_t i = 0; i < v.size(); ++i) std::printf(i ? " %.7g" : "%.7g", v[i]);
      std::printf("\n");
    }
    return 0;
  };
}

}  // namespace ferrum::cli
