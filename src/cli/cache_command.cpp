// cli/cache_command.cpp — `headlab cache`: TransformerLens's run_with_cache from the terminal.
// The selected hooks of one prompt or a batch go into a safetensors file under TL's names and
// shapes, batch first (research/cache.h); the summary of what was written is printed as a
// table, JSON or CSV:
//   {"file", "model", "bytes", "prompts", "T", "lengths": [..], "tokens": [[ids]],
//    "tensors": [{"name", "shape": [B, ...], "bytes"}]}
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/dtype_option.h"
#include "cli/steer_option.h"
#include "cli/text_or_ids.h"
#include "cli/whole_number.h"
#include "research/cache.h"
#include "research/hook_select.h"

namespace headlab::cli {
namespace cache_cli {

struct CacheOptions {
  std::string model;
  std::string dtype = "auto";
  std::string compute = "f32";
  bool no_cache = false;
  std::string text, ids, prompts;
  std::optional<bool> bos;
  bool truncate = false;
  std::string hooks;
  std::string out;
  std::string format = "table";
  int max_mb = 2048;
  SteerOptions steering;  // --steer, --steer-prompts, --steer-from: every prompt's run steered
};

std::string shape_text(const std::vector<std::int64_t>& shape, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < shape.size(); i++) s += (i ? sep : "") + std::to_string(shape[i]);
  return s;
}

std::string summary(const CacheOptions& o, const std::string& model_name, const research::ActivationCache& cache,
                    std::size_t file_bytes) {
  const int B = static_cast<int>(cache.tokens.size());
  if (o.format == "json") {
    nlohmann::ordered_json j;
    j["file"] = o.out;
    j["model"] = model_name;
    j["bytes"] = file_bytes;
    j["prompts"] = B;
    j["T"] = cache.T;
    nlohmann::json lengths = nlohmann::json::array();
    for (const auto& ids : cache.tokens) lengths.push_back(ids.size());
    j["lengths"] = lengths;
    j["tokens"] = cache.tokens;
    nlohmann::json tensors = nlohmann::json::array();
    for (const research::CachedTensor& t : cache.tensors)
      tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"bytes", t.values.size() * 4}});
    j["tensors"] = tensors;
    return j.dump() + "\n";  // one line, as the API's answers
  }
  std::ostringstream out;
  if (o.format == "csv") {
    out << "name,shape,bytes\n";
    for (const research::CachedTensor& t : cache.tensors)
      out << t.name << "," << shape_text(t.shape, "x") << "," << t.values.size() * 4 << "\n";
    return out.str();
  }
  char line[256];
  std::snprintf(line, sizeof line, "wrote %s: %zu tensors, %.2f MB, %d %s of up to %d tokens\n", o.out.c_str(),
                cache.tensors.size(), double(file_bytes) / 1e6, B, B == 1 ? "prompt" : "prompts", cache.T);
  out << line;
  std::size_t width = 4;
  for (const research::CachedTensor& t : cache.tensors) width = std::max(width, t.name.size());
  std::snprintf(line, sizeof line, "  %-*s  %-18s  %10s\n", int(width), "name", "shape", "MB");
  out << line;
  for (const research::CachedTensor& t : cache.tensors) {
    std::snprintf(line, sizeof line, "  %-*s  %-18s  %10.3f\n", int(width), t.name.c_str(),
                  ("(" + shape_text(t.shape, ", ") + ")").c_str(), double(t.values.size() * 4) / 1e6);
    out << line;
  }
  if (B > 1) out << "Shorter prompts are padded on the right with zeros (attn_scores: -inf); the file's metadata "
                    "\"lengths\" says where each ends.\n";
  return out.str();
}

bool is_usage(const Error& e) { return e.code == ErrorCode::invalid_argument || e.code == ErrorCode::too_long; }

int run_cache(const CacheOptions& o) {
  if (int(!o.text.empty()) + int(!o.ids.empty()) + int(!o.prompts.empty()) != 1)
    return print_error("give exactly one of --text, --ids and --prompts (an empty one counts as none: the input needs a token)", 2);
  auto m = load_model_for_cli(o.model, o.dtype, o.compute, o.no_cache, o.ids.empty());
  if (!m) return print_error(m.error().message);
  const model::ModelConfig& c = m->params.config;
  auto sel = research::hook_select(c, o.hooks);
  if (!sel) return print_error(sel.error().message, 2);
  auto batch = read_inputs(*m, {.text = o.text, .ids = o.ids, .prompts = o.prompts, .bos = o.bos, .truncate = o.truncate});
  if (!batch) return print_error(batch.error().message, is_usage(batch.error()) ? 2 : 1);
  std::vector<std::vector<int>> ids;
  for (const analysis::RunInput& in : *batch) ids.push_back(in.ids());
  research::CacheOptions co;
  co.max_bytes = std::size_t(o.max_mb) << 20;
  co.budget_hint = "raise --max-mb (now " + std::to_string(o.max_mb) + ")";
  model::Workspace ws;
  // ActAdd's texts are tokenised by the prompts' BOS rule (off for --ids unless --prepend-bos on)
  auto steering = steering_from_options(o.steering, m->params, m->tokenizer.get(),
                                        o.ids.empty() ? o.bos : std::optional<bool>(o.bos.value_or(false)), ws);
  if (!steering) return print_error(steering.error().message, is_usage(steering.error()) ? 2 : 1);
  co.steering = std::move(*steering);
  auto cache = research::cache_run(m->params, ids, *sel, co, ws);
  if (!cache) return print_error(cache.error().message, is_usage(cache.error()) ? 2 : 1);
  research::CacheFileInfo info{.model = m->name};
  if (o.ids.empty()) info.prepend_bos = o.bos.value_or(c.default_prepend_bos()) ? "true" : "false";
  else info.prepend_bos = o.bos.value_or(false) ? "true" : "false";
  if (Status s = research::cache_write(o.out, *cache, info); !s) return print_error(s.error().message);
  std::error_code ec;
  const auto file_bytes = std::filesystem::file_size(o.out, ec);
  std::cout << summary(o, m->name, *cache, ec ? cache->bytes() : std::size_t(file_bytes));
  return std::cout.flush() ? 0 : print_error("writing the summary failed");
}

}  // namespace cache_cli

void add_cache_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<cache_cli::CacheOptions>();
  CLI::App* cmd = app.add_subcommand(
      "cache",
      "Save a run's activations into a safetensors file (TransformerLens's run_with_cache).\n"
      "Only the hooks --hooks selects are kept, each under its TL name with TL's shape, batch first.\n\n"
      "--hooks takes names or globs separated by commas, matched as Python's fnmatch matches\n"
      "TL's cache keys: '*' matches any run of characters, dots included, '?' one character.\n"
      "So '*' is every hook, 'blocks.*.attn.hook_pattern' every layer's pattern,\n"
      "'blocks.3.*' all of block 3, '*hook_scale' every norm's scale. A mistyped name is\n"
      "refused with the close ones; a hook the model lacks (hook_resid_mid in GPT-NeoX's\n"
      "parallel blocks, hook_pos_embed with rotary positions) with the reason.\n\n"
      "A batch (--prompts FILE: one prompt a line, or JSON lines whose \"clean\" is read) is\n"
      "padded on the right to the longest prompt: each prompt runs alone, so its positions\n"
      "hold exactly its own run; padded positions hold 0 (attn_scores -inf). The file's\n"
      "metadata holds the model's name, the tokens (ids, one list per prompt), their lengths\n"
      "and the hook names. BOS goes first by the family's rule (TL's default_prepend_bos), never\n"
      "before --ids unless --prepend-bos on. The cache is refused before it runs when it would\n"
      "take more than --max-mb, with its size and how to narrow it. --steer and --steer-prompts\n"
      "steer every prompt's run as in headlab intervene (the kept resid_pre is the steered one).\n\n"
      "Read it in Python:  from safetensors.numpy import load_file; c = load_file('cache.safetensors')\n\n"
      "Examples:\n"
      "  headlab cache --model models/gpt2 --text \"When Mary and John went\" \\\n"
      "      --hooks 'blocks.*.attn.hook_pattern,blocks.3.hook_resid_pre,hook_embed' --out cache.safetensors\n"
      "  headlab cache --model models/headlab-tiny --ids 1911,272,266 --hooks '*' --out all.safetensors --format json\n"
      "  headlab cache --model models/gpt2 --prompts ioi.jsonl --hooks 'blocks.*.hook_resid_pre' --out resid.safetensors");
  cmd->add_option("--model", opts->model,
                  "A Hugging Face folder (GPT-2, GPT-NeoX, Llama, Mistral, Qwen 2/3, Gemma 2/3) or a .gguf file")
      ->required();
  add_dtype_option(cmd, opts->dtype);
  add_compute_option(cmd, opts->compute);
  add_cache_option(cmd, opts->no_cache);
  cmd->add_option("--text", opts->text, "The input text");
  cmd->add_option("--ids", opts->ids, "The input as token ids, separated by commas or spaces (no BOS added)");
  cmd->add_option("--prompts", opts->prompts, "A file of prompts: one a line, or JSON lines with \"clean\"");
  cmd->add_option("--hooks", opts->hooks, "TransformerLens hook names or globs, comma-separated ('*': every hook)")
      ->required();
  cmd->add_option("--out", opts->out, "The safetensors file to write")->required();
  cmd->add_flag("--truncate", opts->truncate, "Keep BOS and the last tokens of a longer input, n_ctx in all");
  cmd->add_option_function<std::string>(
         "--prepend-bos",
         [opts](const std::string& v) { opts->bos = v == "on"; },
         "on or off: put the model's BOS token first; unset: the family's rule for texts, off for --ids")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--max-mb", opts->max_mb, "The most the kept tensors may take, in MiB (float32)")
      ->check(whole_number_from(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--format", opts->format, "The summary printed: table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  add_steer_options(cmd, opts->steering);
  cmd->callback([opts, &exit_code] { exit_code = cache_cli::run_cache(*opts); });
}

}  // namespace headlab::cli
