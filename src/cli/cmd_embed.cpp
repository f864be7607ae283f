// `ferrum embed`: sentence embeddings from a BERT model (GGUF or Hugging Face directory), or
// from a decoder's final hidden states (last-token or mean pooling, L2-normalized by default).
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/fail.h"
#include "ferrum/embeddings.h"
#include "ferrum/loader.h"

namespace ferrum::cli {

namespace {
// Texts from the arguments and from -f (one per line, empty lines skipped).
std::vector<std::string> embed_texts(const std::vector<std::string>& args, const std::string& file) {
  std::vector<std::string> texts = args;
  if (!file.empty()) {
    const std::string all = read_flag_file(file, "--file");
    size_t at = 0;
    while (at < all.size()) {
      size_t end = all.find('\n', at);
      if (end == std::string::npos) end = all.size();
      std::string line = all.substr(at, end - at);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) texts.push_back(std::move(line));
      at = end + 1;
    }
  }
  if (texts.empty()) fail("no text to embed: give texts as arguments or a file with -f");
  return texts;
}

struct EmbedFlags {
  std::string model, pooling, precision = "fast", file;
  std::vector<std::string> texts;
  bool normalize = false, raw = false, json = false, timings = false;
  int threads = 0;
  int64_t batch = 0;
};

// The vectors of `batch`, `step` sequences per call; with `timings`, one line on stderr.
std::vector<std::vector<float>> embed_in_steps(Model& model, const std::vector<std::vector<int32_t>>& batch,
                                               const EmbedOptions& eo, size_t step, bool timings) {
  std::vector<std::vector<float>> vecs;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < batch.size(); i += step) {
    const std::vector<std::vector<int32_t>> part(batch.begin() + i,
                                                 batch.begin() + std::min(batch.size(), i + step));
    for (auto& v : embeddings(model, part, eo)) vecs.push_back(std::move(v));
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (timings) {
    size_t tokens = 0;
    for (const auto& ids : batch) tokens += ids.size();
    std::fprintf(stderr,
                 "embed: %zu sentences, %zu tokens in %.1f ms: %.1f sentences/s, %.0f tokens/s (batch %zu)\n",
                 batch.size(), tokens, ms, batch.size() * 1e3 / ms, tokens * 1e3 / ms, step);
  }
  return vecs;
}

void print_vectors(const EmbedFlags& f, const EmbedSettings& es, int64_t dim,
                   const std::vector<std::string>& texts, const std::vector<std::vector<int32_t>>& batch,
                   const std::vector<std::vector<float>>& vecs) {
  if (f.json) {
    nlohmann::json j;
    j["model"] = f.model;
    j["pooling"] = pooling_name(es.pooling);
    j["normalized"] = es.normalize;
    j["dim"] = dim;
    j["embeddings"] = nlohmann::json::array();
    for (size_t i = 0; i < vecs.size(); ++i)
      j["embeddings"].push_back({{"text", texts[i]}, {"n_tokens", batch[i].size()}, {"embedding", vecs[i]}});
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  for (const auto& v : vecs) {
    for (size_t i = 0; i < v.size(); ++i) std::printf(i ? " %.7g" : "%.7g", v[i]);
    std::printf("\n");
  }
}

int embed(const EmbedFlags& f) {
  if (f.normalize && f.raw) fail("--normalize and --raw exclude each other");
  const std::vector<std::string> texts = embed_texts(f.texts, f.file);
  ModelOptions o;
  o.n_threads = f.threads;
  o.precision = parse_precision(f.precision);
  EmbedOptions eo;
  if (!f.pooling.empty()) eo.pooling = parse_pooling(f.pooling);
  if (f.normalize) eo.normalize = true;
  if (f.raw) eo.normalize = false;
  LoadedModel lm = load_model(f.model, o);
  const EmbedSettings es = embed_settings(*lm.model, eo);
  std::vector<std::vector<int32_t>> batch;
  for (const std::string& t : texts) batch.push_back(lm.tokenizer->encode(t, true, false));
  const size_t step = f.batch > 0 ? static_cast<size_t>(f.batch) : batch.size();
  const auto vecs = embed_in_steps(*lm.model, batch, eo, step, f.timings);
  print_vectors(f, es, lm.model->config().n_embd, texts, batch, vecs);
  return 0;
}

}  // namespace

Runner add_embed(CLI::App& app) {
  auto f = std::make_shared<EmbedFlags>();
  CLI::App* sub = app.add_subcommand("embed", "print sentence embeddings of a BERT model or a decoder");
  sub->add_option(
         "model", f->model,
         "GGUF file or Hugging Face directory: a BERT encoder, or a decoder (its final hidden states)")
      ->required();
  sub->add_option("text", f->texts, "one or more texts (each is embedded separately)");
  sub->add_option("-f,--file", f->file, "a file of texts to embed, one per line (empty lines skipped)")
      ->check(non_empty());
  sub->add_option("--pooling", f->pooling,
                  "mean, cls or last (default: a BERT model's own setting; last for a decoder)")
      ->check(one_of({"mean", "cls", "last"}));
  sub->add_flag("--normalize", f->normalize,
                "L2-normalize the vectors (default: as a BERT model says; always for a decoder)");
  sub->add_flag("--raw", f->raw, "never L2-normalize, even if the model's files ask for it");
  sub->add_flag("--json", f->json, "print JSON");
  sub->add_option("-b,--batch", f->batch, "texts per call to the model (default: all at once)")
      ->transform(whole(1, 1 << 20))
      ->default_str("all");
  sub->add_flag("--timings", f->timings,
                "print the embedding time (tokenization excluded) and throughput to stderr");
  sub->add_option("-t,--threads", f->threads, "worker threads")
      ->transform(whole(1, ModelFlags::kMaxThreads))
      ->default_str("all cores");
  add_precision_option(sub, f->precision);
  return [f] { return embed(*f); };
}

}  // namespace ferrum::cli
