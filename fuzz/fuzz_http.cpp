// The server's request handling, from raw request bytes: "METHOD PATH" on the first line,
// "Name: value" header lines, a blank line, then the body (parsed here, leniently, the way the
// HTTP library hands requests over). The request goes through authentication and routing to
// the real handlers in front of a real engine (the bundled stories260K model), and a streamed
// answer is read to its end. Two servers: one open, one with an API key (the first byte picks).
// Every answer must be a well-formed HTTP status with a JSON (or metrics) body.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "engine/engine.h"
#include "loading/loader.h"
#include "server/http_server.h"
#include "server/server.h"

using namespace ferrum;

namespace {

struct Served {
  LoadedModel lm;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<server::Server> open, keyed;
  Served() {
    ModelOptions o;
    o.n_threads = 1;
    lm = load_model(FERRUM_SOURCE_DIR "/models/stories260K.gguf", o);
    EngineOptions eo;
    eo.kv.layout = KvLayout::Paged;
    eo.kv.capacity = 16;  // short generations (a few tokens) keep executions fast
    eo.max_num_seqs = 4;
    eo.max_batched_tokens = 16;
    engine = std::make_unique<Engine>(*lm.model, *lm.tokenizer, eo);
    server::ServerOptions so;
    so.model_name = "m";
    open = std::make_unique<server::Server>(*engine, so);
    so.api_key = "k";
    keyed = std::make_unique<server::Server>(*engine, so);
  }
};

Served& served() {
  static Served s;
  return s;
}

server::HttpRequest parse(std::string_view in) {
  server::HttpRequest r;
  auto line = [&] {
    const size_t n = in.find('\n');
    std::string_view l = in.substr(0, n);
    in = n == std::string_view::npos ? std::string_view() : in.substr(n + 1);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    return l;
  };
  std::string_view first = line();  // METHOD SP PATH [SP VERSION]
  const size_t sp = first.find(' ');
  r.method = std::string(first.substr(0, sp));
  first = sp == std::string_view::npos ? std::string_view() : first.substr(sp + 1);
  const size_t sp2 = first.find(' ');
  r.path = std::string(first.substr(0, sp2));
  if (sp2 != std::string_view::npos) r.version = std::string(first.substr(sp2 + 1));
  while (!in.empty()) {
    const std::string_view h = line();
    if (h.empty()) break;
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view v = h.substr(colon + 1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    r.headers.emplace_back(std::string(h.substr(0, colon)), std::string(v));
  }
  r.body = std::string(in);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  served();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (1 << 16)) return 0;
  Served& s = served();
  const server::HttpRequest req = parse(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  server::HttpResponse res;
  ((data[0] & 1) ? s.keyed : s.open)->respond(req, res);
  if (res.status < 200 || res.status > 599) std::abort();
  if (res.stream.next) {
    std::string out;
    bool more = true;
    for (int i = 0; more && i < 10000; ++i) more = res.stream.next(out);
    if (more) std::abort();  // a stream that never ends
    if (res.stream.closed) res.stream.closed(true);
  }
  return 0;
}
