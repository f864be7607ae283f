#include "cli/spec_flags.h"

#include "cli/flag_checks.h"
#include "core/fail.h"
#include "engine/draft_model_proposer.h"
#include "engine/ngram_proposer.h"

namespace ferrum::cli {

void SpecFlags::add(CLI::App* app) {
  app->add_option(
         "--draft-model", draft_model,
         "speculative decoding: a smaller model with the same vocabulary proposes tokens the model checks "
         "(GGUF, HF directory or llama2.c; a quantized copy of the model works)")
      ->check(non_empty());
  app->add_flag(
      "--spec-ngram", ngram,
      "speculative decoding without a second model: propose what followed the last few tokens earlier "
      "in the context (prompt lookup)");
  app->add_option("--draft-max", draft_max, "speculative decoding: tokens proposed per step at most")
      ->transform(whole(1, 64));
  app->add_option(
         "--draft-p-min", p_min,
         "draft model: stop drafting when the draft's own probability of its next token is below this")
      ->check(real(0, 1));
  app->add_flag(
      "--draft-fixed", fixed,
      "always propose --draft-max tokens (default: one fewer after a step that accepted none, one more "
      "after a step that accepted all)");
  app->add_option("--spec-max-batch", max_batch,
                  "serve: no drafts in a step where more than this many sequences are running (0: no limit)")
      ->transform(whole(0, 4096));
  app->add_option("--spec-ngram-min", ngram_min, "prompt lookup: shortest n-gram that may match")
      ->transform(whole(1, 64));
  app->add_option("--spec-ngram-max", ngram_max, "prompt lookup: longest n-gram tried first")
      ->transform(whole(1, 64));
}

SpecSetup make_spec(const SpecFlags& f, const ModelFlags& model, const LoadedModel& target) {
  SpecSetup s;
  if (!f.enabled()) return s;
  if (f.ngram && !f.draft_model.empty()) fail("--spec-ngram and --draft-model: choose one proposer");
  s.options.draft_max = f.draft_max;
  s.options.adaptive = !f.fixed;
  s.options.max_batch = f.max_batch;
  if (f.ngram) {
    if (f.ngram_min > f.ngram_max)
      fail("--spec-ngram-min ({}) is larger than --spec-ngram-max ({})", f.ngram_min, f.ngram_max);
    s.options.proposer = std::make_shared<NgramProposer>(NgramOptions{f.ngram_min, f.ngram_max});
    return s;
  }
  s.draft = std::make_unique<LoadedModel>(load_model(f.draft_model, model.options()));
  try {
    check_draft_vocab(*target.tokenizer, *s.draft->tokenizer);
  } catch (const Error& e) {
    fail("--draft-model {}: {}", f.draft_model, e.what());
  }
  DraftModelOptions o;
  o.p_min = f.p_min;
  s.options.proposer =
      std::make_shared<DraftModelProposer>(*s.draft->model, target.model->config().n_vocab, o);
  return s;
}

}  // namespace ferrum::cli
