#include "server/server.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>

#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "server/embeddings.h"
#include "server/metrics_text.h"
#include "server/openai_request.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;
constexpr auto kPoll = std::chrono::milliseconds(100);

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& param = "", const std::string& code = "") {
  res.status = status;
  res.set_content(dump(error_json(message, type, param, code)), "application/json");
}

std::string error_type_for(int status) {
  if (status == 401) return "authentication_error";
  if (status == 404) return "not_found_error";
  if (status == 429 || status == 503) return "server_busy";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

json token_bytes(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(c);
  return b;
}

// Accumulates a request's output (the non-streaming answer, and usage for streams).
struct Collected {
  std::string text;
  std::vector<TokenLogprob> logprobs;
  std::string finish_reason;
  std::string error;
  int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  void add(RequestEvent& e) {
    text += e.text;
    for (auto& l : e.logprobs) logprobs.push_back(std::move(l));
    if (e.finished) {
      finish_reason = e.finish_reason;
      error = e.error;
      prompt_tokens = e.prompt_tokens;
      completion_tokens = e.completion_tokens;
      cached_tokens = e.cached_tokens;
    }
  }
};

json usage_json(int prompt, int completion, int cached) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

json chat_logprobs(const Tokenizer& tok, const std::vector<TokenLogprob>& lps) {
  json content = json::array();
  for (const auto& l : lps) {
    const std::string piece = tok.token_to_piece(l.id);
    json top = json::array();
    for (const auto& [id, lp] : l.top) {
      const std::string p = tok.token_to_piece(id);
      top.push_back({{"token", p}, {"logprob", lp}, {"bytes", token_bytes(p)}});
    }
    content.push_back(
        {{"token", piece}, {"logprob", l.logprob}, {"bytes", token_bytes(piece)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

json completion_logprobs(const Tokenizer& tok, const std::vector<TokenLogprob>& lps, size_t& text_offset) {
  json tokens = json::array(), lp = json::array(), top = json::array(), offs = json::array();
  for (const auto& l : lps) {
    const std::string piece = tok.token_to_piece(l.id);
    tokens.push_back(piece);
    lp.push_back(l.logprob);
    json t = json::object();
    for (const auto& [id, v] : l.top) t[tok.token_to_piece(id)] = v;
    top.push_back(t);
    offs.push_back(text_offset);
    text_offset += piece.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", lp}, {"top_logprobs", top}, {"text_offset", offs}};
}

std::string new_id(const char* prefix) {
  static std::atomic<uint64_t> n{0};
  return fmt::format("{}-{:x}{:06x}", prefix, static_cast<uint64_t>(std::time(nullptr)), ++n);
}

}  // namespace

Server::Server(Engine* engine, Embedder* embedder, ServerOptions opt)
    : engine_(engine), embedder_(embedder), opt_(std::move(opt)), http_(std::make_unique<httplib::Server>()) {
  if (!engine_ && !embedder_) fail("server: no model to serve");
  const std::string& cfg_name = engine_ ? engine_->model().config().name : embedder_->model().config().name;
  if (opt_.model_name.empty()) opt_.model_name = cfg_name.empty() ? "ferrum" : cfg_name;
  names_ = {opt_.model_name, "ferrum"};
  if (engine_) chat_ = std::make_unique<ChatPrompt>(engine_->tokenizer());
  created_ = static_cast<int64_t>(std::time(nullptr));
  const int threads = opt_.http_threads > 0 ? opt_.http_threads
                      : engine_ ? engine_->options().max_num_seqs + engine_->options().max_waiting / 4 + 8
                                : 16;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http_->set_payload_max_length(opt_.max_body_bytes);
  http_->set_read_timeout(opt_.read_timeout_s, 0);
  http_->set_write_timeout(opt_.write_timeout_s, 0);
  http_->set_keep_alive_timeout(5);
  routes();
}

Server::~Server() {
  stop();
}

int Server::bind() {
  if (opt_.port == 0) {
    port_ = http_->bind_to_any_port(opt_.host);
    if (port_ < 0) fail("cannot bind to {} (any port)", opt_.host);
  } else {
    if (!http_->bind_to_port(opt_.host, opt_.port))
      fail("cannot bind to {}:{} (in use, or not an address of this machine)", opt_.host, opt_.port);
    port_ = opt_.port;
  }
  return port_;
}

void Server::listen() {
  http_->listen_after_bind();
}

int Server::start() {
  const int p = bind();
  thread_ = std::thread([this] { listen(); });
  // Wait until the accept loop runs, so a caller can connect right away.
  for (int i = 0; i < 500 && !http_->is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return p;
}

void Server::stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

void Server::routes() {
  auto& s = *http_;

  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    ++http_requests_;
    if (!opt_.api_key.empty() && req.path.starts_with("/v1/")) {
      const std::string auth = req.get_header_value("Authorization");
      if (auth != "Bearer " + opt_.api_key) {
        send_error(res, 401,
                   auth.empty() ? "missing API key: send 'Authorization: Bearer <key>'" : "invalid API key",
                   "authentication_error", "", "invalid_api_key");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    ++http_errors_;
    if (!res.body.empty()) return;
    std::string msg;
    if (res.status == 404)
      msg = fmt::format("no route for {} {}", req.method, req.path);
    else if (res.status == 413)
      msg = fmt::format("request body too large (limit {} bytes)", opt_.max_body_bytes);
    else if (res.status == 405)
      msg = fmt::format("method {} not allowed for {}", req.method, req.path);
    else
      msg = fmt::format("HTTP {}", res.status);
    send_error(res, res.status, msg, error_type_for(res.status));
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      send_error(res, e.status, e.what(), e.type, e.param, e.code);
    } catch (const BusyError& e) {
      send_error(res, 503, e.what(), "server_busy", "", "server_busy");
    } catch (const ContextLengthError& e) {
      send_error(res, 400, e.what(), "invalid_request_error", "messages", "context_length_exceeded");
    } catch (const Error& e) {
      send_error(res, 400, e.what(), "invalid_request_error");
    } catch (const std::exception& e) {
      send_error(res, 500, std::string("internal error: ") + e.what(), "server_error");
    } catch (...) {
      send_error(res, 500, "internal error", "server_error");
    }
  });

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    json h = {{"status", "ok"}};
    if (engine_) {
      const EngineStats st = engine_->stats();
      h["running"] = st.running;
      h["waiting"] = st.waiting;
    }
    res.set_content(dump(h), "application/json");
  });

  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const auto& cfg = engine_ ? engine_->model().config() : embedder_->model().config();
    json meta = {{"n_vocab", cfg.n_vocab}, {"kind", engine_ ? "decoder" : "encoder"}};
    if (engine_)
      meta["n_ctx"] = engine_->model().kv_capacity();
    else
      meta["n_embd"] = embedder_->model().dim();
    json m = {{"id", opt_.model_name},
              {"object", "model"},
              {"created", created_},
              {"owned_by", "ferrum"},
              {"meta", meta}};
    res.set_content(dump({{"object", "list"}, {"data", json::array({m})}}), "application/json");
  });

  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const EngineStats st = engine_ ? engine_->stats() : EngineStats{};
    const KvUsage kv = engine_ ? engine_->kv_usage() : KvUsage{};
    const json mm = engine_ ? engine_->model_metrics() : json::object();
    res.set_content(prometheus_text(st, kv, mm, http_requests_.load(), http_errors_.load()),
                    "text/plain; version=0.0.4");
  });

  s.Post("/v1/embeddings", [this](const httplib::Request& req, httplib::Response& res) {
    if (!embedder_) {
      send_error(
          res, 400,
          "the served model does not support embeddings (it is a decoder; serve an encoder such as BERT)",
          "invalid_request_error", "model", "model_not_supported");
      return;
    }
    json body;
    try {
      body = json::parse(req.body);
    } catch (const json::exception& e) {
      throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
    }
    if (body.is_object() && body.contains("model") && !body["model"].is_null()) {
      if (!body["model"].is_string() ||
          std::find(names_.begin(), names_.end(), body["model"].get<std::string>()) == names_.end())
        throw ApiError(404,
                       fmt::format("The model {} does not exist; this server serves '{}'",
                                   body["model"].dump(), opt_.model_name),
                       "invalid_request_error", "model", "model_not_found");
    }
    res.set_content(dump(embedder_->handle(body, opt_.model_name)), "application/json");
  });

  auto handle = [this](const httplib::Request& req, httplib::Response& res, bool chat) {
    if (!engine_)
      throw ApiError(400, "the served model is an encoder: it only answers /v1/embeddings",
                     "invalid_request_error", "model", "model_not_supported");
    const Tokenizer& tok = engine_->tokenizer();
    const Tokenizer* tp = &tok;
    if (req.body.empty()) throw ApiError(400, "the request body is empty; send a JSON object");
    json body;
    try {
      body = json::parse(req.body);
    } catch (const json::exception& e) {
      throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
    }
    ParsedRequest pr =
        chat ? parse_chat_request(body, tok, *chat_, names_) : parse_completion_request(body, tok, names_);
    auto h = engine_->submit(std::move(pr.params));
    const std::string id = new_id(chat ? "chatcmpl" : "cmpl");
    const int64_t created = static_cast<int64_t>(std::time(nullptr));
    const std::string model = opt_.model_name;

    if (!pr.stream) {
      Collected c;
      while (true) {
        auto e = h->next(kPoll);
        if (!e) continue;
        c.add(*e);
        if (e->finished) break;
      }
      if (c.finish_reason == "error") throw ApiError(500, c.error, "server_error");
      json choice = {{"index", 0}, {"finish_reason", c.finish_reason}, {"logprobs", nullptr}};
      if (chat) {
        choice["message"] = {{"role", "assistant"}, {"content", c.text}};
        if (pr.logprobs) choice["logprobs"] = chat_logprobs(tok, c.logprobs);
      } else {
        choice["text"] = c.text;
        size_t off = 0;
        if (pr.logprobs) choice["logprobs"] = completion_logprobs(tok, c.logprobs, off);
      }
      json out = {{"id", id},
                  {"object", chat ? "chat.completion" : "text_completion"},
                  {"created", created},
                  {"model", model},
                  {"system_fingerprint", "ferrum"},
                  {"choices", json::array({choice})},
                  {"usage", usage_json(c.prompt_tokens, c.completion_tokens, c.cached_tokens)}};
      res.set_content(dump(out), "application/json");
      return;
    }

    // Streaming: one SSE event per engine event; the releaser cancels the request when the
    // client went away before the end.
    struct StreamState {
      std::shared_ptr<RequestHandle> h;
      bool started = false, finished = false;
      size_t text_offset = 0;
    };
    auto st = std::make_shared<StreamState>();
    st->h = h;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [st, chat, pr, id, created, model, tp](size_t, httplib::DataSink& sink) {
          const Tokenizer& tok = *tp;
          auto chunk = [&](json choices, json usage) {
            json j = {{"id", id},
                      {"object", chat ? "chat.completion.chunk" : "text_completion"},
                      {"created", created},
                      {"model", model},
                      {"system_fingerprint", "ferrum"},
                      {"choices", std::move(choices)}};
            if (pr.include_usage) j["usage"] = std::move(usage);
            const std::string line = "data: " + dump(j) + "\n\n";
            return sink.write(line.data(), line.size());
          };
          if (chat && !st->started) {
            st->started = true;
            json c = {{"index", 0},
                      {"delta", {{"role", "assistant"}, {"content", ""}}},
                      {"logprobs", nullptr},
                      {"finish_reason", nullptr}};
            return chunk(json::array({c}), nullptr);
          }
          auto e = st->h->next(kPoll);
          if (!e) return sink.is_writable();  // keep waiting unless the client is gone
          if (e->finished && e->finish_reason == "error") {
            const std::string line = "data: " + dump(error_json(e->error, "server_error", "", "")) + "\n\n";
            sink.write(line.data(), line.size());
          }
          if (!e->text.empty() || !e->logprobs.empty() || e->finished) {
            json c = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
            if (chat) {
              c["delta"] = e->text.empty() && e->finished ? json::object() : json{{"content", e->text}};
              if (pr.logprobs && !e->logprobs.empty()) c["logprobs"] = chat_logprobs(tok, e->logprobs);
            } else {
              c["text"] = e->text;
              if (pr.logprobs && !e->logprobs.empty())
                c["logprobs"] = completion_logprobs(tok, e->logprobs, st->text_offset);
            }
            if (e->finished && e->finish_reason != "error" && e->finish_reason != "cancelled")
              c["finish_reason"] = e->finish_reason;
            if (!chunk(json::array({c}), nullptr)) return false;
          }
          if (e->finished) {
            st->finished = true;
            if (pr.include_usage &&
                !chunk(json::array(), usage_json(e->prompt_tokens, e->completion_tokens, e->cached_tokens)))
              return false;
            const std::string done = "data: [DONE]\n\n";
            if (!sink.write(done.data(), done.size())) return false;
            sink.done();
          }
          return true;
        },
        [st](bool) {
          if (!st->finished) st->h->cancel();
        });
  };
  s.Post("/v1/chat/completions",
         [handle](const httplib::Request& req, httplib::Response& res) { handle(req, res, true); });
  s.Post("/v1/completions",
         [handle](const httplib::Request& req, httplib::Response& res) { handle(req, res, false); });
  // llama-server style aliases.
  s.Post("/chat/completions",
         [handle](const httplib::Request& req, httplib::Response& res) { handle(req, res, true); });
  s.Post("/completions",
         [handle](const httplib::Request& req, httplib::Response& res) { handle(req, res, false); });
}

}  // namespace ferrum::server
