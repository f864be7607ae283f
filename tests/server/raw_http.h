// Raw TCP clients for the HTTP hardening tests: partial requests, chunked bodies, hang-ups.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

namespace ferrum::test {

class RawConn {
 public:
  explicit RawConn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawConn() { close(); }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;
  bool ok() const { return fd_ >= 0; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // False when the peer closed or reset the connection.
  bool send(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Everything received until the peer closes, `limit` bytes arrive, or `timeout` passes.
  std::string recv_all(std::chrono::milliseconds timeout, size_t limit = 1 << 20) {
    std::string out;
    const auto end = std::chrono::steady_clock::now() + timeout;
    char buf[4096];
    while (out.size() < limit) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now())
              .count();
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  // Whether the peer closed the connection (seen by recv_all or now).
  bool peer_closed(std::chrono::milliseconds wait) {
    if (!closed_) recv_all(wait);
    return closed_;
  }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

// "HTTP/1.1 413 ..." -> 413; 0 when there is no status line.
inline int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.c_str() + 9);
}

// POST over a raw socket (Connection: close): the answer's JSON body, null when there is none (a
// failure is added). For requests from several threads at once: httplib's client shares regex
// state across threads, which ThreadSanitizer reports inside the uninstrumented library.
inline nlohmann::json post_json_raw(int port, const std::string& path, const std::string& body) {
  RawConn conn(port);
  if (!conn.ok()) return nullptr;
  conn.send("POST " + path +
            " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  const std::string r = conn.recv_all(std::chrono::seconds(300), 16 << 20);
  const size_t head = r.find("\r\n\r\n");
  if (status_of(r) != 200 || head == std::string::npos) {
    ADD_FAILURE() << r.substr(0, 500);
    return nullptr;
  }
  std::string payload = r.substr(head + 4);
  if (r.substr(0, head).find("chunked") != std::string::npos) {  // de-chunk
    std::string plain;
    size_t at = 0;
    while (at < payload.size()) {
      const size_t eol = payload.find("\r\n", at);
      if (eol == std::string::npos) break;
      const size_t n = std::stoul(payload.substr(at, eol - at), nullptr, 16);
      if (n == 0) break;
      plain += payload.substr(eol + 2, n);
      at = eol + 2 + n + 2;
    }
    payload = plain;
  }
  return nlohmann::json::parse(payload, nullptr, false);
}

}  // namespace ferrum::test
