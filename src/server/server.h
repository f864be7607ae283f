// `ferrum serve`: an OpenAI-compatible HTTP server (cpp-httplib) in front of the Engine.
// Routes: POST /v1/chat/completions, POST /v1/completions, POST /v1/embeddings, GET /v1/models,
// GET /health, GET /metrics (Prometheus text).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/scheduler.h"

namespace httplib {
class Server;
}

namespace ferrum::server {

class ChatPrompt;
class Embedder;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;         // 0: any free port
  std::string api_key;     // non-empty: /v1/* needs "Authorization: Bearer <key>"
  std::string model_name;  // id reported by /v1/models (also accepted: "ferrum", the file name)
  size_t max_body_bytes = 8 << 20;
  int read_timeout_s = 60, write_timeout_s = 60;
  int http_threads = 0;  // 0: enough for every running + waiting request
};

class Server {
 public:
  // A decoder model behind the continuous-batching engine...
  Server(Engine& engine, ServerOptions opt) : Server(&engine, nullptr, std::move(opt)) {}
  // ...or an encoder model for /v1/embeddings (either may be null, not both).
  Server(Engine* engine, Embedder* embedder, ServerOptions opt);
  ~Server();

  // Binds the listening socket; returns the port (useful with port 0). Throws on failure.
  int bind();
  // Serves until stop(); call bind() first.
  void listen();
  // bind() + listen() on a background thread.
  int start();
  // Stops accepting and closes the listener (in-flight handlers finish first).
  void stop();
  int port() const { return port_; }

 private:
  void routes();
  Engine* engine_;
  Embedder* embedder_;
  ServerOptions opt_;
  std::vector<std::string> names_;
  std::unique_ptr<httplib::Server> http_;
  std::unique_ptr<ChatPrompt> chat_;
  std::thread thread_;
  int port_ = -1;
  std::atomic<uint64_t> http_requests_{0}, http_errors_{0};
  int64_t created_ = 0;
};

}  // namespace ferrum::server
