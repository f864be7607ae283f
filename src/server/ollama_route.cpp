// Ollama's routes on the server (the shapes: ollama_api.h): chat and generate on the engine paths,
// embed through the model's Embedder, the models of the pool in tags (all), ps (loaded) and show;
// a chat without messages or a generate without a prompt only loads the model (or, with
// keep_alive 0, unloads it), as Ollama does; no registry behind pull, push, create, copy or delete.
#include <ctime>

#include "ferrum/version.h"
#include "models/registry.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/json_body.h"
#include "server/ollama_api.h"
#include "server/server.h"
#include "server/stream_answer.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string rfc3339(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A model as /api/tags and /api/ps list it.
json ollama_model(const ModelStatus& s) {
  const ServedModel* m = s.model.get();
  const std::string family = m ? arch_name(m->config().arch) : "";
  const json details = {{"format", s.path.ends_with(".gguf") ? "gguf" : "safetensors"},
                        {"family", family},
                        {"families", m ? json::array({family}) : json(nullptr)},
                        {"parameter_size", ""},
                        {"quantization_level", ""}};
  json j = {{"name", s.id + ":latest"},
            {"model", s.id + ":latest"},
            {"modified_at", ollama_time_now()},
            {"size", s.bytes},
            {"digest", ""},
            {"details", details}};
  if (s.state == ModelState::Loaded) {
    j["expires_at"] = s.expires ? rfc3339(*s.expires) : "9999-12-31T00:00:00Z";
    j["size_vram"] = 0;
    j["context_length"] = s.context;
  }
  return j;
}

}  // namespace

void Server::ollama(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe,
                    const std::string& p) {
  if (p == "/api/version" || p == "/api/tags" || p == "/api/ps") {
    require_method(req, "GET");
    if (p == "/api/version") {
      res.body = body_text({{"version", FERRUM_VERSION_STRING}});
      return;
    }
    json list = json::array();
    for (const ModelStatus& s : models_->list())
      if (p == "/api/tags" || s.state == ModelState::Loaded) list.push_back(ollama_model(s));
    res.body = body_text({{"models", list}});
    return;
  }
  if (p == "/api/pull" || p == "/api/push" || p == "/api/create" || p == "/api/copy" || p == "/api/delete")
    throw ApiError(400,
                   "ferrum serve has no model registry: copy GGUF files or Hugging Face directories into "
                   "the folder given to --models-dir (or start ferrum serve with the model's path)");
  require_method(req, "POST");  // any Content-Type: Ollama's clients (and curl -d) send JSON without one
  json body = parse_json_body(req.body);
  if (body.is_object() && body.contains("model") && body["model"].is_string())
    body["model"] = ollama_model_name(body["model"]);
  if (p == "/api/show") {
    Lease m = model_of(body);
    const ModelConfig& cfg = m->config();
    json details = ollama_model(ModelStatus{m->id,
                                            m->path,
                                            {},
                                            ModelState::Loaded,
                                            false,
                                            0,
                                            m->memory_bytes(),
                                            m->context(),
                                            std::nullopt,
                                            "",
                                            m})["details"];
    res.body = body_text({{"modelfile", ""},
                          {"parameters", ""},
                          {"template", m->engine ? m->engine->tokenizer().chat_template() : ""},
                          {"details", details},
                          {"model_info",
                           {{"general.architecture", arch_name(cfg.arch)},
                            {"general.name", cfg.name},
                            {"context_length", m->context()},
                            {"embedding_length", cfg.n_embd},
                            {"block_count", cfg.n_layer}}}});
    return;
  }
  if (p == "/api/embed") {
    json o = {{"input", body.contains("input") ? body["input"] : json()}};
    const auto t0 = Clock::now();
    Lease m = model_of(body);
    if (!m->embedder) throw ApiError(400, fmt::format("embeddings are not enabled for model '{}'", m->id));
    const json a = m->embedder->handle(o, m->id);
    json vecs = json::array();
    for (const json& d : a["data"]) vecs.push_back(d["embedding"]);
    res.body = body_text(
        {{"model", m->id},
         {"embeddings", vecs},
         {"total_duration", std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()},
         {"load_duration", 0},
         {"prompt_eval_count", a["usage"]["prompt_tokens"]}});
    return;
  }
  if (p != "/api/chat" && p != "/api/generate")
    throw ApiError(404, fmt::format("no route for {} {}", req.method, req.path), "not_found_error");
  ollama_chat(req, res, probe, body, p == "/api/chat");
}

void Server::ollama_chat(const HttpRequest&, HttpResponse& res, const ClientProbe& probe, const json& body,
                         bool chat) {
  OllamaTiming t;
  t.start = Clock::now();
  // Nothing to answer: load the model (keep_alive 0: unload it) and say so.
  const bool empty = body.is_object() && (chat ? !body.contains("messages") ||
                                                     (body["messages"].is_array() && body["messages"].empty())
                                               : !body.contains("prompt") || body["prompt"] == "");
  if (empty) {
    Lease m = model_of(body);
    const std::string id = m->id;
    const bool unload =
        body.contains("keep_alive") && parse_keep_alive(body["keep_alive"]) == KeepAlive::zero();
    m.reset();
    if (unload && id != models_->default_id()) models_->unload(id);
    json a = {{"model", id},
              {"created_at", ollama_time_now()},
              {"done", true},
              {"done_reason", unload ? "unload" : "load"}};
    if (chat)
      a["message"] = {{"role", "assistant"}, {"content", ""}};
    else
      a["response"] = "";
    res.body = body_text(a);
    return;
  }
  bool completion = false;
  Prepared pp = prepare(openai_body_of_ollama(body, chat, &completion), !completion);
  auto handle = submit(pp);
  res.log = usage_log(handle);
  const std::string model = pp.lora ? pp.lora->name : pp.model->id;
  if (pp.pr.stream) {
    auto s = std::make_shared<OllamaStream>(model, chat, std::move(pp.pr), handle);
    // While nothing else is sent, an empty piece (a line NDJSON readers take as it is).
    json idle = {{"model", model}, {"created_at", ollama_time_now()}, {"done", false}};
    if (chat)
      idle["message"] = {{"role", "assistant"}, {"content", ""}};
    else
      idle["response"] = "";
    stream_answer(res, s, pp.lora ? pp.lora->counters : nullptr, body_text(idle) + "\n", pp.model,
                  "application/x-ndjson");
    return;
  }
  Collected c;
  t.first_token = t.start;
  if (!collect(*handle, probe, c, res, pp.lora, &t.first_token)) return;
  t.has_first = true;
  res.body = body_text(ollama_answer(model, chat, pp.pr, c, t));
}

}  // namespace ferrum::server
