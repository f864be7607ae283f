// Responses kept for the Responses API's `previous_response_id` and GET /v1/responses/{id}: each
// stored response with the conversation that led to it (as chat messages, the answer included),
// kept for a bounded time (--responses-ttl) and count, least recently stored dropped first.
// `store: false` responses are never put here.
#pragma once

#include <chrono>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>

namespace ferrum::server {

struct StoredResponse {
  nlohmann::json response;      // the response object as answered
  nlohmann::json conversation;  // chat messages: the input (without instructions) and the answer
};

class ResponseStore {
 public:
  ResponseStore(std::chrono::seconds ttl, size_t max_entries) : ttl_(ttl), max_(max_entries) {}
  void put(const std::string& id, StoredResponse r);
  std::optional<StoredResponse> get(const std::string& id);
  bool erase(const std::string& id);
  size_t size();

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    StoredResponse r;
    Clock::time_point expires;
    std::list<std::string>::iterator order;
  };
  void expire(Clock::time_point now);
  std::chrono::seconds ttl_;
  size_t max_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> map_;
  std::list<std::string> order_;  // oldest first
};

}  // namespace ferrum::server
