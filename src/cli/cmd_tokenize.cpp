// `ferrum tokenize`, `ferrum detokenize` and `ferrum template`: the tokenizer and chat template
// of a model, without loading its weights.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "chat/chat_prompt.h"
#include "cli/commands.h"
#include "cli/token_list.h"
#include "core/fail.h"
#include "loading/loader.h"
#include "template/chat_template.h"

namespace ferrum::cli {

Runner add_tokenize(CLI::App& app) {
  struct Flags {
    std::string model, tokenizer, text;
    bool ids_only = false, no_special = false, no_bos = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("tokenize", "print the tokens of a text");
  sub->add_option("model", f->model, "GGUF file, Hugging Face directory, or llama2.c checkpoint")->required();
  sub->add_option("text", f->text, "text to tokenize")->required();
  sub->add_option("--tokenizer", f->tokenizer, "llama2.c tokenizer.bin");
  sub->add_flag("--ids-only", f->ids_only,
                "print only the ids, space separated (the form detokenize and eval --tokens read)");
  sub->add_flag("--no-special", f->no_special, "treat special-token text as plain text");
  sub->add_flag("--no-bos", f->no_bos, "do not add BOS/EOS or [CLS]/[SEP]");
  return [f] {
    auto tok = load_tokenizer(f->model, f->tokenizer);
    const auto ids = tok->encode(f->text, !f->no_bos, !f->no_special);
    if (f->ids_only) {
      std::printf("%s\n", format_token_ids(ids).c_str());
      return 0;
    }
    for (int32_t id : ids) {
      // The piece as JSON string: shows spaces, newlines and partial UTF-8 bytes unambiguously.
      const std::string piece = tok->token_to_piece(id, true);
      std::printf("%6d %s\n", id, nlohmann::json(piece).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    return 0;
  };
}

Runner add_detokenize(CLI::App& app) {
  struct Flags {
    std::string model, tokenizer;
    std::vector<std::string> ids;
    bool skip_special = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("detokenize", "print the text of token ids");
  sub->add_option("model", f->model, "GGUF file, Hugging Face directory, or llama2.c checkpoint")->required();
  sub->add_option("ids", f->ids,
                  "token ids separated by commas and/or spaces, as one argument or several (e.g. 1 403 407)")
      ->required();
  sub->add_option("--tokenizer", f->tokenizer, "llama2.c tokenizer.bin");
  sub->add_flag("--skip-special", f->skip_special, "leave out special tokens");
  return [f] {
    const std::vector<int32_t> ids = parse_token_ids(f->ids, "ids");
    auto tok = load_tokenizer(f->model, f->tokenizer);
    check_token_ids(ids, "ids", tok->n_vocab());
    const std::string text = tok->decode(ids, f->skip_special);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    return 0;
  };
}

Runner add_template(CLI::App& app) {
  struct Flags {
    std::string model, tokenizer, messages, template_file;
    bool add_generation_prompt = false;
    std::string extra;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("template", "render a conversation with the model's chat template");
  sub->add_option("model", f->model, "GGUF file or Hugging Face directory")->required();
  sub->add_option("--messages", f->messages, "JSON file: an array of {role, content} (or {\"messages\": [...], \"tools\": [...]})")
      ->required();
  sub->add_flag("--add-generation-prompt", f->add_generation_prompt, "end with the assistant turn's opening");
  sub->add_option("--template", f->template_file, "use this Jinja file instead of the model's template");
  sub->add_option("--vars", f->extra, "extra template variables as a JSON object, e.g. '{\"enable_thinking\": false}'");
  return [f] {
    auto tok = load_tokenizer(f->model, f->tokenizer);
    std::string source = tok->chat_template();
    std::string name = f->model + ": chat template";
    if (!f->template_file.empty()) {
      std::ifstream in(f->template_file);
      if (!in) fail("{}: cannot open", f->template_file);
      source.assign(std::istreambuf_iterator<char>(in), {});
      name = f->template_file;
    }
    if (source.empty()) {  // what `ferrum serve` and `ferrum run` use for such a model
      const chat::FallbackTemplate fb = chat::fallback_template(*tok);
      source = fb.source;
      name = fb.kind;
      std::fprintf(stderr,
                   "ferrum: note: %s has no chat template; this is the %s fallback that `ferrum serve` uses "
                   "(--template FILE renders another)\n",
                   f->model.c_str(), fb.kind);
    }
    std::ifstream in(f->messages);
    if (!in) fail("{}: cannot open", f->messages);
    nlohmann::ordered_json doc;
    try {
      doc = nlohmann::ordered_json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      fail("{}: invalid JSON: {}", f->messages, e.what());
    }
    ChatTemplateOptions opt;
    opt.add_generation_prompt = f->add_generation_prompt;
    opt.bos_token = tok->bos_text();
    opt.eos_token = tok->eos_text();
    nlohmann::ordered_json messages = doc;
    if (doc.is_object()) {
      messages = doc.value("messages", nlohmann::ordered_json::array());
      if (doc.contains("tools")) opt.tools = doc["tools"];
    }
    if (!messages.is_array()) fail("{}: expected an array of messages", f->messages);
    if (!f->extra.empty()) {
      try {
        opt.extra = nlohmann::ordered_json::parse(f->extra);
      } catch (const nlohmann::json::exception& e) {
        fail("--vars: invalid JSON: {}", e.what());
      }
      if (!opt.extra.is_object()) fail("--vars: expected a JSON object");
    }
    const std::string out = ChatTemplate(source, name).render(messages, opt);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  };
}

}  // namespace ferrum::cli
