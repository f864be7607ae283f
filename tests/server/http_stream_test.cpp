// The transport alone (no model): a streamed answer that has nothing to send for longer than the
// idle timeout (a request queued behind others, or preempted) must still reach its client.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "raw_http.h"
#include "server/http_server.h"

namespace ferrum::server {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(HttpStream, AQuietStreamOutlivesTheIdleTimeout) {
  HttpLimits lim;
  lim.idle_timeout_s = 1;
  HttpServer http(
      lim, nullptr,
      [](const HttpRequest&, HttpResponse& res, const ClientProbe&) {
        res.content_type = "text/event-stream";
        res.stream.keepalive = ": keep-alive\n\n";
        const auto ready = std::make_shared<Clock::time_point>(Clock::now() + 2500ms);
        res.stream.next = [ready](std::string& out) {
          if (Clock::now() < *ready) {  // nothing yet, as SseAnswer::next while queued
            std::this_thread::sleep_for(50ms);
            return true;
          }
          out += "data: done\n\n";
          return false;
        };
      },
      [](int, const std::string& m) { return m; });
  const int port = http.start("127.0.0.1", 0);
  test::RawConn c(port);
  ASSERT_TRUE(c.send("GET /s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string resp = c.recv_all(6s);
  EXPECT_EQ(test::status_of(resp), 200) << resp;
  EXPECT_NE(resp.find("data: done"), std::string::npos) << resp;
  EXPECT_NE(resp.find(": keep-alive"), std::string::npos) << resp;
}

}  // namespace
}  // namespace ferrum::server
