// An in-process `ferrum serve` on 127.0.0.1 with a free port, for the HTTP tests.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine.h"
#include "loading/loader.h"
#include "server/server.h"

namespace ferrum::test {

struct TestServer {
  LoadedModel lm;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<server::Server> srv;
  int port = 0;

  explicit TestServer(const std::string& model_path, server::ServerOptions so = {}, EngineOptions eo = {},
                      int64_t kv_capacity = 256, int64_t kv_pool = 0) {
    ModelOptions o;
    o.n_threads = 2;
    lm = load_model(model_path, o);
    eo.kv.layout = KvLayout::Paged;
    eo.kv.capacity = kv_capacity;
    eo.kv.pool_tokens = kv_pool;
    engine = std::make_unique<Engine>(*lm.model, *lm.tokenizer, eo);
    so.host = "127.0.0.1";
    so.port = 0;
    if (so.model_name.empty()) so.model_name = "test-model";
    srv = std::make_unique<server::Server>(*engine, so);
    port = srv->start();
  }
  ~TestServer() {
    engine->shutdown(true);
    srv->stop();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
};

// POSTs a JSON body with the given client; *status gets the HTTP status, the result the parsed
// answer (discarded JSON on a body that is not JSON; a test failure and {} without a response).
inline nlohmann::json post_json(httplib::Client& c, const std::string& path, const nlohmann::json& body,
                                int* status) {
  auto r = c.Post(path, body.dump(), "application/json");
  if (!r) {
    ADD_FAILURE() << "no response for " << path;
    return {};
  }
  *status = r->status;
  return nlohmann::json::parse(r->body, nullptr, false);
}

inline std::string stories_gguf() {
  return std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf";
}

}  // namespace ferrum::test
