// The HTTP/1.1 transport under `ferrum serve`: GNU libmicrohttpd (thread per connection) with
// the limits a public endpoint needs. It knows requests, responses and sockets, nothing about
// the OpenAI API or models (server.cpp routes and answers).
//
// Limits enforced here, before any application code sees a request:
//  - request line + headers: at most `max_header_bytes` (431), the URI at most `max_uri_bytes` (414),
//    answered in the API's JSON shape; past kHardHeaderFactor times that the library itself refuses
//    them (its own 431/414 page), as it does a malformed chunked encoding (400);
//  - body: `max_body_bytes` for every transfer encoding (a Content-Length above it gets a 413 before
//    the body is read; a chunked body that grows past it is dropped as it arrives and gets a 413 once
//    complete, or is cut off 8 MiB later), and at most `max_inflight_body_bytes` buffered over all
//    connections at once (503);
//  - connections: above `max_connections` a new connection gets an immediate 503 and is closed;
//    `max_connections` + kOverflowConnections is the hard limit, beyond which the library refuses;
//    optionally at most `max_connections_per_ip` from one client address;
//  - idle time: a connection that sends nothing for `idle_timeout_s` (partial headers, an idle
//    keep-alive, a stalled body) is closed;
//  - the listen backlog is `listen_backlog`, so a burst of connects queues in the kernel.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct MHD_Daemon;
struct MHD_Connection;

namespace ferrum::server {

struct HttpLimits {
  size_t max_body_bytes = 8 << 20;
  size_t max_inflight_body_bytes = 256u << 20;
  size_t max_header_bytes = 32 << 10;
  size_t max_uri_bytes = 8 << 10;
  int max_connections = 512;
  int max_connections_per_ip = 0;  // 0: no per-address limit; beyond it the library closes new connections
  int idle_timeout_s = 15;
  int listen_backlog = 1024;
};

struct HttpRequest {
  std::string method, path, version;
  std::vector<std::pair<std::string, std::string>> headers;  // as received
  std::string body;
  // Case-insensitive header lookup ("" when absent).
  std::string header(std::string_view name) const;
};

// A body produced piece by piece (server-sent events). `next` appends the bytes that are ready to
// `out`, waiting briefly (about 100 ms) when none are; it returns false once `out` holds the last
// bytes. `closed(completed)` runs exactly once: completed=false when the client went away first.
// `keepalive` (e.g. an SSE comment) is sent whenever nothing was sent for half the idle timeout,
// so a stream with nothing to say yet (a request queued behind others) is not closed as idle.
struct HttpStream {
  std::function<bool(std::string& out)> next;
  std::function<void(bool completed)> closed;
  std::string keepalive;
};

// What the application adds to a request's log line once the answer is complete (-1: unknown).
struct HttpLogFields {
  int prompt_tokens = -1, completion_tokens = -1, cached_tokens = -1;
  double first_token_ms = -1;  // from the request's start (its submission to the engine)
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  HttpStream stream;   // set `stream.next` for a chunked, streamed body
  bool abort = false;  // close the connection without an answer (the client is gone)
  std::function<void(HttpLogFields&)> log;  // fills the log line's fields when the answer is done
};

// One finished request as the log sees it. status 499: the client went away before the answer
// was complete (nginx's code for it).
struct HttpLogEntry {
  std::chrono::system_clock::time_point arrived;
  std::string client, method, path;
  int status = 0;
  double total_ms = 0;
  HttpLogFields fields;
};
using HttpLog = std::function<void(const HttpLogEntry&)>;

// Lets a long-running handler notice that its client disconnected.
class ClientProbe {
 public:
  explicit ClientProbe(int fd) : fd_(fd) {}
  bool gone() const;

 private:
  int fd_;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&, const ClientProbe&)>;
// Runs on the headers alone, before the body is read: return true (and fill the response) to
// answer at once, e.g. 401 for a missing key, without accepting the body.
using HttpGate = std::function<bool(const HttpRequest&, HttpResponse&)>;
// The body of an error answer the transport gives itself (limits, an escaped exception).
using HttpErrorBody = std::function<std::string(int status, const std::string& message)>;

class HttpServer {
 public:
  static constexpr int kOverflowConnections = 64;
  static constexpr size_t kHardHeaderFactor = 4;  // the library's per-connection memory: 4x the header limit

  HttpServer(HttpLimits limits, HttpGate gate, HttpHandler handler, HttpErrorBody error_body);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Called once per request when its answer is done (before start(); none by default).
  void set_log(HttpLog log) { log_ = std::move(log); }
  // Binds host:port (port 0: any free port) and starts serving on the library's threads.
  // Returns the port. Throws ferrum::Error when the address cannot be bound.
  int start(const std::string& host, int port);
  // Stops accepting, waits for the open connections to finish, closes the socket.
  void stop();
  bool running() const { return daemon_ != nullptr; }
  int connections() const { return connections_.load(); }
  const HttpLimits& limits() const { return limits_; }

 private:
  friend struct HttpGlue;  // the library's callbacks (http_server.cpp)

  HttpLimits limits_;
  HttpGate gate_;
  HttpHandler handler_;
  HttpErrorBody error_body_;
  HttpLog log_;
  MHD_Daemon* daemon_ = nullptr;
  int listen_fd_ = -1;
  std::atomic<int> connections_{0};
  std::atomic<size_t> inflight_body_{0};
};

// Status line text for the codes the server uses.
const char* http_reason(int status);

}  // namespace ferrum::server
