#include "server/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <memory>

#include "core/fail.h"

namespace ferrum::server {

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0) return v;
  return {};
}

bool ClientProbe::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;  // orderly shutdown by the peer
  }
  return false;
}

const char* http_reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "";
  }
}

namespace {

int client_fd(MHD_Connection* c) {
  const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  return ci ? ci->connect_fd : -1;
}

void log_nothing(void*, const char*, va_list) {}

// How much of a body past the limits is read and dropped before the connection is cut instead of
// answered.
constexpr size_t kDropBytes = 8u << 20;

std::string client_address(MHD_Connection* c) {
  const MHD_ConnectionInfo* ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!ci || !ci->client_addr) return "-";
  char host[NI_MAXHOST];
  const sockaddr* sa = ci->client_addr;
  const socklen_t len = sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (getnameinfo(sa, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "-";
  return host;
}

// A streamed body as the library pulls it: the producer's bytes are handed out as asked.
struct StreamCtx {
  HttpStream stream;
  ClientProbe probe;
  std::chrono::milliseconds keepalive_every;
  std::string pending;
  size_t off = 0;
  bool done = false;
  std::chrono::steady_clock::time_point last_sent = std::chrono::steady_clock::now();
};

ssize_t read_stream(void* cls, uint64_t, char* buf, size_t max) {
  auto& s = *static_cast<StreamCtx*>(cls);
  while (s.off == s.pending.size()) {
    if (s.done) return MHD_CONTENT_READER_END_OF_STREAM;
    s.pending.clear();
    s.off = 0;
    try {
      s.done = !s.stream.next(s.pending);
    } catch (...) {
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    if (s.pending.empty() && !s.done) {
      if (s.probe.gone()) return MHD_CONTENT_READER_END_WITH_ERROR;
      if (!s.stream.keepalive.empty() && std::chrono::steady_clock::now() - s.last_sent >= s.keepalive_every)
        s.pending = s.stream.keepalive;
    }
  }
  s.last_sent = std::chrono::steady_clock::now();
  const size_t n = std::min(max, s.pending.size() - s.off);
  std::memcpy(buf, s.pending.data() + s.off, n);
  s.off += n;
  return static_cast<ssize_t>(n);
}

void free_stream(void* cls) {
  std::unique_ptr<StreamCtx> s(static_cast<StreamCtx*>(cls));
  if (s->stream.closed) s->stream.closed(s->done && s->off == s->pending.size());
}

}  // namespace

// Per-request state, kept by the library between calls of the access handler.
struct HttpGlue {
  struct Call {
    HttpRequest req;
    size_t counted = 0;      // body bytes counted in HttpServer::inflight_body_
    size_t query_bytes = 0;  // the URI's query arguments (the library hands the path alone)
    // For the request log:
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    std::chrono::system_clock::time_point arrived = std::chrono::system_clock::now();
    int status = 499;  // until an answer is queued
    // A body past the limits: the rest is read and dropped, then refused (the library cannot
    // answer while a body is arriving). refuse_status 0: none.
    int refuse_status = 0;
    std::string refuse_message;
    size_t dropped = 0;
    std::function<void(HttpLogFields&)> log;
  };

  static MHD_Result on_request(void* cls, MHD_Connection* c, const char* url, const char* method,
                               const char* version, const char* upload, size_t* upload_size, void** con_cls) {
    auto& srv = *static_cast<HttpServer*>(cls);
    auto* call = static_cast<Call*>(*con_cls);
    if (!call) {
      call = new Call;
      *con_cls = call;
      call->req.method = method ? method : "";
      call->req.path = url ? url : "";
      call->req.version = version ? version : "";
      MHD_get_connection_values(
          c, MHD_HEADER_KIND,
          [](void* r, MHD_ValueKind, const char* k, const char* v) {
            static_cast<HttpRequest*>(r)->headers.emplace_back(k ? k : "", v ? v : "");
            return MHD_YES;
          },
          &call->req);
      MHD_get_connection_values(
          c, MHD_GET_ARGUMENT_KIND,
          [](void* n, MHD_ValueKind, const char* k, const char* v) {
            *static_cast<size_t*>(n) += (k ? std::strlen(k) : 0) + (v ? std::strlen(v) : 0) + 2;
            return MHD_YES;
          },
          &call->query_bytes);
      HttpResponse res;
      if (early_answer(srv, *call, res)) return queue(srv, c, res, *call);
      return MHD_YES;  // the body (if any) follows
    }
    if (*upload_size > 0) {
      const size_t n = *upload_size;
      *upload_size = 0;
      // A chunked body (no Content-Length) growing past the limits is dropped as it arrives and
      // answered (413 or 503) once complete; one that goes on past kDropBytes more is cut off.
      if (call->refuse_status) {
        call->dropped += n;
        return call->dropped > kDropBytes ? MHD_NO : MHD_YES;
      }
      if (call->req.body.size() + n > srv.limits_.max_body_bytes) {
        refuse(srv, *call, n, 413,
               "request body too large (limit " + std::to_string(srv.limits_.max_body_bytes) + " bytes)");
        return MHD_YES;
      }
      if (call->req.body.size() + n > call->counted) {
        const size_t extra = call->req.body.size() + n - call->counted;
        if (srv.inflight_body_.fetch_add(extra) + extra > srv.limits_.max_inflight_body_bytes) {
          srv.inflight_body_.fetch_sub(extra);
          refuse(srv, *call, n, 503, "too many request bodies in flight; retry later");
          return MHD_YES;
        }
        call->counted += extra;
      }
      call->req.body.append(upload, n);
      return MHD_YES;
    }
    HttpResponse res;
    if (call->refuse_status) {
      res.status = call->refuse_status;
      res.body = srv.error_body_(res.status, call->refuse_message);
      res.headers.emplace_back("Connection", "close");
      return queue(srv, c, res, *call);
    }
    try {
      srv.handler_(call->req, res, ClientProbe(client_fd(c)));
    } catch (...) {
      res = HttpResponse{};
      res.status = 500;
      res.body = srv.error_body_(500, "internal error");
    }
    release_body(srv, *call);
    call->log = std::move(res.log);
    if (res.abort) return MHD_NO;
    return queue(srv, c, res, *call);
  }

  static void refuse(HttpServer& srv, Call& call, size_t n, int status, std::string msg) {
    call.dropped = call.req.body.size() + n;
    release_body(srv, call);
    call.refuse_status = status;
    call.refuse_message = std::move(msg);
  }

  // Answers decided on the headers alone: too many connections, a body above the limit, the gate.
  static bool early_answer(HttpServer& srv, Call& call, HttpResponse& res) {
    auto reject = [&](int status, const std::string& msg) {
      res.status = status;
      res.body = srv.error_body_(status, msg);
      res.headers.emplace_back("Connection", "close");
      return true;
    };
    if (srv.connections_.load() > srv.limits_.max_connections)
      return reject(503, "too many connections; retry later");
    if (call.req.path.size() + call.query_bytes > srv.limits_.max_uri_bytes)
      return reject(414,
                    "request URI too long (limit " + std::to_string(srv.limits_.max_uri_bytes) + " bytes)");
    size_t header_bytes = call.req.method.size() + call.req.path.size() + call.query_bytes + 4;
    for (const auto& [k, v] : call.req.headers) header_bytes += k.size() + v.size() + 4;
    if (header_bytes > srv.limits_.max_header_bytes)
      return reject(431, "request headers too large (limit " + std::to_string(srv.limits_.max_header_bytes) +
                             " bytes)");
    const std::string cl = call.req.header("Content-Length");
    if (!cl.empty()) {
      char* end = nullptr;
      errno = 0;
      const unsigned long long n = std::strtoull(cl.c_str(), &end, 10);
      if (errno != 0 || *end != '\0' || n > srv.limits_.max_body_bytes)
        return reject(
            413, "request body too large (limit " + std::to_string(srv.limits_.max_body_bytes) + " bytes)");
      if (srv.inflight_body_.fetch_add(n) + n > srv.limits_.max_inflight_body_bytes) {
        srv.inflight_body_.fetch_sub(n);
        return reject(503, "too many request bodies in flight; retry later");
      }
      call.counted = n;
    }
    return srv.gate_ && srv.gate_(call.req, res);
  }

  static void release_body(HttpServer& srv, Call& call) {
    srv.inflight_body_.fetch_sub(call.counted);
    call.counted = 0;
    std::string().swap(call.req.body);
  }

  static MHD_Result queue(const HttpServer& srv, MHD_Connection* c, HttpResponse& res, Call& call) {
    MHD_Response* r = nullptr;
    if (res.stream.next) {
      const auto every = std::chrono::milliseconds(static_cast<int64_t>(srv.limits_.idle_timeout_s) * 500);
      auto* ctx =
          new StreamCtx{std::move(res.stream),           ClientProbe(client_fd(c)), every, {}, 0, false,
                        std::chrono::steady_clock::now()};
      r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 << 10, &read_stream, ctx, &free_stream);
      if (!r) free_stream(ctx);
    } else {
      r = MHD_create_response_from_buffer(res.body.size(), res.body.data(), MHD_RESPMEM_MUST_COPY);
    }
    if (!r) return MHD_NO;
    if (!res.content_type.empty()) MHD_add_response_header(r, "Content-Type", res.content_type.c_str());
    for (const auto& [k, v] : res.headers) MHD_add_response_header(r, k.c_str(), v.c_str());
    const MHD_Result ok = MHD_queue_response(c, static_cast<unsigned>(res.status), r);
    MHD_destroy_response(r);
    if (ok == MHD_YES) call.status = res.status;
    return ok;
  }

  static void on_completed(void* cls, MHD_Connection* c, void** con_cls, MHD_RequestTerminationCode code) {
    auto* call = static_cast<Call*>(*con_cls);
    if (!call) return;
    auto& srv = *static_cast<HttpServer*>(cls);
    release_body(srv, *call);
    if (srv.log_) {
      HttpLogEntry e;
      e.arrived = call->arrived;
      e.client = client_address(c);
      e.method = call->req.method;
      e.path = call->req.path;
      e.status = code == MHD_REQUEST_TERMINATED_COMPLETED_OK ? call->status : 499;
      e.total_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - call->start).count();
      if (call->log) call->log(e.fields);
      try {
        srv.log_(e);
      } catch (...) {  // a log that cannot be written does not take the server down
      }
    }
    delete call;
    *con_cls = nullptr;
  }

  static void on_connection(void* cls, MHD_Connection*, void**, MHD_ConnectionNotificationCode toe) {
    auto& srv = *static_cast<HttpServer*>(cls);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED)
      ++srv.connections_;
    else
      --srv.connections_;
  }
};

HttpServer::HttpServer(HttpLimits limits, HttpGate gate, HttpHandler handler, HttpErrorBody error_body)
    : limits_(limits),
      gate_(std::move(gate)),
      handler_(std::move(handler)),
      error_body_(std::move(error_body)) {
  if (limits_.max_connections < 1) fail("max_connections must be >= 1 (got {})", limits_.max_connections);
  if (limits_.idle_timeout_s < 1) fail("the idle timeout must be >= 1 s (got {})", limits_.idle_timeout_s);
  if (limits_.max_connections_per_ip < 0)
    fail("max_connections_per_ip must be >= 0 (got {})", limits_.max_connections_per_ip);
  if (limits_.listen_backlog < 1) fail("the listen backlog must be >= 1 (got {})", limits_.listen_backlog);
}

HttpServer::~HttpServer() {
  stop();
}

int HttpServer::start(const std::string& host, int port) {
  if (daemon_) fail("the HTTP server is already running");
  if (port < 0 || port > 65535) fail("port must be between 0 and 65535 (got {})", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* ai = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &ai);
      rc != 0)
    fail("cannot resolve the listen address '{}': {}", host, gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(ai, &freeaddrinfo);
  const int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("cannot create a socket: {}", std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, limits_.listen_backlog) != 0) {
    const int err = errno;
    ::close(fd);
    fail("cannot listen on {}:{}: {}", host, port, std::strerror(err));
  }
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  const int bound = ntohs(sa.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port
                                                   : reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
  unsigned flags =
      MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC;
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  daemon_ = MHD_start_daemon(
      flags, 0, nullptr, nullptr, reinterpret_cast<MHD_AccessHandlerCallback>(&HttpGlue::on_request), this,
      MHD_OPTION_EXTERNAL_LOGGER, &log_nothing, nullptr, MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(limits_.max_connections + kOverflowConnections),
      MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned>(limits_.idle_timeout_s),
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<unsigned>(limits_.max_connections_per_ip),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits_.max_header_bytes * kHardHeaderFactor,
      MHD_OPTION_NOTIFY_COMPLETED, &HttpGlue::on_completed, this, MHD_OPTION_NOTIFY_CONNECTION,
      &HttpGlue::on_connection, this, MHD_OPTION_END);
  if (!daemon_) {
    ::close(fd);
    fail("cannot start the HTTP server on {}:{}", host, bound);
  }
  listen_fd_ = fd;
  return bound;
}

void HttpServer::stop() {
  if (!daemon_) return;
  const MHD_socket fd = MHD_quiesce_daemon(daemon_);  // stop accepting; open connections finish
  MHD_stop_daemon(daemon_);
  daemon_ = nullptr;
  if (fd != MHD_INVALID_SOCKET) ::close(fd);
  listen_fd_ = -1;
}

}  // namespace ferrum::server
