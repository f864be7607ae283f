// `ferrum eval`: run a prompt as one prefill and write per-position top-k logits and the
// log-sum-exp (the fixtures' topk.json shape), optionally all logits and/or the final hidden
// states as .npy files. The prompt is text, token ids, or embedding rows read from a .npy.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/token_list.h"
#include "core/fail.h"
#include "formats/npy.h"
#include "loading/loader.h"

namespace ferrum::cli {
namespace {

struct EvalFlags {
  ModelFlags model;
  std::optional<std::string> prompt;
  std::vector<std::string> tokens;
  int top_k = 32;
  std::string out, npy, hidden_out, embeds_in;
};

// Input rows for the model: float32 (n, n_embd), n >= 1 (npy::read_f32 checks dtype and order).
std::vector<float> read_rows(const std::string& path, int64_t n_embd) {
  npy::Array a = npy::read_f32(path);
  if (a.shape.size() != 2)
    fail("{}: --embeds-in needs a 2-D array (n_tokens, n_embd), got shape {}", path,
         npy::shape_string(a.shape));
  if (a.shape[1] != n_embd)
    fail("{}: rows of {} floats, but the model's embedding width (n_embd) is {}", path, a.shape[1], n_embd);
  if (a.shape[0] < 1) fail("{}: no rows (shape {})", path, npy::shape_string(a.shape));
  return std::move(a.data);
}

int run(EvalFlags& f) {
  if (f.prompt.has_value() + !f.tokens.empty() + !f.embeds_in.empty() != 1)
    fail("eval needs exactly one of --prompt, --tokens and --embeds-in");
  std::vector<int32_t> ids;
  if (!f.tokens.empty()) ids = parse_token_ids(f.tokens, "--tokens");  // before the model loads
  LoadedModel lm = f.model.load(f.model.options());
  Model& model = *lm.model;
  const int64_t n_vocab = model.config().n_vocab, d = model.config().n_embd;
  std::vector<float> rows;
  if (!f.embeds_in.empty())
    rows = read_rows(f.embeds_in, d);
  else if (f.prompt)
    ids = lm.tokenizer->encode(*f.prompt, true, false);
  else
    check_token_ids(ids, "--tokens", n_vocab);
  const int64_t n = ids.empty() ? static_cast<int64_t>(rows.size()) / d : static_cast<int64_t>(ids.size());
  if (n == 0) fail("eval: no tokens to evaluate");
  const int k = static_cast<int>(std::min<int64_t>(f.top_k, n_vocab));
  std::vector<float> logits(n * n_vocab), hidden(f.hidden_out.empty() ? 0 : n * d);
  std::unique_ptr<KvCache> kv = KvCache::for_model(model, f.model.kv_options());
  const std::shared_ptr<const LoraAdapter> lora = f.model.load_adapter(model);
  // One prefill in chunks of max_batch positions (as Model::prefill runs it), ids or rows.
  const int64_t chunk = std::max<int64_t>(1, model.options().max_batch);
  for (int64_t b = 0; b < n; b += chunk) {
    const int64_t m = std::min(chunk, n - b);
    SeqInput in;
    if (ids.empty())
      in.embeds = std::span<const float>(rows).subspan(b * d, m * d);
    else
      in.tokens = std::span<const int32_t>(ids).subspan(b, m);
    in.logits = Want::All;
    in.lora = lora.get();
    in.hidden = hidden.empty() ? Want::None : Want::All;
    model.forward(*kv, std::span(&in, 1),
                  ForwardOut{&logits[b * n_vocab], hidden.empty() ? nullptr : &hidden[b * d]});
  }

  nlohmann::json j;
  if (!ids.empty()) j["tokens"] = ids;  // rows in: no ids to report
  j["n_positions"] = n;
  j["k"] = k;
  nlohmann::json top_ids = nlohmann::json::array(), top_logits = nlohmann::json::array(),
                 lse = nlohmann::json::array();
  std::vector<int32_t> order(n_vocab);
  for (int64_t t = 0; t < n; ++t) {
    const float* row = &logits[t * n_vocab];
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    nlohmann::json ti = nlohmann::json::array(), tl = nlohmann::json::array();
    for (int i = 0; i < k; ++i) {
      ti.push_back(order[i]);
      tl.push_back(row[order[i]]);
    }
    double mx = row[order[0]], sum = 0.0;
    for (int v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - mx);
    top_ids.push_back(ti);
    top_logits.push_back(tl);
    lse.push_back(mx + std::log(sum));
  }
  j["top_ids"] = top_ids;
  j["top_logits"] = top_logits;
  j["logsumexp"] = lse;
  std::ofstream out(f.out);
  if (!out) fail("{}: cannot open for writing", f.out);
  out << j.dump() << "\n";
  if (!out) fail("{}: write failed", f.out);
  if (!f.npy.empty()) npy::write_f32(f.npy, logits, n, n_vocab);
  if (!f.hidden_out.empty()) npy::write_f32(f.hidden_out, hidden, n, d);
  return 0;
}

}  // namespace

Runner add_eval(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  CLI::App* sub =
      app.add_subcommand("eval", "run a prompt as one prefill and write per-position top-k logits");
  f->model.add(sub, false);
  f->model.add_lora(sub);
  f->model.add_pipeline(sub);
  sub->add_option("-p,--prompt", f->prompt, "prompt text (BOS added as the model asks)");
  sub->add_option("--tokens", f->tokens,
                  "token ids, used as given: separated by commas and/or spaces, as one argument or several "
                  "(the form tokenize --ids-only prints)");
  sub->add_option("--top-k", f->top_k, "ids/logits kept per position")->transform(whole(1, 1 << 24));
  sub->add_option("--out", f->out, "output JSON file")->required();
  sub->add_option("--embeds-in", f->embeds_in,
                  "the prompt as embedding rows: float32 .npy (n_tokens, n_embd), e.g. the token embeddings");
  sub->add_option("--logits-npy", f->npy, "also write all logits as float32 .npy (n_tokens, n_vocab)");
  sub->add_option("--hidden-out", f->hidden_out,
                  "also write the final hidden states (after the final norm, before the LM head) as float32 "
                  ".npy (n_tokens, n_embd)");
  return [f] { return run(*f); };
}

}  // namespace ferrum::cli
