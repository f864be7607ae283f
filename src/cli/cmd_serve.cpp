// `ferrum serve`: load a model and serve the OpenAI API until SIGINT/SIGTERM, then drain.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/spec_flags.h"
#include "core/fail.h"
#include "core/profile.h"
#include "engine/engine.h"
#include "ferrum/embeddings.h"
#include "loading/fingerprint.h"
#include "loading/loader.h"
#include "models/registry.h"
#include "server/embeddings.h"
#include "server/server.h"

namespace ferrum::cli {
namespace {

struct ServeFlags {
  ModelFlags model;
  SpecFlags spec;
  server::ServerOptions http;
  EngineOptions engine;
  size_t max_body_mb = 8;
  bool layout_given = false;
  std::string pooling;             // /v1/embeddings; empty: the encoder's own setting, last for a decoder
  std::string chat_template_file;  // in place of the model's chat template
  std::string reasoning_format = "auto";
  std::string log_format = "text";
  bool no_webui = false;
  std::string models_dir, models_preset;  // models loaded on demand
  int max_loaded_models = 4;
  double models_memory_gb = 0;
  std::string keep_alive = "5m";
  std::string prefix_cache_dir;  // the prompt cache kept on disk across restarts
  double prefix_cache_disk_gb = 8;
};

std::string read_template(const std::string& path) {
  std::string text = read_flag_file(path, "--chat-template-file");
  if (text.empty()) fail("--chat-template-file: '{}' is empty", path);
  return text;
}

// Set by the handler, which may run on any thread (an HTTP thread too): a lock-free atomic is
// both async-signal-safe and race-free.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);
extern "C" void on_signal(int sig) {
  g_signal.store(sig);
}

// Prints speculative decoding's acceptance every 30 s while it changes.
class SpecLog {
 public:
  void maybe_print(const EngineStats& st) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::seconds(30) || st.spec_proposed == proposed_) return;
    const double proposed = double(st.spec_proposed - proposed_),
                 accepted = double(st.spec_accepted - accepted_);
    const double steps = double(st.spec_verify_steps - steps_);
    std::fprintf(
        stderr,
        "ferrum serve: speculative decoding: %.1f%% of %.0f proposed tokens accepted, %.2f tokens per verify "
        "step (last %.0f s)\n",
        100.0 * accepted / proposed, proposed, steps > 0 ? 1.0 + accepted / steps : 0.0,
        std::chrono::duration<double>(now - last_).count());
    last_ = now;
    proposed_ = st.spec_proposed;
    accepted_ = st.spec_accepted;
    steps_ = st.spec_verify_steps;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  uint64_t proposed_ = 0, accepted_ = 0, steps_ = 0;
};

// Runs until SIGINT/SIGTERM; then drains every loaded engine and stops the listener.
int serve_until_signal(server::Server& srv, const std::string& banner) {
  std::signal(SIGPIPE, SIG_IGN);
  const int port = srv.start();
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::fprintf(stderr, "ferrum serve: %s:%d\n", banner.c_str(), port);
  SpecLog spec_log;
  while (g_signal.load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto all = srv.models().list();
    if (!all.empty() && all[0].pinned && all[0].model && all[0].model->engine &&
        all[0].model->engine->options().spec.proposer)
      spec_log.maybe_print(all[0].model->engine->stats());
  }
  std::fprintf(stderr, "ferrum serve: signal %d, draining in-flight requests\n", g_signal.load());
  for (const auto& m : srv.models().list())  // new requests get 503 while the running ones finish
    if (m.model && m.model->engine) m.model->engine->shutdown(/*drain=*/true);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let handlers send their last bytes
  srv.stop();
  std::fprintf(stderr, "ferrum serve: stopped\n");
  if (profile::enabled()) std::fprintf(stderr, "%s", profile::format(profile::take(), "serve").c_str());
  return 0;
}

// What a served model's engine and embedder live in; released embedder first, weights last.
struct ModelHolder {
  LoadedModel lm;
  SpecSetup spec;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<server::Embedder> embedder;
};

// Loads one model for the server: an encoder for /v1/embeddings, or a decoder behind an engine of
// its own (with /v1/embeddings too). The command line's model (main) takes the speculative
// decoding flags and --chat-template-file; a preset's own settings apply to a folder's models.
std::shared_ptr<server::ServedModel> load_served(const server::ModelSource& src, const ServeFlags& f,
                                                 bool main) {
  ModelOptions mo = f.model.options();
  EmbedOptions eo;
  if (!f.pooling.empty()) eo.pooling = parse_pooling(f.pooling);
  auto h = std::make_shared<ModelHolder>();
  const bool encoder = open_model_files(src.path, main ? f.model.tokenizer : "").config.is_encoder();
  std::string id = main ? f.http.model_name : src.id;
  if (encoder) {
    h->lm = load_model(src.path, mo);
    if (id.empty()) id = std::filesystem::path(h->lm.path).stem().string();
    h->embedder = std::make_unique<server::Embedder>(*h->lm.model, *h->lm.tokenizer, eo);
  } else {
    if (eo.pooling == Pooling::Cls) fail("--pooling cls: a decoder has no CLS token (use last or mean)");
    EngineOptions e = f.engine;
    // Serving many sequences wants the paged pool unless the user chose otherwise.
    e.kv = f.model.kv_options();
    if (!f.layout_given && std::getenv("FERRUM_KV_LAYOUT") == nullptr) e.kv.layout = KvLayout::Paged;
    if (src.preset.ctx_size) e.kv.capacity = src.preset.ctx_size;
    if (!f.prefix_cache_dir.empty()) {  // cached prompts on disk, apart per model file and numerics
      e.kv.prefix_cache = true;
      e.kv.prefix_cache_dir = f.prefix_cache_dir;
      e.kv.prefix_cache_dir_bytes = static_cast<uint64_t>(f.prefix_cache_disk_gb * double(1ull << 30));
      e.kv.prefix_cache_key = fmt::format("{}|precision {}|kernels {}", model_fingerprint(src.path),
                                          f.model.precision, kernel_tier());
    }
    h->lm = main ? f.model.load(mo) : load_model(src.path, mo);
    if (id.empty()) id = std::filesystem::path(h->lm.path).stem().string();
    if (main) {
      h->spec = make_spec(f.spec, f.model, h->lm);
      e.spec = h->spec.options;
    }
    h->engine = std::make_unique<Engine>(*h->lm.model, *h->lm.tokenizer, e);
    // /v1/embeddings from the same model: its final hidden states pooled and L2-normalized, with a
    // KV cache of its own per request, each forward between two generation steps.
    eo.kv_type = e.kv.type;
    h->embedder = std::make_unique<server::Embedder>(*h->engine, eo);
  }
  std::string tmpl = main ? f.http.chat_template : "";
  if (!src.preset.chat_template_file.empty()) tmpl = read_template(src.preset.chat_template_file);
  auto m = std::make_shared<server::ServedModel>(id, h->engine.get(), h->embedder.get(), tmpl, src.preset);
  m->path = h->lm.path;
  m->owner = std::move(h);
  return m;
}

server::ModelPool::Limits pool_limits(const ServeFlags& f) {
  server::ModelPool::Limits lim;
  lim.max_loaded = f.max_loaded_models;
  lim.memory_bytes = static_cast<uint64_t>(f.models_memory_gb * double(1ull << 30));
  try {
    lim.keep_alive = server::parse_keep_alive(nlohmann::json(f.keep_alive));
  } catch (const Error&) {
    fail("--keep-alive {}: expected a duration such as 5m, 1h, 30s, 0 or -1 (forever)", f.keep_alive);
  }
  return lim;
}

int serve(ServeFlags& f) {
  f.http.max_body_bytes = f.max_body_mb << 20;
  if (!f.chat_template_file.empty()) f.http.chat_template = read_template(f.chat_template_file);
  f.http.reasoning = f.reasoning_format != "none";
  f.http.webui = !f.no_webui;
  f.http.request_log = f.log_format == "json"   ? server::RequestLogFormat::Json
                       : f.log_format == "text" ? server::RequestLogFormat::Text
                                                : server::RequestLogFormat::Off;
  const bool model_given = !f.model.model.empty() || !f.model.model_flag.empty();
  std::vector<server::ModelSource> folder;
  if (!f.models_dir.empty()) {
    if (f.model.pipeline > 1 || f.model.tensor_parallel > 1)
      fail("--models-dir: a models folder is not served over MPI ranks (--pipeline, --tp)");
    folder = server::scan_models_dir(f.models_dir, f.models_preset);
    if (folder.empty() && !model_given)
      fail("--models-dir {}: no GGUF file or Hugging Face directory found", f.models_dir);
  } else if (!f.models_preset.empty()) {
    fail("--models-preset needs --models-dir");
  }
  auto pool = std::make_shared<server::ModelPool>(
      [&f](const server::ModelSource& src) { return load_served(src, f, false); }, pool_limits(f));
  std::string banner;
  if (model_given || f.models_dir.empty()) {
    server::ModelSource src{"", f.model.model_path(), 0, {}};
    src.preset.aliases = f.http.model_aliases;
    src.preset.lora = f.http.lora_modules;
    auto m = load_served(src, f, true);
    f.http.model_name = m->id;
    f.http.model_path = m->path;
    if (const Engine* e = m->engine)
      banner = fmt::format(
          "model '{}' ({} KV, {} tokens per sequence, max {} sequences, {} tokens per step, "
          "embeddings: {} pooling{})",
          m->id, kv_layout_name(e->options().kv.layout), e->kv_capacity(), e->options().max_num_seqs,
          e->options().max_batched_tokens, pooling_name(m->embedder->pooling()),
          e->options().spec.proposer
              ? fmt::format(", speculative: {} up to {} tokens", e->options().spec.proposer->name(),
                            e->options().spec.draft_max)
              : "");
    else
      banner = fmt::format("encoder '{}' (/v1/embeddings, {} dims)", m->id, m->embedder->dim());
    pool->add_pinned(std::move(m));
  }
  for (server::ModelSource& s : folder) {
    if (s.id == f.http.model_name) continue;  // the command line's model is in the folder too
    pool->add(std::move(s));
  }
  if (!folder.empty())
    banner += fmt::format(
        "{}{} models from {} loaded on demand (at most {} at once, idle {} before unloading)",
        banner.empty() ? "" : "; ", folder.size(), f.models_dir, f.max_loaded_models, f.keep_alive);
  server::Server srv(pool, f.http);
  return serve_until_signal(srv, fmt::format("{} at http://{}", banner, f.http.host));
}

}  // namespace

Runner add_serve(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* sub = app.add_subcommand(
      "serve", "serve an OpenAI-compatible HTTP API (chat, completions) with continuous batching");
  f->model.add(sub, true);
  f->model.add_pipeline(sub);
  f->spec.add(sub);
  sub->add_option("--host", f->http.host, "address to listen on")->check(non_empty());
  sub->add_option("--port", f->http.port, "TCP port (0 = any free port)")
      ->capture_default_str()
      ->transform(whole(0, 65535));
  sub->add_option("--api-key", f->http.api_key,
                  "require 'Authorization: Bearer KEY' on every route but /health (also FERRUM_API_KEY)")
      ->envname("FERRUM_API_KEY");
  sub->add_flag("--public-metrics", f->http.public_metrics, "serve /metrics without the API key");
  sub->add_flag(
      "--special-tokens-in-messages", f->http.special_tokens_in_messages,
      "read control-token texts in chat messages as tokens (trusted clients only; default: as text)");
  sub->add_option("--chat-template-file", f->chat_template_file,
                  "Jinja chat template to use instead of the model's (its tool-call style comes with it)");
  sub->add_option(
         "--reasoning-format", f->reasoning_format,
         "auto: a thinking model's reasoning (<think>...</think>) is returned apart, as "
         "reasoning_content; none: left in the content (requests may choose with \"reasoning_format\")")
      ->check(one_of({"auto", "none", "deepseek"}));
  sub->add_flag("--no-webui", f->no_webui, "do not serve the chat page at /");
  sub->add_option("--log-format", f->log_format,
                  "request log on stderr, one line per request (client, route, status, tokens, time to first "
                  "token, total time): text, json or off")
      ->check(one_of({"text", "json", "off"}));
  sub->add_option("--responses-ttl", f->http.responses_ttl_s,
                  "seconds a Responses API answer is kept for previous_response_id and GET /v1/responses/ID "
                  "(0: none kept)")
      ->transform(whole(0, 365 * 24 * 3600));
  sub->add_option("--models-dir", f->models_dir,
                  "also serve every GGUF file and Hugging Face directory under this folder, loaded when a "
                  "request names it (id: the path below the folder, without .gguf)")
      ->check(non_empty());
  sub->add_option("--models-preset", f->models_preset,
                  "models.json of per-model settings (default: DIR/models.json): path, aliases, defaults, "
                  "system, chat_template_file, ctx_size, lora")
      ->check(non_empty());
  sub->add_option("--max-loaded-models", f->max_loaded_models,
                  "models loaded at once; loading another unloads the least recently used idle one (0: no "
                  "limit)")
      ->capture_default_str()
      ->transform(whole(0, 1024));
  sub->add_option("--models-memory", f->models_memory_gb,
                  "GiB the loaded models' weights and KV caches may take; least recently used idle ones "
                  "are unloaded to stay below (0: no limit)")
      ->check(real(0.0, 1e6));
  sub->add_option("--keep-alive", f->keep_alive,
                  "how long an idle model from --models-dir stays loaded (5m, 1h, 30s; 0: unload at once; "
                  "-1: forever); requests may set their own \"keep_alive\"")
      ->capture_default_str()
      ->check(non_empty());
  sub->add_option("--prefix-cache-dir", f->prefix_cache_dir,
                  "keep cached prompt prefixes in this folder too, so they survive a restart (turns on "
                  "--prefix-cache; blocks saved when evicted and at shutdown, read back on a hit)")
      ->check(non_empty());
  sub->add_option("--prefix-cache-disk", f->prefix_cache_disk_gb,
                  "GiB the --prefix-cache-dir folder may hold per model (oldest blocks removed first)")
      ->capture_default_str()
      ->check(real(0.001, 1e6));
  sub->add_option("--model-name", f->http.model_name, "model id reported by /v1/models (default: file name)");
  sub->add_option("--served-model-alias", f->http.model_aliases,
                  "more names requests may give as \"model\", for clients with a fixed model name (one or "
                  "more; /v1/models lists each, answers name the model id)");
  sub->add_option(
      "--lora", f->http.lora_modules,
      "serve a LoRA adapter as model NAME: NAME=PATH[:scale] (PEFT directory or GGUF LoRA; repeatable; "
      "requests pick one with \"model\": \"NAME\")");
  sub->add_flag(
      "--allow-runtime-lora", f->http.allow_runtime_lora,
      "enable POST /v1/load_lora_adapter and /v1/unload_lora_adapter (they read paths on this machine)");
  sub->add_option("--max-num-seqs", f->engine.max_num_seqs, "sequences processed at once")
      ->capture_default_str()
      ->transform(whole(1, 4096));
  sub->add_option("--max-batched-tokens", f->engine.max_batched_tokens,
                  "tokens per scheduler step (decodes + prefill chunks)")
      ->capture_default_str()
      ->transform(whole(1, 1 << 20));
  sub->add_option("--step-overhead-tokens", f->engine.step_overhead_tokens,
                  "a step's fixed cost in tokens' worth of compute: with several prompts pending, steps end "
                  "where the summed time to first token is least (0: every step fills --max-batched-tokens)")
      ->capture_default_str()
      ->transform(whole(0, 1 << 20));
  sub->add_option("--max-waiting", f->engine.max_waiting,
                  "queued requests beyond which new ones get HTTP 503")
      ->capture_default_str()
      ->transform(whole(0, 1 << 20));
  sub->add_option("--pooling", f->pooling,
                  "/v1/embeddings pooling: mean, cls or last (default: an encoder's own setting; last for a "
                  "decoder, which has no cls)")
      ->check(one_of({"mean", "cls", "last"}));
  sub->add_option("--max-body-mb", f->max_body_mb, "request body size limit in MiB")
      ->capture_default_str()
      ->transform(whole(1, 1024));
  sub->add_option("--timeout", f->http.idle_timeout_s,
                  "seconds a connection may stay silent (partial headers, idle keep-alive, stalled body)")
      ->capture_default_str()
      ->transform(whole(1, 3600));
  sub->add_option("--max-connections", f->http.max_connections,
                  "open connections beyond which new ones get an immediate 503 (0: running + waiting + 64)")
      ->capture_default_str()
      ->transform(whole(0, 100000));
  sub->add_option("--max-connections-per-ip", f->http.max_connections_per_ip,
                  "open connections one client address may hold; more are closed at once (0: no limit)")
      ->capture_default_str()
      ->transform(whole(0, 100000));
  sub->add_option("--listen-backlog", f->http.listen_backlog, "connections the kernel queues before accept")
      ->capture_default_str()
      ->transform(whole(1, 65535));
  return [f, sub] {
    f->layout_given = sub->count("--kv-layout") > 0;
    return serve(*f);
  };
}

}  // namespace ferrum::cli
