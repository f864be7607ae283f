// The model routes on the server: GET /v1/models (every model of the pool under each of its names,
// with its state, as llama-server's router lists them, and the LoRA adapters of the loaded ones),
// GET /v1/models/{id}, and llama-server's POST /models/load and /models/unload {"model": id}.
#include <ctime>

#include "models/registry.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/json_body.h"
#include "server/server.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;

json meta_of(const ModelStatus& s) {
  json meta = {{"size", s.bytes}, {"isa", kernel_tier()}};
  if (s.context > 0 && !s.model) meta["n_ctx"] = s.context;  // an unloaded model's preset ctx_size
  if (const ServedModel* m = s.model.get()) {
    meta["n_vocab"] = m->config().n_vocab;
    meta["kind"] = m->engine ? "decoder" : "encoder";
    if (m->engine) meta["n_ctx"] = m->engine->kv_capacity();
    if (m->embedder) meta["n_embd"] = m->embedder->dim();
  }
  return meta;
}

json status_of(const ModelStatus& s) {
  json st = {{"value", model_state_name(s.state)}};
  if (s.state == ModelState::Failed) st["failed"] = true, st["error"] = s.error;
  if (s.pinned) st["pinned"] = true;
  if (s.in_use) st["in_use"] = s.in_use;
  return st;
}

// The cards of one model: one per name (as vLLM lists --served-model-name values), then one per
// adapter of a loaded model.
void add_cards(const ModelStatus& s, json& out) {
  const int64_t created = s.model ? s.model->created : 0;
  const json meta = meta_of(s), status = status_of(s);
  std::vector<std::string> names = {s.id};
  names.insert(names.end(), s.aliases.begin(), s.aliases.end());
  for (const std::string& n : names)
    out.push_back({{"id", n},
                   {"object", "model"},
                   {"created", created},
                   {"owned_by", "ferrum"},
                   {"root", s.id},
                   {"parent", nullptr},
                   {"status", status},
                   {"meta", meta}});
  if (!s.model || !s.model->lora) return;
  for (const auto& e : s.model->lora->list()) {
    json a = {{"id", e->name},   {"object", "model"}, {"created", e->created}, {"owned_by", "ferrum"},
              {"root", e->path}, {"parent", s.id},    {"status", status}};
    a["meta"] = meta;
    a["meta"]["lora_bytes"] = lora_bytes(*e->adapter);
    out.push_back(std::move(a));
  }
}

}  // namespace

void Server::models(const std::string& id, HttpResponse& res) {
  json data = json::array();
  for (const ModelStatus& s : models_->list()) add_cards(s, data);
  if (id.empty()) {
    res.body = body_text({{"object", "list"}, {"data", data}});
    return;
  }
  const std::string want = id == "ferrum" ? models_->default_id() : id;
  for (const json& card : data)
    if (card["id"] == want) {
      res.body = body_text(card);
      return;
    }
  std::vector<std::string> ids;
  for (const json& card : data) ids.push_back(card["id"]);
  throw ApiError(
      404, fmt::format("The model '{}' does not exist; this server serves {}", id, fmt::join(ids, ", ")),
      "invalid_request_error", "model", "model_not_found");
}

// llama-server's router: {"model": id} loaded now (answered once it is), or unloaded (now, or when
// the requests using it end).
void Server::models_admin(const HttpRequest& req, HttpResponse& res, bool load) {
  const json b = parse_json_body(req.body);
  if (!b.is_object() || !b.contains("model") || !b["model"].is_string() ||
      b["model"].get<std::string>().empty())
    throw ApiError(400, "'model' (a model id) is required", "invalid_request_error", "model");
  const std::string id = b["model"];
  if (load) {
    Lease m = model_of(b);
    res.body = body_text({{"success", true}, {"model", m->id}, {"status", "loaded"}});
    return;
  }
  const bool now = models_->unload(id);
  res.body = body_text({{"success", true}, {"model", id}, {"status", now ? "unloaded" : "unloading"}});
}

}  // namespace ferrum::server
