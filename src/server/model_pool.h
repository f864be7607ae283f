// The models a server answers with, loaded on demand and unloaded when idle (Ollama's way; the
// router mode of llama-server). A request's "model" picks one (by id, alias or one of its LoRA
// adapters); acquire() loads it on first use, concurrent first requests waiting for that one load,
// and hands out a lease that keeps it loaded. When its last lease goes, the model stays for its
// keep-alive (the latest request's `keep_alive`, or the server's default; 0 unloads at once, a
// negative one keeps it) and is then unloaded by a background thread. At most `max_loaded` models
// and `memory_bytes` of weights and KV caches are kept: loading another unloads the least recently
// used idle ones first. The command line's model is pinned: always loaded, never unloaded.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/models_dir.h"
#include "server/served_model.h"

namespace ferrum::server {

using KeepAlive = std::chrono::milliseconds;  // negative: forever
inline constexpr KeepAlive kKeepForever{-1};

// Ollama's `keep_alive`: a number of seconds or a duration string ("10m", "1h30m", "45s", "500ms",
// "-1"); a negative value keeps the model loaded. Throws ApiError 400 naming `keep_alive`.
KeepAlive parse_keep_alive(const nlohmann::json& v);

enum class ModelState { Unloaded, Loading, Loaded, Failed };
const char* model_state_name(ModelState s);

// One model as GET /v1/models and /api/ps report it.
struct ModelStatus {
  std::string id, path;
  std::vector<std::string> aliases;
  ModelState state = ModelState::Unloaded;
  bool pinned = false;
  int in_use = 0;       // requests holding it now
  uint64_t bytes = 0;   // in memory when loaded, else the size on disk
  int64_t context = 0;  // tokens per sequence (when loaded)
  std::optional<std::chrono::system_clock::time_point> expires;  // when an idle loaded one unloads
  std::string error;                                             // why the last load failed
  std::shared_ptr<ServedModel> model;                            // when loaded (not a lease: do not keep it)
};

class ModelPool {
 public:
  using Loader = std::function<std::shared_ptr<ServedModel>(const ModelSource&)>;
  struct Limits {
    int max_loaded = 4;         // models loaded at once, pinned ones included (0: no limit)
    uint64_t memory_bytes = 0;  // weights + KV caches of the loaded models (0: no limit)
    KeepAlive keep_alive = std::chrono::minutes(5);  // default idle time before unloading
  };

  ModelPool(Loader loader, Limits limits);
  ~ModelPool();
  ModelPool(const ModelPool&) = delete;
  ModelPool& operator=(const ModelPool&) = delete;

  // The command line's model: always loaded; the default when a request names none.
  void add_pinned(std::shared_ptr<ServedModel> m);
  // A model loaded on first use. Throws ferrum::Error for an id or alias already taken.
  void add(ModelSource src);

  // The model `name` names, loaded if it is not ("": the default model: the pinned one, or the only
  // one). The returned pointer is a lease. keep_alive: this request's (nullopt: the default).
  // Throws ApiError: 400 without a name when several models are served, 404 for an unknown name,
  // 503 when every loaded model is in use and no room is left, 500 naming the file and reason when
  // loading fails.
  std::shared_ptr<ServedModel> acquire(const std::string& name, std::optional<KeepAlive> keep_alive = {});
  // Unloads `name` now, or when its requests end (returns false then). Throws ApiError 404 for an
  // unknown name, 400 for the pinned model.
  bool unload(const std::string& name);
  // The default model's id ("" when requests must name one).
  std::string default_id() const;
  std::vector<ModelStatus> list() const;  // pinned first, then by id
  int loaded_count() const;

 private:
  struct Entry;
  struct State;
  Entry* find(const std::string& name);  // id or alias (mu_ held)
  std::shared_ptr<ServedModel> lease(Entry& e);
  void make_room(const Entry& e, std::vector<std::shared_ptr<ServedModel>>& evicted);
  void released(Entry& e);
  void reap();

  Loader loader_;
  Limits limits_;
  std::shared_ptr<State> state_;  // shared with the leases, which may outlive a lookup
  std::thread reaper_;
};

}  // namespace ferrum::server
