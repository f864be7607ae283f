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
constexpr auto kPoll = std::chrono::milliseconds(100);
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

void require_method(const HttpRequest& req, const char* method) {
  if (req.method != method)
    throw ApiError(405, fmt::format("method {} not allowed for {} (use {})", req.method, req.path, method));
}

// The POST routes take JSON bodies only (415 otherwise, before the body is parsed).
void require_json_post(const HttpRequest& req) {
  require_method(req, "POST");
  check_json_content_type(req.header("Content-Type"));
}

}  // namespace

Server::Server(Engine* engine, Embedder* embedder, ServerOptions opt)
    : engine_(engine), embedder_(embedder), opt_(std::move(opt)) {
  if (!engine_ && !embedder_) fail("server: no model to serve");
  const std::string& cfg_name = engine_ ? engine_->model().config().name : embedder_->config().name;
  if (opt_.model_name.empty()) opt_.model_name = cfg_name.empty() ? "ferrum" : cfg_name;
  names_ = {opt_.model_name, "ferrum"};
  std::vector<std::string> aliases;  // each once, the primary name not among them
  for (const std::string& a : opt_.model_aliases) {
    if (a.empty()) fail("--served-model-alias: a name cannot be empty");
    if (a != opt_.model_name && std::find(aliases.begin(), aliases.end(), a) == aliases.end())
      aliases.push_back(a);
    if (std::find(names_.begin(), names_.end(), a) == names_.end()) names_.push_back(a);
  }
  opt_.model_aliases = std::move(aliases);
  if (engine_) chat_ = std::make_unique<chat::ChatPrompt>(engine_->tokenizer(), opt_.chat_template);
  if (engine_) grammars_ = std::make_unique<grammar::GrammarCache>(engine_->tokenizer());
  if (engine_) lora_ = std::make_unique<LoraRegistry>(engine_->model());
  if (opt_.responses_ttl_s < 0) fail("--responses-ttl must be >= 0 seconds (got {})", opt_.responses_ttl_s);
  responses_ =
      std::make_shared<ResponseStore>(std::chrono::seconds(opt_.responses_ttl_s), opt_.responses_max);
  for (const std::string& m : opt_.lora_modules) {
    const size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("--lora {}: expected name=PATH[:scale] (the name requests give as \"model\")", m);
    if (!lora_) fail("--lora {}: LoRA adapters need a decoder model", m);
    lora_->add(m.substr(0, eq), m.substr(eq + 1), names_);
  }
  created_ = static_cast<int64_t>(std::time(nullptr));
  HttpLimits lim;
  lim.max_body_bytes = opt_.max_body_bytes;
  lim.max_inflight_body_bytes = std::max<size_t>(opt_.max_body_bytes * 8, 64u << 20);
  lim.idle_timeout_s = opt_.idle_timeout_s;
  lim.listen_backlog = opt_.listen_backlog;
  lim.max_connections_per_ip = opt_.max_connections_per_ip;
  lim.max_connections = opt_.max_connections > 0 ? opt_.max_connections
                        : engine_ ? engine_->options().max_num_seqs + engine_->options().max_waiting + 64
                                  : 128;
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
    if (engine_) {
      const EngineStats st = engine_->stats();
      h["running"] = st.running;
      h["waiting"] = st.waiting;
    }
    res.body = body_text(h);
    return;
  }
  if (req.path == "/metrics") {
    require_method(req, "GET");
    const EngineStats st = engine_ ? engine_->stats() : EngineStats{};
    const KvUsage kv = engine_ ? engine_->kv_usage() : KvUsage{};
    res.content_type = "text/plain; version=0.0.4";
    res.body = prometheus_text(st, kv, http_requests_.load(), http_errors_.load());
    if (lora_) res.body += lora_metrics_text(lora_->list());
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
  if (p == "/models" || p.starts_with("/models/")) {
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

void Server::models(const std::string& id, HttpResponse& res) {
  const auto& cfg = engine_ ? engine_->model().config() : embedder_->config();
  json meta = {{"n_vocab", cfg.n_vocab}, {"kind", engine_ ? "decoder" : "encoder"}, {"isa", kernel_tier()}};
  if (engine_) meta["n_ctx"] = engine_->kv_capacity();
  if (embedder_) meta["n_embd"] = embedder_->dim();
  // The served model under one of its names (as vLLM, each name a card of its own).
  auto model_json = [&](const std::string& name) {
    json m = {
        {"id", name}, {"object", "model"}, {"created", created_}, {"owned_by", "ferrum"}, {"meta", meta}};
    m["root"] = opt_.model_name;
    m["parent"] = nullptr;
    return m;
  };
  auto adapter_json = [&](const LoraEntry& e) {
    json a = {{"id", e.name},         {"object", "model"}, {"created", e.created},
              {"owned_by", "ferrum"}, {"root", e.path},    {"parent", opt_.model_name}};
    a["meta"] = meta;
    a["meta"]["lora_bytes"] = lora_bytes(*e.adapter);
    return a;
  };
  if (id.empty()) {
    json data = json::array({model_json(opt_.model_name)});
    for (const std::string& a : opt_.model_aliases) data.push_back(model_json(a));
    if (lora_)
      for (const auto& e : lora_->list()) data.push_back(adapter_json(*e));
    res.body = body_text({{"object", "list"}, {"data", data}});
    return;
  }
  if (lora_)
    if (auto e = lora_->find(id)) {
      res.body = body_text(adapter_json(*e));
      return;
    }
  if (std::find(names_.begin(), names_.end(), id) == names_.end())
    throw ApiError(404,
                   fmt::format("The model '{}' does not exist; this server serves '{}'", id, opt_.model_name),
                   "invalid_request_error", "model", "model_not_found");
  const auto& al = opt_.model_aliases;
  res.body = body_text(model_json(std::find(al.begin(), al.end(), id) != al.end() ? id : opt_.model_name));
}

void Server::embeddings(const HttpRequest& req, HttpResponse& res) {
  if (!embedder_)
    throw ApiError(400, "embeddings are not enabled on this server", "invalid_request_error", "model",
                   "model_not_supported");
  const json body = parse_json_body(req.body);
  check_model(body);
  res.body = body_text(embedder_->handle(body, opt_.model_name));
}

// A body's "model", when given, must be a name this server answers to.
void Server::check_model(const json& body) const {
  if (body.is_object() && body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string() ||
        std::find(names_.begin(), names_.end(), body["model"].get<std::string>()) == names_.end())
      throw ApiError(404,
                     fmt::format("The model {} does not exist; this server serves '{}'", body["model"].dump(),
                                 opt_.model_name),
                     "invalid_request_error", "model", "model_not_found");
  }
}

// A chat or completion body checked and made into engine parameters: the model or LoRA adapter it
// names (with lora_scale), its grammar compiled.
Server::Prepared Server::prepare(const json& body, bool chat) {
  if (!engine_)
    throw ApiError(400, "the served model is an encoder: it only answers /v1/embeddings",
                   "invalid_request_error", "model", "model_not_supported");
  const Tokenizer& tok = engine_->tokenizer();
  const std::vector<std::string> names = served_names();
  Prepared p{
      chat ? parse_chat_request(body, tok, *chat_, names, {opt_.special_tokens_in_messages, opt_.reasoning})
           : parse_completion_request(body, tok, names),
      nullptr};
  ParsedRequest& pr = p.pr;
  // "model" naming an adapter: the request runs with it (it keeps the adapter alive).
  p.lora = lora_ && !pr.model.empty() ? lora_->find(pr.model) : nullptr;
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
  if (!p.lora && !pr.model.empty() && std::find(names_.begin(), names_.end(), pr.model) == names_.end())
    throw ApiError(404,
                   fmt::format("The model '{}' does not exist (its LoRA adapter was unloaded)", pr.model),
                   "invalid_request_error", "model", "model_not_found");
  if (pr.grammar) {
    try {
      pr.params.grammar = grammars_->get(*pr.grammar);
    } catch (const Error& e) {  // an invalid grammar or schema, or an unsupported keyword
      throw ApiError(400, e.what(), "invalid_request_error", pr.grammar_param);
    }
  }
  return p;
}

// Submits a prepared request (counting it for its adapter).
std::shared_ptr<RequestHandle> Server::submit(Prepared& p) {
  const size_t n_prompt = p.pr.params.prompt.size();
  auto handle = engine_->submit(std::move(p.pr.params));
  if (p.lora && p.lora->counters) ++p.lora->counters->requests, p.lora->counters->prompt_tokens += n_prompt;
  return handle;
}

// Waits for the end of a non-streamed request; false (the request cancelled, the answer aborted)
// when the client hangs up meanwhile.
bool Server::collect(RequestHandle& handle, const ClientProbe& probe, Collected& c, HttpResponse& res,
                     const std::shared_ptr<const LoraEntry>& lora, Clock::time_point* first_token) {
  auto checked = Clock::now();
  while (true) {
    auto e = handle.next(kPoll);
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
  const Tokenizer& tok = engine_->tokenizer();
  AnswerHeader h{new_id(chat ? "chatcmpl" : "cmpl"), p.lora ? p.lora->name : opt_.model_name,
                 static_cast<int64_t>(std::time(nullptr)), chat};
  if (p.pr.stream) {
    auto sse = std::make_shared<SseAnswer>(std::move(h), std::move(p.pr), tok, handle);
    stream_answer(res, sse, p.lora ? p.lora->counters : nullptr, ": keep-alive\n\n");  // an SSE comment
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
  AnswerHeader h{new_id("msg"), p.lora ? p.lora->name : opt_.model_name,
                 static_cast<int64_t>(std::time(nullptr)), true};
  if (p.pr.stream) {
    auto ms = std::make_shared<MessageStream>(std::move(h), std::move(p.pr), handle, n_prompt);
    stream_answer(res, ms, p.lora ? p.lora->counters : nullptr,
                  "event: ping\ndata: {\"type\": \"ping\"}\n\n");
    return;
  }
  Collected c;
  if (!collect(*handle, probe, c, res, p.lora)) return;
  res.body = body_text(message_answer(h, p.pr, c));
}

}  // namespace ferrum::server

namespace ferrum::server {

std::vector<std::string> Server::served_names() const {
  std::vector<std::string> names = names_;
  if (lora_)
    for (const auto& e : lora_->list()) names.push_back(e->name);
  return names;
}

// vLLM's runtime adapter API: {"lora_name", "lora_path"} to load, {"lora_name"} to unload; plain
// text answers. Loading reads a path on the server's machine, so it is off unless allowed.
void Server::lora_admin(const HttpRequest& req, HttpResponse& res, bool load) {
  if (!opt_.allow_runtime_lora)
    throw ApiError(
        403,
        "loading and unloading LoRA adapters at run time is disabled (ferrum serve --allow-runtime-lora)",
        "invalid_request_error", "", "runtime_lora_disabled");
  if (!lora_) throw ApiError(400, "LoRA adapters need a decoder model", "invalid_request_error");
  const json b = parse_json_body(req.body);
  auto field = [&](const char* k) {
    if (!b.is_object() || !b.contains(k) || !b[k].is_string())
      throw ApiError(400, fmt::format("'{}' (a string) is required", k), "invalid_request_error", k);
    return b[k].get<std::string>();
  };
  const std::string name = field("lora_name");
  if (load) {
    try {
      lora_->add(name, field("lora_path"), names_);
    } catch (const ApiError&) {
      throw;
    } catch (const Error& e) {
      throw ApiError(400, e.what(), "invalid_request_error", "lora_path");
    }
    res.body = fmt::format("Success: LoRA adapter '{}' added successfully.", name);
  } else {
    if (!lora_->remove(name))
      throw ApiError(404, fmt::format("no LoRA adapter named '{}' is loaded", name), "not_found_error",
                     "lora_name");
    res.body = fmt::format("Success: LoRA adapter '{}' removed successfully.", name);
  }
  res.content_type = "text/plain";
}

// llama-server's helper routes (helper_routes.h), for a decoder model.
void Server::helper(const HttpRequest& req, HttpResponse& res, std::string_view route) {
  if (!engine_)
    throw ApiError(400, fmt::format("{} needs a decoder model; this server serves an encoder", route),
                   "invalid_request_error", "", "model_not_supported");
  const Tokenizer& tok = engine_->tokenizer();
  if (route == "/props") {
    require_method(req, "GET");
    PropsFacts f;
    f.model_name = opt_.model_name;
    f.model_path = opt_.model_path;
    f.chat_template = chat_->source();
    f.bos_token = tok.bos_text();
    f.eos_token = tok.eos_text();
    f.n_ctx = engine_->kv_capacity();
    f.total_slots = engine_->options().max_num_seqs;
    f.sampling = {{"temperature", 1.0}, {"top_p", 1.0}, {"top_k", 0}, {"min_p", 0.0}, {"max_tokens", -1}};
    res.body = body_text(props_answer(f));
    return;
  }
  require_json_post(req);
  const json body = parse_json_body(req.body);
  if (route == "/tokenize")
    res.body = body_text(tokenize_answer(body, tok));
  else if (route == "/detokenize")
    res.body = body_text(detokenize_answer(body, tok));
  else
    res.body = body_text(apply_template_answer(body, *chat_, opt_.special_tokens_in_messages));
}

// Ollama's API: chat and generate on the engine paths, embed through the Embedder, the served model
// in tags / ps / show; no registry behind pull, push, create, copy or delete.
void Server::ollama(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe,
                    const std::string& p) {
  if (p == "/api/version" || p == "/api/tags" || p == "/api/ps") {
    require_method(req, "GET");
    res.body = body_text(p == "/api/version" ? json{{"version", FERRUM_VERSION_STRING}}
                                             : json{{"models", json::array({ollama_model()})}});
    return;
  }
  if (p == "/api/pull" || p == "/api/push" || p == "/api/create" || p == "/api/copy" || p == "/api/delete")
    throw ApiError(400,
                   fmt::format("ferrum serve has no model registry: it serves '{}'; to serve another model, "
                               "start ferrum serve with its GGUF file or Hugging Face directory",
                               opt_.model_name));
  require_method(req, "POST");  // any Content-Type: Ollama's clients (and curl -d) send JSON without one
  const json body = parse_json_body(req.body);
  if (p == "/api/show") {
    json m = ollama_model();
    const ModelConfig& cfg = engine_ ? engine_->model().config() : embedder_->config();
    res.body = body_text({{"modelfile", ""},
                          {"parameters", ""},
                          {"template", engine_ ? engine_->tokenizer().chat_template() : ""},
                          {"details", m["details"]},
                          {"model_info",
                           {{"general.architecture", arch_name(cfg.arch)},
                            {"general.name", cfg.name},
                            {"context_length", engine_ ? engine_->kv_capacity() : cfg.n_ctx_train},
                            {"embedding_length", cfg.n_embd},
                            {"block_count", cfg.n_layer}}}});
    return;
  }
  if (p == "/api/embed") {
    if (!embedder_) throw ApiError(400, "embeddings are not enabled on this server");
    json o = {{"input", body.contains("input") ? body["input"] : json()}};
    if (body.contains("model")) o["model"] = ollama_model_name(body.value("model", ""));
    const auto t0 = Clock::now();
    check_model(o);
    const json a = embedder_->handle(o, opt_.model_name);
    json vecs = json::array();
    for (const json& d : a["data"]) vecs.push_back(d["embedding"]);
    res.body = body_text(
        {{"model", opt_.model_name},
         {"embeddings", vecs},
         {"total_duration", std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()},
         {"load_duration", 0},
         {"prompt_eval_count", a["usage"]["prompt_tokens"]}});
    return;
  }
  if (p != "/api/chat" && p != "/api/generate")
    throw ApiError(404, fmt::format("no route for {} {}", req.method, req.path), "not_found_error");
  const bool chat = p == "/api/chat";
  bool completion = false;
  OllamaTiming t;
  t.start = Clock::now();
  Prepared pp = prepare(openai_body_of_ollama(body, chat, &completion), !completion);
  auto handle = submit(pp);
  res.log = usage_log(handle);
  const std::string model = pp.lora ? pp.lora->name : opt_.model_name;
  if (pp.pr.stream) {
    auto s = std::make_shared<OllamaStream>(model, chat, std::move(pp.pr), handle);
    // While nothing else is sent, an empty piece (a line NDJSON readers take as it is).
    json idle = {{"model", model}, {"created_at", ollama_time_now()}, {"done", false}};
    if (chat)
      idle["message"] = {{"role", "assistant"}, {"content", ""}};
    else
      idle["response"] = "";
    stream_answer(res, s, pp.lora ? pp.lora->counters : nullptr, body_text(idle) + "\n",
                  "application/x-ndjson");
    return;
  }
  Collected c;
  t.first_token = t.start;
  if (!collect(*handle, probe, c, res, pp.lora, &t.first_token)) return;
  t.has_first = true;
  res.body = body_text(ollama_answer(model, chat, pp.pr, c, t));
}

// The served model as /api/tags and /api/ps list it.
nlohmann::json Server::ollama_model() const {
  const ModelConfig& cfg = engine_ ? engine_->model().config() : embedder_->config();
  const int64_t size = engine_ ? static_cast<int64_t>(engine_->model().weight_bytes()) : 0;
  const json details = {{"format", "gguf"},
                        {"family", arch_name(cfg.arch)},
                        {"families", {arch_name(cfg.arch)}},
                        {"parameter_size", ""},
                        {"quantization_level", ""}};
  return {{"name", opt_.model_name + ":latest"},
          {"model", opt_.model_name + ":latest"},
          {"modified_at", ollama_time_now()},
          {"size", size},
          {"digest", ""},
          {"details", details},
          {"expires_at", "9999-12-31T00:00:00Z"},
          {"size_vram", 0}};
}

}  // namespace ferrum::server
