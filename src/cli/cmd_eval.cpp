// `ferrum eval`: run a prompt as one prefill and write per-position top-k logits and the
// log-sum-exp (the fixtures' topk.json shape), optionally all logits as a .npy file.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "cli/commands.h"
#include "core/fail.h"
#include "engine/loader.h"

namespace ferrum::cli {
namespace {

struct EvalFlags {
  ModelFlags model;
  std::optional<std::string> prompt;
  std::string tokens;
  int top_k = 32;
  std::string out, npy;
};

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 0 || v > INT32_MAX) fail("--tokens: '{}' is not a token id", item);
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

void write_npy(const std::string& path, const std::vector<float>& data, int64_t rows, int64_t cols) {
  std::string header =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, cols);
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream f(path, std::ios::binary);
  if (!f) fail("{}: cannot open for writing", path);
  const uint16_t hlen = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(hlen & 0xff));
  f.put(static_cast<char>(hlen >> 8));
  f.write(header.data(), header.size());
  f.write(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  if (!f) fail("{}: write failed", path);
}

int run(EvalFlags& f) {
  if (f.prompt.has_value() == !f.tokens.empty()) fail("eval needs exactly one of --prompt and --tokens");
  LoadedModel lm = load_model(f.model.model_path(), f.model.options(), f.model.tokenizer);
  std::vector<int32_t> ids = f.prompt ? lm.tokenizer->encode(*f.prompt, true, false) : parse_ids(f.tokens);
  if (ids.empty()) fail("eval: no tokens to evaluate");
  const int n_vocab = lm.model->config().n_vocab;
  const int k = std::min(f.top_k, n_vocab);
  std::vector<float> logits(ids.size() * n_vocab);
  std::unique_ptr<KvCache> kv = KvCache::for_model(*lm.model, f.model.kv_options());
  lm.model->prefill(*kv, 0, ids, logits.data(), /*all_logits=*/true);

  nlohmann::json j;
  j["tokens"] = ids;
  j["k"] = k;
  nlohmann::json top_ids = nlohmann::json::array(), top_logits = nlohmann::json::array(),
                 lse = nlohmann::json::array();
  std::vector<int32_t> order(n_vocab);
  for (size_t t = 0; t < ids.size(); ++t) {
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
  if (!f.npy.empty()) write_npy(f.npy, logits, static_cast<int64_t>(ids.size()), n_vocab);
  return 0;
}

}  // namespace

Runner add_eval(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  CLI::App* sub =
      app.add_subcommand("eval", "run a prompt as one prefill and write per-position top-k logits");
  f->model.add(sub, false);
  sub->add_option("-p,--prompt", f->prompt, "prompt text (BOS added as the model asks)");
  sub->add_option("--tokens", f->tokens, "comma-separated token ids, used as given");
  sub->add_option("--top-k", f->top_k, "ids/logits kept per position")->check(CLI::PositiveNumber);
  sub->add_option("--out", f->out, "output JSON file")->required();
  sub->add_option("--logits-npy", f->npy, "also write all logits as float32 .npy (n_tokens, n_vocab)");
  return [f] { return run(*f); };
}

}  // namespace ferrum::cli
