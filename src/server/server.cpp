#include "server/server.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "chat/chat_prompt.h"
#include "ferrum/version.h"
#include "models/registry.h"
#include "server/anthropic_messages.h"
#include "server/api_error.h"
#include "server/api_key.h"
#include "server/embeddings.h"
#include "server/error_answers.h"
#include "server/helper_routes.h"
#include "server/http_server.h"
#include "server/json_body.h"
#include "server/lora_registry.h"
#include "server/metrics_text.h"
#include "server/ollama_api.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/response_store.h"
#include "server/stream_answer.h"
#include "server/web_assets.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr auto kProbeEvery = std::chrono::milliseconds(10);  // how often a waiting handler checks its client

std::string error_type_for(int status) {
  if (status == 401) return "authentication_error";
  if (status == 404) return "not_found_error";
  if (status == 429 || status == 503) return "server_busy";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}


std::string new_id(const char* prefix) {
  static std::atomic<uint64_t> n{0};
  return fmt::format("{}-{:x}{:06x}", prefix, static_cast<uint64_t>(std::time(nullptr)), ++n);
}

// The API path without its optional /v1 prefix ("/v1/models" and "/models" are one route).
std::string_view api_path(std::string_view path) {
  if (path.starts_with("/v1/")) path.remove_prefix(3);
  return path;
}

}  // namespace

Server::Server(Engine* engine, Embedder* embedder, ServerOptions opt) : opt_(std::move(opt)) {
  if (!engine && !embedder) fail("server: no model to serve");
  const std::string& cfg_name = engine ? engine->model().config().name : embedder->config().name;
  if (opt_.model_name.empty()) opt_.model_name = cfg_name.empty() ? "ferrum" : cfg_name;
  ModelPreset preset;
  for (const std::string& a : opt_.model_aliases) {
    if (a.empty()) fail("--served-model-alias: a name cannot be empty");
    if (a != opt_.model_name && a != "ferrum" &&
        std::find(preset.aliases.begin(), preset.aliases.end(), a) == preset.aliases.end())
      preset.aliases.push_back(a);
  }
  preset.lora = opt_.lora_modules;
  auto m =
      std::make_shared<ServedModel>(opt_.model_name, engine, embedder, opt_.chat_template, std::move(preset));
  m->path = opt_.model_path;
  models_ = std::make_shared<ModelPool>(nullptr, ModelPool::Limits{0, 0, kKeepForever});
  models_->add_pinned(std::move(m));
  init();
}

Server::Server(std::shared_ptr<ModelPool> models, ServerOptions opt)
    : opt_(std::move(opt)), models_(std::move(models)) {
  if (!models_) fail("server: no model to serve");
  init();
}

void Server::init() {
  if (opt_.responses_ttl_s < 0) fail("--responses-ttl must be >= 0 seconds (got {})", opt_.responses_ttl_s);
  responses_ =
      std::make_shared<ResponseStore>(std::chrono::seconds(opt_.responses_ttl_s), opt_.responses_max);
  const auto all = models_->list();
  const Engine* engine = !all.empty() && all[0].pinned && all[0].model ? all[0].model->engine : nullptr;
  HttpLimits lim;
  lim.max_body_bytes = opt_.max_body_bytes;
  lim.max_inflight_body_bytes = std::max<size_t>(opt_.max_body_bytes * 8, 64u << 20);
  lim.idle_timeout_s = opt_.idle_timeout_s;
  lim.listen_backlog = opt_.listen_backlog;
  lim.max_connections_per_ip = opt_.max_connections_per_ip;
  lim.max_connections = opt_.max_connections > 0 ? opt_.max_connections
                        : engine ? engine->options().max_num_seqs + engine->options().max_waiting + 64
                                 : 256;
  http_ = std::make_unique<HttpServer>(
      lim, [this](const HttpRequest& req, HttpResponse& res) { return gate(req, res); },
      [this](const HttpRequest& req, HttpResponse& res, const ClientProbe& probe) {
        handle(req, res, probe);
      },
      [](int status, const std::string& msg) {
        return body_text(error_json(msg, error_type_for(status), "", ""));
      });
  if (opt_.request_log != RequestLogFormat::Off) {
    auto write = opt_.log_line ? opt_.log_line
                               : [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    http_->set_log(
        [write, format = opt_.request_log](const HttpLogEntry& e) { write(request_log_line(e, format)); });
  }
}

Server::~Server() {
  stop();
}

int Server::start() {
  port_ = http_->start(opt_.host, opt_.port);
  return port_;
}

void Server::stop() {
  if (http_) http_->stop();
}

// Authentication, decided on the headers before the body is read.
bool Server::gate(const HttpRequest& req, HttpResponse& res) {
  ++http_requests_;
  if (opt_.api_key.empty() || req.path == "/health" || (opt_.public_metrics && req.path == "/metrics") ||
      (opt_.webui && find_web_asset(req.path)))
    return false;
  const std::string auth = req.header("Authorization");
  if (bearer_matches(auth, opt_.api_key)) return false;
  // Anthropic's clients send the key as x-api-key.
  if (const std::string key = req.header("x-api-key"); !key.empty() && key_matches(key, opt_.api_key))
    return false;
  ++http_errors_;
  const bool missing = auth.empty() && req.header("x-api-key").empty();
  const std::string why = missing ? "missing API key: send 'Authorization: Bearer <key>'" : "invalid API key";
  if (api_path(req.path).starts_with("/messages")) {  // Anthropic's routes: its error shape
    res.status = 401;
    res.content_type = "application/json";
    res.body = body_text(message_error(401, missing ? "missing API key: send 'x-api-key: <key>'" : why));
  } else {
    send_error(res, 401, why, "authentication_error", "", "invalid_api_key");
  }
  res.headers.emplace_back("WWW-Authenticate", "Bearer");
  return true;
}

void Server::respond(const HttpRequest& req, HttpResponse& res) {
  if (!gate(req, res)) handle(req, res, ClientProbe(-1));
}

void Server::handle(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe) {
  try {
    route(req, res, probe);
  } catch (...) {
    if (api_path(req.path).starts_with("/messages"))
      send_message_error(res);  // Anthropic's routes answer errors in its own shape
    else if (req.path.starts_with("/api/"))
      send_ollama_error(res);  // and Ollama's in its
    else
      send_openai_error(res);
  }
  if (res.status >= 400) ++http_errors_;
}

void Server::route(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe) {
  if (req.path == "/health") {
    require_method(req, "GET");
    json h = {{"status", "ok"}};
    int running = 0, waiting = 0;
    for (const ModelStatus& m : models_->list())
      if (m.model && m.model->engine) {
        const EngineStats st = m.model->engine->stats();
        running += st.running;
        waiting += st.waiting;
      }
    h["running"] = running;
    h["waiting"] = waiting;
    res.body = body_text(h);
    return;
  }
  if (req.path == "/metrics") {
    require_method(req, "GET");
    // The default model's engine (a models folder without one: the first loaded decoder).
    std::shared_ptr<ServedModel> m;
    for (const ModelStatus& s : models_->list())
      if (!m && s.model && s.model->engine) m = s.model;
    const EngineStats st = m ? m->engine->stats() : EngineStats{};
    const KvUsage kv = m ? m->engine->kv_usage() : KvUsage{};
    res.content_type = "text/plain; version=0.0.4";
    res.body = prometheus_text(st, kv, http_requests_.load(), http_errors_.load());
    if (m && m->lora) res.body += lora_metrics_text(m->lora->list());
    res.body += models_metrics_text(models_->list());
    return;
  }
  if (opt_.webui)
    if (const WebAsset* a = find_web_asset(req.path)) {
      require_method(req, "GET");
      res.content_type = std::string(a->content_type);
      res.body = std::string(a->body);
      res.headers = {
          {"Cache-Control", "no-cache"},
          {"X-Content-Type-Options", "nosniff"},
          {"Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"}};
      return;
    }
  if (req.path.starts_with("/api/")) return ollama(req, res, probe, req.path);
  const std::string_view p = api_path(req.path);
  if (p == "/models/load" || p == "/models/unload") {
    require_json_post(req);
    models_admin(req, res, p == "/models/load");
  } else if (p == "/models" || p.starts_with("/models/")) {
    require_method(req, "GET");
    models(p == "/models" ? std::string() : std::string(p.substr(8)), res);
  } else if (p == "/chat/completions" || p == "/completions") {
    require_json_post(req);
    generate(req, res, probe, p == "/chat/completions");
  } else if (p == "/messages" || p == "/messages/count_tokens") {
    require_json_post(req);
    messages(req, res, probe, p == "/messages/count_tokens");
  } else if (p == "/load_lora_adapter" || p == "/unload_lora_adapter") {
    require_json_post(req);
    lora_admin(req, res, p == "/load_lora_adapter");
  } else if (p == "/embeddings") {
    require_json_post(req);
    embeddings(req, res);
  } else if (p == "/responses" || p.starts_with("/responses/")) {
    responses(req, res, probe, p);
  } else if (p == "/tokenize" || p == "/detokenize" || p == "/apply-template" || p == "/props") {
    helper(req, res, p);
  } else {
    throw ApiError(404, fmt::format("no route for {} {}", req.method, req.path), "not_found_error");
  }
}

// The model a body names ("model"; absent: the default one), loaded if need be; the body's
// "keep_alive" (Ollama's, accepted on every route) sets how long it stays loaded when idle.
Server::Lease Server::model_of(const json& body) {
  std::string name;
  std::optional<KeepAlive> keep_alive;
  if (body.is_object() && body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string())
      throw ApiError(400, "'model' must be a string", "invalid_request_error", "model");
    name = body["model"].get<std::string>();
  }
  if (body.is_object() && body.contains("keep_alive") && !body["keep_alive"].is_null())
    keep_alive = parse_keep_alive(body["keep_alive"]);
  return models_->acquire(name, keep_alive);
}

void Server::embeddings(const HttpRequest& req, HttpResponse& res) {
  const json body = parse_json_body(req.body);
  Lease m = model_of(body);
  if (!m->embedder)
    throw ApiError(400, fmt::format("embeddings are not enabled for model '{}'", m->id),
                   "invalid_request_error", "model", "model_not_supported");
  json b = body;
  if (b.is_object()) b.erase("model");  // resolved above (an alias, or "ferrum")
  res.body = body_text(m->embedder->handle(b, m->id));
}

// A chat or completion body checked and made into engine parameters: the model or LoRA adapter it
// names (with lora_scale), its preset's defaults, its grammar compiled.
Server::Prepared Server::prepare(const json& request, bool chat) {
  Prepared p{model_of(request), {}, nullptr};
  const ServedModel& m = *p.model;
  if (!m.engine)
    throw ApiError(400, fmt::format("model '{}' is an encoder: it only answers /v1/embeddings", m.id),
                   "invalid_request_error", "model", "model_not_supported");
  json body = request;
  apply_preset(m.preset, body, chat);
  const Tokenizer& tok = m.engine->tokenizer();
  const std::vector<std::string> names = m.names(m.id == models_->default_id());
  std::vector<std::string> accepted = names;
  if (body.is_object() && body.contains("model") && body["model"].is_string())
    accepted.push_back(body["model"]);  // the name the pool resolved
  p.pr = chat ? parse_chat_request(body, tok, *m.chat, accepted,
                                   {opt_.special_tokens_in_messages, opt_.reasoning})
              : parse_completion_request(body, tok, accepted);
  ParsedRequest& pr = p.pr;
  // "model" naming an adapter: the request runs with it (it keeps the adapter alive).
  p.lora = m.lora && !pr.model.empty() ? m.lora->find(pr.model) : nullptr;
  if (p.lora) pr.params.lora = p.lora->adapter;
  // Extension "lora_scale": the adapter's products times this factor, for this request only.
  if (body.contains("lora_scale") && !body["lora_scale"].is_null()) {
    const json& f = body["lora_scale"];
    if (!p.lora)
      throw ApiError(400, "'lora_scale' needs a LoRA adapter as the model", "invalid_request_error",
                     "lora_scale");
    if (!f.is_number() || !std::isfinite(f.get<double>()) || std::fabs(f.get<double>()) > 1000)
      throw ApiError(400, "'lora_scale' must be a number between -1000 and 1000", "invalid_request_error",
                     "lora_scale");
    if (f.get<double>() != 1.0) pr.params.lora = rescale_lora(p.lora->adapter, f.get<float>());
  }
  if (pr.grammar) {
    try {
      pr.params.grammar = m.grammars->get(*pr.grammar);
    } catch (const Error& e) {  // an invalid grammar or schema, or an unsupported keyword
      throw ApiError(400, e.what(), "invalid_request_error", pr.grammar_param);
    }
  }
  return p;
}

// Submits a prepared request (counting it for its adapter).
std::shared_ptr<RequestHandle> Server::submit(Prepared& p) {
  const size_t n_prompt = p.pr.params.prompt.size();
  auto handle = p.model->engine->submit(std::move(p.pr.params));
  if (p.lora && p.lora->counters) ++p.lora->counters->requests, p.lora->counters->prompt_tokens += n_prompt;
  return handle;
}

// Waits for the end of a non-streamed request; false (the request cancelled, the answer aborted)
// when the client hangs up meanwhile.
bool Server::collect(RequestHandle& handle, const ClientProbe& probe, Collected& c, HttpResponse& res,
                     const std::shared_ptr<const LoraEntry>& lora, Clock::time_point* first_token) {
  auto checked = Clock::now();
  while (true) {
    auto e = handle.next(kEnginePoll);
    if (Clock::now() - checked >= kProbeEvery) {
      checked = Clock::now();
      if (probe.gone()) {
        handle.cancel();
        res.abort = true;
        return false;
      }
    }
    if (!e) continue;
    if (first_token && c.completion_tokens == 0 && !e->tokens.empty() && c.text.empty())
      *first_token = Clock::now();
    c.add(*e);
    if (e->finished) break;
  }
  if (lora && lora->counters) lora->counters->completion_tokens += c.completion_tokens;
  if (c.finish_reason == "error") throw ApiError(500, c.error, "server_error");
  return true;
}

void Server::generate(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe, bool chat) {
  Prepared p = prepare(parse_json_body(req.body), chat);
  auto handle = submit(p);
  res.log = usage_log(handle);
  const Tokenizer& tok = p.model->engine->tokenizer();
  AnswerHeader h{new_id(chat ? "chatcmpl" : "cmpl"), p.lora ? p.lora->name : p.model->id,
                 static_cast<int64_t>(std::time(nullptr)), chat};
  if (p.pr.stream) {
    auto sse = std::make_shared<SseAnswer>(std::move(h), std::move(p.pr), tok, handle);
    stream_answer(res, sse, p.lora ? p.lora->counters : nullptr, ": keep-alive\n\n",  // an SSE comment
                  p.model);
    return;
  }
  Collected c;
  if (!collect(*handle, probe, c, res, p.lora)) return;
  res.body = body_text(full_answer(h, p.pr, tok, c));
}

// Anthropic's Messages API: the body as a chat request, the answer in Anthropic's shapes;
// count_tokens answers the prompt's length without running it.
void Server::messages(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe, bool count_only) {
  Prepared p = prepare(chat_body_of_messages(parse_json_body(req.body), count_only), true);
  if (count_only) {
    res.body = body_text({{"input_tokens", p.pr.params.prompt.size()}});
    return;
  }
  const int n_prompt = static_cast<int>(p.pr.params.prompt.size());
  auto handle = submit(p);
  res.log = usage_log(handle);
  AnswerHeader h{new_id("msg"), p.lora ? p.lora->name : p.model->id, static_cast<int64_t>(std::time(nullptr)),
                 true};
  if (p.pr.stream) {
    auto ms = std::make_shared<MessageStream>(std::move(h), std::move(p.pr), handle, n_prompt);
    stream_answer(res, ms, p.lora ? p.lora->counters : nullptr, "event: ping\ndata: {\"type\": \"ping\"}\n\n",
                  p.model);
    return;
  }
  Collected c;
  if (!collect(*handle, probe, c, res, p.lora)) return;
  res.body = body_text(message_answer(h, p.pr, c));
}

// vLLM's runtime adapter API: {"lora_name", "lora_path"} to load, {"lora_name"} to unload; plain
// text answers. Loading reads a path on the server's machine, so it is off unless allowed. The
// adapter belongs to the body's "model" (default: the default model).
void Server::lora_admin(const HttpRequest& req, HttpResponse& res, bool load) {
  if (!opt_.allow_runtime_lora)
    throw ApiError(
        403,
        "loading and unloading LoRA adapters at run time is disabled (ferrum serve --allow-runtime-lora)",
        "invalid_request_error", "", "runtime_lora_disabled");
  const json b = parse_json_body(req.body);
  auto field = [&](const char* k) {
    if (!b.is_object() || !b.contains(k) || !b[k].is_string())
      throw ApiError(400, fmt::format("'{}' (a string) is required", k), "invalid_request_error", k);
    return b[k].get<std::string>();
  };
  const std::string name = field("lora_name");
  Lease m = model_of(b);
  if (!m->lora) throw ApiError(400, "LoRA adapters need a decoder model", "invalid_request_error");
  if (load) {
    try {
      m->lora->add(name, field("lora_path"), m->names(m->id == models_->default_id()));
    } catch (const ApiError&) {
      throw;
    } catch (const Error& e) {
      throw ApiError(400, e.what(), "invalid_request_error", "lora_path");
    }
    res.body = fmt::format("Success: LoRA adapter '{}' added successfully.", name);
  } else {
    if (!m->lora->remove(name))
      throw ApiError(404, fmt::format("no LoRA adapter named '{}' is loaded", name), "not_found_error",
                     "lora_name");
    res.body = fmt::format("Success: LoRA adapter '{}' removed successfully.", name);
  }
  res.content_type = "text/plain";
}

// llama-server's helper routes (helper_routes.h), for a decoder model (the body's "model", or the
// default one).
void Server::helper(const HttpRequest& req, HttpResponse& res, std::string_view route) {
  if (route == "/props") {
    require_method(req, "GET");
  } else {
    require_json_post(req);
  }
  const json body = route == "/props" ? json::object() : parse_json_body(req.body);
  Lease m = model_of(body);
  if (!m->engine)
    throw ApiError(400, fmt::format("{} needs a decoder model; '{}' is an encoder", route, m->id),
                   "invalid_request_error", "", "model_not_supported");
  const Tokenizer& tok = m->engine->tokenizer();
  if (route == "/props") {
    PropsFacts f;
    f.model_name = m->id;
    f.model_path = m->path;
    f.chat_template = m->chat->source();
    f.bos_token = tok.bos_text();
    f.eos_token = tok.eos_text();
    f.n_ctx = m->engine->kv_capacity();
    f.total_slots = m->engine->options().max_num_seqs;
    f.sampling = {{"temperature", 1.0}, {"top_p", 1.0}, {"top_k", 0}, {"min_p", 0.0}, {"max_tokens", -1}};
    res.body = body_text(props_answer(f));
  } else if (route == "/tokenize") {
    res.body = body_text(tokenize_answer(body, tok));
  } else if (route == "/detokenize") {
    res.body = body_text(detokenize_answer(body, tok));
  } else {
    res.body = body_text(apply_template_answer(body, *m->chat, opt_.special_tokens_in_messages));
  }
}

}  // namespace ferrum::server
