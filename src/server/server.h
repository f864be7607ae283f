// `ferrum serve`: an OpenAI-compatible HTTP server in front of the Engine (the transport and its
// limits: http_server.h). Routes, each also without the /v1 prefix: POST /v1/chat/completions,
// POST /v1/completions, POST /v1/embeddings, GET /v1/models, GET /v1/models/{id}; Anthropic's
// POST /v1/messages and /v1/messages/count_tokens (anthropic_messages.h); Ollama's /api/chat,
// /api/generate, /api/embed, /api/show, /api/tags, /api/ps, /api/version (ollama_api.h); llama-server's
// POST /tokenize, /detokenize, /apply-template and GET /props (helper_routes.h); the Responses API's
// POST /v1/responses, GET and DELETE /v1/responses/{id} (responses_request.h); the chat page at GET /
// (web_assets.h); and GET /health,
// GET /metrics (Prometheus text); LoRA adapters as models of their own (POST
// /v1/load_lora_adapter and /v1/unload_lora_adapter when allowed). A request's "model" picks one of
// the pool's models (model_pool.h: the command line's, and a models folder's loaded on demand;
// POST /models/load and /models/unload). With an API key every route but /health
// needs it (/metrics too, unless public_metrics). POST bodies must be JSON: a Content-Type other than
// application/json is a 415 (none at all is taken as JSON).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "grammar/grammar_cache.h"
#include "server/model_pool.h"
#include "server/openai_request.h"
#include "server/request_log.h"

namespace ferrum::server {

class Embedder;
class HttpServer;
struct HttpRequest;
struct HttpResponse;
class ClientProbe;
class ResponseStore;
struct LoraEntry;
struct Collected;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;              // 0: any free port
  std::string api_key;          // non-empty: every route but /health needs "Authorization: Bearer <key>"
  bool public_metrics = false;  // /metrics answers without the key
  std::string model_name;       // id reported by /v1/models (also accepted: "ferrum", the file name)
  std::string model_path;       // the served file or directory, as /props reports it
  // More names requests may give as "model" (vLLM's further --served-model-name values), for
  // clients with a fixed model name; /v1/models lists each, answers name model_name.
  std::vector<std::string> model_aliases;
  size_t max_body_bytes = 8 << 20;
  int idle_timeout_s = 15;    // a connection silent this long (partial headers, idle keep-alive) is closed
  int max_connections = 0;    // 0: running + waiting requests + 64; more get an immediate 503
  int listen_backlog = 1024;  // connects the kernel queues while the server accepts
  int max_connections_per_ip = 0;  // 0: no limit per client address (behind a proxy all share one)
  // Control tokens (e.g. <|im_start|>) written in chat message content are text, so a user
  // cannot forge turns; true parses them as tokens (only for trusted clients).
  bool special_tokens_in_messages = false;
  // LoRA adapters served as models "name" (vLLM's --lora-modules): "name=PATH[:scale]" each.
  std::vector<std::string> lora_modules;
  bool allow_runtime_lora = false;  // POST /v1/load_lora_adapter, /v1/unload_lora_adapter
  std::string chat_template;  // Jinja text used instead of the model's chat template ("" = the model's)
  // --reasoning-format auto (true): a thinking template's reasoning comes back as
  // `reasoning_content`, apart from `content`; none (false): left in `content`. Per request too.
  bool reasoning = true;
  // One line per finished request (request_log.h), written by `log_line` (default: to stderr).
  RequestLogFormat request_log = RequestLogFormat::Off;
  // Responses API: answers kept this long for previous_response_id and GET /v1/responses/{id}
  // (0: none kept), at most responses_max of them.
  bool webui = true;  // the chat page at / (web_assets.h; no key needed to load the page itself)
  int responses_ttl_s = 3600;
  size_t responses_max = 1024;
  std::function<void(const std::string&)> log_line;
};

class Server {
 public:
  // A decoder model behind the continuous-batching engine...
  Server(Engine& engine, ServerOptions opt) : Server(&engine, nullptr, std::move(opt)) {}
  // ...or an encoder model for /v1/embeddings, or a decoder with /v1/embeddings too (an Embedder
  // over the same engine). Either may be null, not both.
  Server(Engine* engine, Embedder* embedder, ServerOptions opt);
  // Models picked by each request's "model" from a pool (a models folder, loaded on demand).
  Server(std::shared_ptr<ModelPool> models, ServerOptions opt);
  ~Server();

  // Binds and serves on background threads; returns the port (useful with port 0). Throws on
  // failure (address in use, not an address of this machine).
  int start();
  // Stops accepting and closes the listener (in-flight requests finish first).
  void stop();
  int port() const { return port_; }
  // Answers one request as the transport would after reading it (authentication, then the
  // route), without a socket: for tests and fuzzing. A streamed answer is left in res.stream.
  void respond(const HttpRequest& req, HttpResponse& res);
  ModelPool& models() { return *models_; }

 private:
  using Lease = std::shared_ptr<ServedModel>;  // keeps its model loaded while held
  void init();
  bool gate(const HttpRequest& req, HttpResponse& res);
  void handle(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe);
  void route(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe);
  struct Prepared {
    Lease model;  // held until the answer is sent
    ParsedRequest pr;
    std::shared_ptr<const LoraEntry> lora;  // the adapter "model" names, if it names one
  };
  // The model a body's "model" names (and its "keep_alive"), loaded if need be.
  Lease model_of(const nlohmann::json& body);
  Prepared prepare(const nlohmann::json& body, bool chat);
  std::shared_ptr<RequestHandle> submit(Prepared& p);
  // Waits for the end of a non-streamed request (first_token: when its first token came).
  bool collect(RequestHandle& handle, const ClientProbe& probe, Collected& c, HttpResponse& res,
               const std::shared_ptr<const LoraEntry>& lora,
               std::chrono::steady_clock::time_point* first_token = nullptr);
  void generate(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe, bool chat);
  void messages(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe, bool count_only);
  void ollama(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe, const std::string& path);
  void ollama_chat(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe,
                   const nlohmann::json& body, bool chat);
  void embeddings(const HttpRequest& req, HttpResponse& res);
  void models(const std::string& id, HttpResponse& res);
  void models_admin(const HttpRequest& req, HttpResponse& res, bool load);
  void lora_admin(const HttpRequest& req, HttpResponse& res, bool load);
  void helper(const HttpRequest& req, HttpResponse& res, std::string_view route);
  void responses(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe, std::string_view route);
  ServerOptions opt_;
  std::shared_ptr<ModelPool> models_;
  std::unique_ptr<HttpServer> http_;
  std::shared_ptr<ResponseStore> responses_;  // the Responses API's stored answers
  int port_ = -1;
  std::atomic<uint64_t> http_requests_{0}, http_errors_{0};
};

}  // namespace ferrum::server
