// cli/tokenize_command.cpp — `headlab tokenize`: a text through a model's byte-level BPE
// tokenizer, showing each token's id, text and byte span (table), just the ids, or JSON.
// "<|endoftext|>" in the text is the special token (--special, the default) or plain text
// (--no-special); the output says which.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/measure_io.h"  // measure_error: exit 2 for what was typed
#include "formats/model_files.h"
#include "tokenizer/bpe_tokenizer.h"
#include "util/file.h"
#include "tokenizer/unicode.h"

namespace headlab::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  std::string format = "table";
  bool lines = false;
  bool special = true;  // "<|endoftext|>" in the text is the special token
};

// A token's text for a terminal: control characters and partial UTF-8 made visible.
std::string visible(const std::string& bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i++) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == ' ') out += "\xc2\xb7";  // a middle dot, so leading spaces show
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  // a token that ends inside a multi-byte character: show the raw bytes instead
  if (model::utf8_find_invalid(out) >= 0) {
    std::string hex;
    for (unsigned char c : bytes) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      hex += buf;
    }
    return hex;
  }
  return out;
}

int run_tokenize(const TokenizeOptions& o) {
  if (!o.text.empty() && !o.file.empty()) return print_error("give --text or --file, not both", 2);
  if (o.lines && o.format != "ids")  // the table and JSON show the newlines as tokens: --lines would change nothing
    return print_error("--lines works with --format ids only (the " + o.format +
                           " shows each newline as a token of its own); add --format ids, or drop --lines", 2);
  const model::EncodeOptions encode_options{.special = o.special};
  auto tok = model::model_tokenizer_load(o.model);
  if (!tok) return print_error(tok.error().message);
  std::string input = o.text;
  if (!o.file.empty()) {
    auto text = file_read(o.file);
    if (!text) return print_error(text.error().message);
    input = std::move(*text);
  } else if (o.text.empty()) {
    input.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }

  if (o.format == "ids") {
    // one output line per input line with --lines (the newline itself is not encoded)
    std::vector<std::string_view> parts;
    if (o.lines) {
      std::string_view rest = input;
      while (!rest.empty()) {
        std::size_t nl = rest.find('\n');
        parts.push_back(rest.substr(0, nl));
        if (nl == std::string_view::npos) break;
        rest.remove_prefix(nl + 1);
      }
    } else {
      parts.push_back(input);
    }
    std::string out;
    for (std::string_view part : parts) {
      auto ids = tok->encode_ids(part, encode_options);
      if (!ids) return o.file.empty() ? measure_error(ids.error()) : print_error(ids.error().message);
      for (std::size_t i = 0; i < ids->size(); i++) out += (i ? " " : "") + std::to_string((*ids)[i]);
      out += '\n';
    }
    std::cout << out;
    return 0;
  }

  auto toks = tok->encode(input, encode_options);
  // what was typed (--text) is a usage error, 2; a file's bytes are the file's, 1 (as scan --text-file)
  if (!toks) return o.file.empty() ? measure_error(toks.error()) : print_error(toks.error().message);
  // how "<|endoftext|>" in the text was read (a vocabulary without it has no special token)
  const bool special = o.special && tok->endoftext_id() >= 0;
  if (o.format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const model::Token& t : *toks)
      arr.push_back({{"id", t.id}, {"text", t.text}, {"begin", t.begin}, {"end", t.end}});
    nlohmann::json out = {{"tokens", arr}, {"count", toks->size()}, {"special", special}};
    // a token inside a multi-byte character is not valid UTF-8 alone: its text gets U+FFFD
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    return 0;
  }
  std::cout << toks->size() << " tokens (\xc2\xb7 marks a space; bytes are the token's span in the input; "
            << (special                      ? "<|endoftext|> is the special token " + std::to_string(tok->endoftext_id())
                : tok->endoftext_id() < 0 ? std::string("this vocabulary has no <|endoftext|>")
                                          : std::string("<|endoftext|> is plain text"))
            << ")\n\n";
  std::printf("%5s  %6s  %-13s  %s\n", "index", "id", "bytes", "text");
  for (std::size_t i = 0; i < toks->size(); i++) {
    const model::Token& t = (*toks)[i];
    std::string span = "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ")";
    std::printf("%5zu  %6d  %-13s  %s\n", i, t.id, span.c_str(), visible(t.text).c_str());
  }
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize",
      "Split a text into a model's tokens and show the work: each token's id, its text and\n"
      "its byte span in the input. The tokenizer is the model's own: GPT-2's vocab.json +\n"
      "merges.txt, or a tokenizer.json (Llama, Qwen, Gemma, ...: its normalizer,\n"
      "pre-tokenizer, BPE and added tokens, exactly as Hugging Face's tokenizers read them).\n"
      "A directory holding only those files is enough.\n"
      "\"<|endoftext|>\" in the text is read as the special token (one id, GPT-2's 50256) by\n"
      "default; --no-special reads it as plain text (\"<|\", \"endoftext\", \"|>\"), as GPT-2's\n"
      "encoder does with allowed_special off.\n\n"
      "Examples:\n"
      "  headlab tokenize --model models/gpt2 --text \"Hello world\"\n"
      "  headlab tokenize --model models/gpt2 --file notes.txt --format ids --lines\n"
      "  echo \"it's 2026\" | headlab tokenize --model models/gpt2 --format json\n"
      "  headlab tokenize --model models/gpt2 --no-special --text \"a<|endoftext|>b\"");
  cmd->add_option("--model", opts->model, "Directory with vocab.json + merges.txt, or tokenizer.json")->required();
  cmd->add_option("--text", opts->text, "The text to tokenize (default: read standard input)");
  cmd->add_option("--file", opts->file, "Read the text from this file");
  cmd->add_option("--format", opts->format, "table, ids (space-separated) or json")
      ->check(CLI::IsMember({"table", "ids", "json"}))
      ->capture_default_str();
  cmd->add_flag("--lines", opts->lines, "With --format ids: one output line per input line");
  cmd->add_flag("--special,!--no-special", opts->special,
                "<|endoftext|> in the text is the special token (--special, the default) or plain text (--no-special)");
  cmd->callback([opts, &exit_code] { exit_code = run_tokenize(*opts); });
}

}  // namespace headlab::cli
