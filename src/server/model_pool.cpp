#include "server/model_pool.h"

#include <algorithm>
#include <cmath>

#include "core/fail.h"
#include "server/api_error.h"

namespace ferrum::server {

using Clock = std::chrono::steady_clock;

struct ModelPool::Entry {
  ModelSource src;
  bool pinned = false;
  ModelState state = ModelState::Unloaded;
  std::shared_ptr<ServedModel> model;  // when loaded
  int in_use = 0;
  KeepAlive keep_alive{0};
  Clock::time_point last_used{};
  std::optional<Clock::time_point> expires;  // idle and loaded: when it unloads
  std::string error;                         // why the last load failed
  uint64_t loads = 0;                        // loads started, so waiters know theirs failed
};

// What leases share with the pool: they may be released after the pool is gone.
struct ModelPool::State {
  std::mutex mu;
  std::condition_variable cv;  // a load ended, a lease was released, or stop
  std::vector<std::unique_ptr<Entry>> entries;
  bool stop = false;

  void release(Entry& e) {
    std::lock_guard lk(mu);
    --e.in_use;
    e.last_used = Clock::now();
    if (e.in_use == 0 && !e.pinned)
      e.expires = e.keep_alive < KeepAlive::zero() ? std::nullopt : std::optional(e.last_used + e.keep_alive);
    cv.notify_all();
  }
};

namespace {

struct LeaseToken {
  std::shared_ptr<ServedModel> model;
  std::shared_ptr<void> state;
  std::function<void()> on_release;
  ~LeaseToken() {
    model.reset();  // the pool's reference keeps it; the model is never destroyed here while loaded
    on_release();
  }
};

std::string gib(uint64_t b) {
  return fmt::format("{:.2f} GiB", double(b) / double(1ull << 30));
}

}  // namespace

KeepAlive parse_keep_alive(const nlohmann::json& v) {
  auto bad = [] {
    throw ApiError(400,
                   "'keep_alive' must be a number of seconds or a duration such as \"5m\", \"1h\", \"30s\" "
                   "(0 unloads the model after the request, a negative value keeps it loaded)",
                   "invalid_request_error", "keep_alive");
  };
  auto of_seconds = [&](double s) {
    if (!std::isfinite(s) || std::fabs(s) > 1e9) bad();
    return s < 0 ? kKeepForever : KeepAlive(static_cast<int64_t>(s * 1000.0));
  };
  if (v.is_number()) return of_seconds(v.get<double>());
  if (!v.is_string()) bad();
  const std::string s = v.get<std::string>();
  if (s.empty()) bad();
  size_t i = 0;
  const bool neg = s[0] == '-';
  if (neg || s[0] == '+') ++i;
  if (i == s.size()) bad();
  double total = 0;  // seconds
  bool any_unit = false;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
    if (j == i) bad();
    const double n = std::strtod(s.substr(i, j - i).c_str(), nullptr);
    size_t k = j;
    while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
    const std::string unit = s.substr(j, k - j);
    if (unit.empty()) {
      if (k != s.size() || any_unit) bad();  // a bare number: seconds
      total += n;
    } else if (unit == "h") {
      total += n * 3600;
    } else if (unit == "m") {
      total += n * 60;
    } else if (unit == "s") {
      total += n;
    } else if (unit == "ms") {
      total += n / 1e3;
    } else if (unit == "us" || unit == "µs") {
      total += n / 1e6;
    } else if (unit == "ns") {
      total += n / 1e9;
    } else {
      bad();
    }
    any_unit = any_unit || !unit.empty();
    i = k;
  }
  return of_seconds(neg ? -total : total);
}

const char* model_state_name(ModelState s) {
  switch (s) {
    case ModelState::Loading:
      return "loading";
    case ModelState::Loaded:
      return "loaded";
    case ModelState::Failed:
      return "failed";
    default:
      return "unloaded";
  }
}

ModelPool::ModelPool(Loader loader, Limits limits)
    : loader_(std::move(loader)), limits_(limits), state_(std::make_shared<State>()) {
  reaper_ = std::thread([this] { reap(); });
}

ModelPool::~ModelPool() {
  {
    std::lock_guard lk(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  reaper_.join();
  std::vector<std::shared_ptr<ServedModel>> models;  // unloaded outside the lock
  std::lock_guard lk(state_->mu);
  for (auto& e : state_->entries) models.push_back(std::move(e->model));
}

void ModelPool::add_pinned(std::shared_ptr<ServedModel> m) {
  ModelSource src{m->id, m->path, m->memory_bytes(), m->preset};
  add(std::move(src));
  std::lock_guard lk(state_->mu);
  Entry& e = *state_->entries.back();
  e.pinned = true;
  e.state = ModelState::Loaded;
  e.model = std::move(m);
  // Pinned first: the default model and the first listed.
  std::rotate(state_->entries.begin(), state_->entries.end() - 1, state_->entries.end());
}

void ModelPool::add(ModelSource src) {
  std::lock_guard lk(state_->mu);
  std::vector<std::string> names = src.preset.aliases;
  names.push_back(src.id);
  for (const std::string& n : names)
    if (find(n)) fail("model '{}' ({}): the name '{}' is already taken", src.id, src.path, n);
  auto e = std::make_unique<Entry>();
  e->src = std::move(src);
  e->keep_alive = limits_.keep_alive;
  state_->entries.push_back(std::move(e));
}

ModelPool::Entry* ModelPool::find(const std::string& name) {
  for (auto& e : state_->entries)
    if (e->src.id == name || std::find(e->src.preset.aliases.begin(), e->src.preset.aliases.end(), name) !=
                                 e->src.preset.aliases.end())
      return e.get();
  return nullptr;
}

std::string ModelPool::default_id() const {
  std::lock_guard lk(state_->mu);
  const auto& es = state_->entries;
  if (!es.empty() && (es.front()->pinned || es.size() == 1)) return es.front()->src.id;
  return "";
}

std::shared_ptr<ServedModel> ModelPool::lease(Entry& e) {
  ++e.in_use;
  e.last_used = Clock::now();
  e.expires.reset();
  auto token = std::make_shared<LeaseToken>();
  token->model = e.model;
  token->on_release = [st = state_, ep = &e] { st->release(*ep); };
  return std::shared_ptr<ServedModel>(token, token->model.get());
}

// Unloads idle models, least recently used first, until `e` fits the limits (mu_ held). Throws
// ApiError 503 when the models in use leave no room.
void ModelPool::make_room(const Entry& e, std::vector<std::shared_ptr<ServedModel>>& evicted) {
  if (limits_.memory_bytes && e.src.disk_bytes > limits_.memory_bytes)
    throw ApiError(507,
                   fmt::format("model '{}' ({}) needs about {}, more than the models' memory budget of {} "
                               "(--models-memory)",
                               e.src.id, e.src.path, gib(e.src.disk_bytes), gib(limits_.memory_bytes)),
                   "server_error", "model", "model_too_large");
  while (true) {
    int count = 0;
    uint64_t bytes = 0;
    Entry* lru = nullptr;
    for (auto& o : state_->entries) {
      if (o->state == ModelState::Loaded) {
        ++count;
        bytes += o->model->memory_bytes();
        if (!o->pinned && o->in_use == 0 && (!lru || o->last_used < lru->last_used)) lru = o.get();
      } else if (o->state == ModelState::Loading) {
        ++count;
        bytes += o->src.disk_bytes;
      }
    }
    const bool over_count = limits_.max_loaded > 0 && count + 1 > limits_.max_loaded;
    const bool over_bytes = limits_.memory_bytes > 0 && bytes + e.src.disk_bytes > limits_.memory_bytes;
    if (!over_count && !over_bytes) return;
    if (!lru)
      throw ApiError(503,
                     over_count
                         ? fmt::format("cannot load model '{}': {} models are loaded and in use "
                                       "(--max-loaded-models {}); retry when one is idle",
                                       e.src.id, count, limits_.max_loaded)
                         : fmt::format("cannot load model '{}': the loaded models in use hold {} of the "
                                       "{} budget (--models-memory); retry when one is idle",
                                       e.src.id, gib(bytes), gib(limits_.memory_bytes)),
                     "server_busy", "model", "models_busy");
    evicted.push_back(std::move(lru->model));
    lru->state = ModelState::Unloaded;
    lru->expires.reset();
  }
}

std::shared_ptr<ServedModel> ModelPool::acquire(const std::string& name,
                                                std::optional<KeepAlive> keep_alive) {
  std::vector<std::shared_ptr<ServedModel>> evicted;  // destroyed after the lock is released
  std::unique_lock lk(state_->mu);
  Entry* e = nullptr;
  if (name.empty() || name == "ferrum") {
    auto& es = state_->entries;
    if (!es.empty() && (es.front()->pinned || es.size() == 1)) e = es.front().get();
    if (!e && !name.empty()) e = find(name);
    if (!e) {
      std::vector<std::string> ids;
      for (auto& o : es) ids.push_back(o->src.id);
      throw ApiError(400,
                     fmt::format("'model' is required: this server serves {} models ({})", ids.size(),
                                 fmt::join(ids, ", ")),
                     "invalid_request_error", "model", "model_required");
    }
  } else if (!(e = find(name))) {
    for (auto& o : state_->entries)  // an adapter of a loaded model
      if (o->state == ModelState::Loaded && o->model->lora && o->model->lora->find(name)) e = o.get();
  }
  if (!e) {
    std::vector<std::string> ids;
    for (auto& o : state_->entries) ids.push_back(o->src.id);
    throw ApiError(
        404, fmt::format("The model '{}' does not exist; this server serves {}", name, fmt::join(ids, ", ")),
        "invalid_request_error", "model", "model_not_found");
  }
  if (keep_alive && !e->pinned) e->keep_alive = *keep_alive;
  while (true) {
    if (e->state == ModelState::Loaded) return lease(*e);
    if (e->state == ModelState::Loading) {
      const uint64_t mine = e->loads;
      state_->cv.wait(lk, [&] { return e->state != ModelState::Loading; });
      if (e->state == ModelState::Failed && e->loads == mine)
        throw ApiError(500,
                       fmt::format("model '{}' ({}) cannot be loaded: {}", e->src.id, e->src.path, e->error),
                       "server_error", "model", "model_load_failed");
      continue;
    }
    make_room(*e, evicted);
    e->state = ModelState::Loading;
    ++e->loads;
    lk.unlock();
    evicted.clear();  // their memory back before this one loads
    std::shared_ptr<ServedModel> m;
    std::string why;
    try {
      m = loader_(e->src);
    } catch (const std::exception& x) {
      why = x.what();
    }
    lk.lock();
    e->state = m ? ModelState::Loaded : ModelState::Failed;
    e->model = std::move(m);
    e->error = why;
    state_->cv.notify_all();
    if (e->state == ModelState::Failed)
      throw ApiError(500, fmt::format("model '{}' ({}) cannot be loaded: {}", e->src.id, e->src.path, why),
                     "server_error", "model", "model_load_failed");
  }
}

bool ModelPool::unload(const std::string& name) {
  std::shared_ptr<ServedModel> gone;  // destroyed after the lock is released
  std::lock_guard lk(state_->mu);
  Entry* e = find(name);
  if (!e)
    throw ApiError(404, fmt::format("The model '{}' does not exist", name), "invalid_request_error", "model",
                   "model_not_found");
  if (e->pinned)
    throw ApiError(400, fmt::format("model '{}' was given on the command line: it stays loaded", name),
                   "invalid_request_error", "model");
  e->keep_alive = KeepAlive::zero();  // a model in use or loading goes when its requests end
  if (e->state != ModelState::Loaded) return e->state != ModelState::Loading;
  if (e->in_use > 0) return false;
  gone = std::move(e->model);
  e->state = ModelState::Unloaded;
  e->expires.reset();
  e->keep_alive = limits_.keep_alive;
  return true;
}

int ModelPool::loaded_count() const {
  std::lock_guard lk(state_->mu);
  return static_cast<int>(std::count_if(state_->entries.begin(), state_->entries.end(),
                                        [](const auto& e) { return e->state == ModelState::Loaded; }));
}

std::vector<ModelStatus> ModelPool::list() const {
  std::lock_guard lk(state_->mu);
  std::vector<ModelStatus> out;
  const auto now = Clock::now();
  const auto sys_now = std::chrono::system_clock::now();
  for (const auto& e : state_->entries) {
    ModelStatus s;
    s.id = e->src.id;
    s.path = e->src.path;
    s.aliases = e->src.preset.aliases;
    s.state = e->state;
    s.pinned = e->pinned;
    s.in_use = e->in_use;
    s.error = e->error;
    s.bytes = e->model ? e->model->memory_bytes() : e->src.disk_bytes;
    s.context = e->model ? e->model->context() : e->src.preset.ctx_size;  // unloaded: the preset's, if any
    if (e->expires)
      s.expires =
          sys_now + std::chrono::duration_cast<std::chrono::system_clock::duration>(*e->expires - now);
    s.model = e->model;
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin() + (out.empty() || !out[0].pinned ? 0 : 1), out.end(),
                   [](const ModelStatus& a, const ModelStatus& b) { return a.id < b.id; });
  return out;
}

// Unloads idle models whose keep-alive ran out, sleeping until the next one does.
void ModelPool::reap() {
  std::unique_lock lk(state_->mu);
  while (!state_->stop) {
    std::vector<std::shared_ptr<ServedModel>> expired;
    std::optional<Clock::time_point> next;
    const auto now = Clock::now();
    for (auto& e : state_->entries) {
      if (e->state != ModelState::Loaded || e->pinned || e->in_use > 0 || !e->expires) continue;
      if (*e->expires <= now) {
        expired.push_back(std::move(e->model));
        e->state = ModelState::Unloaded;
        e->expires.reset();
        e->keep_alive = limits_.keep_alive;
      } else if (!next || *e->expires < *next) {
        next = *e->expires;
      }
    }
    if (!expired.empty()) {
      lk.unlock();
      expired.clear();
      lk.lock();
      continue;
    }
    if (next)
      state_->cv.wait_until(lk, *next);
    else
      state_->cv.wait(lk);
  }
}

}  // namespace ferrum::server
