#include "server/embeddings.h"

#include <cstring>

#include "engine/engine.h"
#include "server/api_error.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;

std::string base64(const void* data, size_t n) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v =
        (uint32_t(p[i]) << 16) | (i + 1 < n ? uint32_t(p[i + 1]) << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < n ? k[(v >> 6) & 63] : '=';
    out += i + 2 < n ? k[v & 63] : '=';
  }
  return out;
}

bool is_token_array(const json& v) {
  return v.is_array() && !v.empty() &&
         std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number_integer(); });
}

// The options with the pooling and normalization they come to for `model` filled in.
EmbedOptions settled(const Model& model, EmbedOptions o) {
  const EmbedSettings es = embed_settings(model, o);
  o.pooling = es.pooling;
  o.normalize = es.normalize;
  return o;
}

}  // namespace

Embedder::Embedder(Model& model, const Tokenizer& tok, const EmbedOptions& opts)
    : tok_(tok),
      cfg_(model.config()),
      max_tokens_(cfg_.n_ctx_train > 0 ? cfg_.n_ctx_train : 4096),
      opts_(settled(model, opts)) {
  embed_ = [this, &model, o = opts_](const std::vector<std::vector<int32_t>>& batch) {
    return embeddings(model, batch, o, [this, &model](const std::function<void(Model&)>& step) {
      std::lock_guard lk(mu_);
      step(model);
    });
  };
}

Embedder::Embedder(Engine& engine, const EmbedOptions& opts)
    : tok_(engine.tokenizer()),
      cfg_(engine.model().config()),
      max_tokens_(engine.kv_capacity()),
      opts_(settled(engine.model(), opts)) {
  embed_ = [&engine, o = opts_](const std::vector<std::vector<int32_t>>& batch) {
    // Each forward takes the engine's model lock, so generation steps go on between them.
    return embeddings(engine.model(), batch, o,
                      [&engine](const std::function<void(Model&)>& step) { engine.with_model(step); });
  };
}

json Embedder::handle(const json& b, const std::string& model_name) {
  if (!b.is_object()) throw ApiError(400, "the request body must be a JSON object");
  if (!b.contains("input")) throw ApiError(400, "'input' is required", "invalid_request_error", "input");
  std::string format = "float";
  if (b.contains("encoding_format") && !b["encoding_format"].is_null()) {
    if (!b["encoding_format"].is_string() ||
        (b["encoding_format"] != "float" && b["encoding_format"] != "base64"))
      throw ApiError(400, "'encoding_format' must be \"float\" or \"base64\"", "invalid_request_error",
                     "encoding_format");
    format = b["encoding_format"];
  }
  if (b.contains("dimensions") && !b["dimensions"].is_null())
    throw ApiError(400, "'dimensions' is not supported", "invalid_request_error", "dimensions");
  // Normalize the input to a list of token sequences.
  const json& in = b["input"];
  std::vector<std::vector<int32_t>> batch;
  auto add_text = [&](const json& s) {
    try {
      batch.push_back(tok_.encode(s.get<std::string>(), true, false));
    } catch (const Error& e) {
      throw ApiError(400, e.what(), "invalid_request_error", "input");
    }
  };
  auto add_ids = [&](const json& v) {
    std::vector<int32_t> ids;
    for (const auto& x : v) {
      const int64_t id = x.get<int64_t>();
      if (id < 0 || id >= tok_.n_vocab())
        throw ApiError(400,
                       fmt::format("input token {} is outside the vocabulary [0, {})", id, tok_.n_vocab()),
                       "invalid_request_error", "input");
      ids.push_back(static_cast<int32_t>(id));
    }
    batch.push_back(std::move(ids));
  };
  if (in.is_string()) {
    add_text(in);
  } else if (is_token_array(in)) {
    add_ids(in);
  } else if (in.is_array() && !in.empty()) {
    for (const auto& x : in) {
      if (x.is_string())
        add_text(x);
      else if (is_token_array(x))
        add_ids(x);
      else
        throw ApiError(400, "'input' items must be strings or arrays of token ids", "invalid_request_error",
                       "input");
    }
  } else {
    throw ApiError(400, "'input' must be a string, an array of strings, or an array of token ids",
                   "invalid_request_error", "input");
  }
  if (batch.size() > 2048)
    throw ApiError(400, "at most 2048 inputs per request", "invalid_request_error", "input");
  int64_t n_tokens = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].empty())
      throw ApiError(400, fmt::format("input {} is empty", i), "invalid_request_error", "input");
    if (static_cast<int64_t>(batch[i].size()) > max_tokens_)
      throw ApiError(400,
                     fmt::format("input {} has {} tokens but the model takes at most {}", i, batch[i].size(),
                                 max_tokens_),
                     "invalid_request_error", "input", "context_length_exceeded");
    n_tokens += static_cast<int64_t>(batch[i].size());
  }
  const std::vector<std::vector<float>> vecs = embed_(batch);
  json data = json::array();
  for (size_t i = 0; i < vecs.size(); ++i) {
    json e = {{"object", "embedding"}, {"index", i}};
    if (format == "base64")
      e["embedding"] = base64(vecs[i].data(), vecs[i].size() * sizeof(float));
    else
      e["embedding"] = vecs[i];
    data.push_back(std::move(e));
  }
  return {{"object", "list"},
          {"data", data},
          {"model", model_name},
          {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}};
}

}  // namespace ferrum::server
