// cli/info_command.cpp — `headlab info --model DIR`: what the loader makes of a model folder,
// from its config.json and the weight files' headers, or of a GGUF file from its metadata and
// tensor infos (no weight is read): the family, every
// size, the block's positions / norm / MLP / attention, each config key and what it set, each
// tensor and where it went (count, dtype, bytes), and the tokenizer. Text or JSON.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/dtype_option.h"
#include "formats/model_files.h"
#include "model/ops/matmul_quant_q8.h"
#include "tokenizer/bpe_tokenizer.h"
#include "formats/hf/checkpoint.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_tokenizer.h"
#include "util/file.h"
#include "util/json_depth.h"

namespace headlab::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using model::ModelConfig;

struct InfoOptions {
  std::string model;
  std::string dtype = "auto";
  std::string format = "text";
};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string bytes_text(std::uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GB", double(b) / double(1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MB", double(b) / double(1ull << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KB", double(b) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

std::string positions_text(const ModelConfig& c) {
  if (c.positions == ModelConfig::Positions::learned) return "learned (wpe, " + std::to_string(c.n_ctx) + " rows)";
  if (c.positions == ModelConfig::Positions::none) return "none";
  std::string s = std::string("rotary, ") + (c.rotary_interleaved ? "GPT-J pairs" : "NeoX halves") + ", " +
                  std::to_string(c.rotary_size()) + " of " + std::to_string(c.head_size()) + " channels, theta " +
                  num(c.rope_theta);
  if (c.rope_llama3_factor > 0)
    s += ", llama3 scaling (factor " + num(c.rope_llama3_factor) + ", low " + num(c.rope_llama3_low_freq_factor) +
         ", high " + num(c.rope_llama3_high_freq_factor) + ", original context " +
         std::to_string(c.rope_llama3_original_max_positions) + ")";
  if (c.rope_linear_factor != 1.0f)
    s += ", linear scaling / " + num(c.rope_linear_factor) + (c.rope_local_theta > 0 ? " on global layers" : "");
  if (c.rope_local_theta > 0) s += "; local layers theta " + num(c.rope_local_theta) + ", unscaled";
  return s;
}

std::string norm_text(const ModelConfig& c) {
  std::string s = c.norm == ModelConfig::Norm::layernorm ? "LayerNorm" : c.norm_plus_one ? "RMSNorm (1 + w)" : "RMSNorm";
  s += ", eps " + num(c.layer_norm_eps);
  s += c.sandwich_norm ? ", before and after attention and MLP" : ", before attention and MLP (pre-norm)";
  return s;
}

std::string mlp_text(const ModelConfig& c) {
  if (!c.mlp) return "none (attention-only)";
  std::string act = c.mlp_kind == ModelConfig::Mlp::gelu_tanh ? "GELU (tanh)"
                    : c.mlp_kind == ModelConfig::Mlp::gelu_erf ? "GELU (erf)"
                    : c.mlp_kind == ModelConfig::Mlp::swiglu   ? "SwiGLU: down(silu(gate x) * up x)"
                                                               : "GeGLU: down(gelu_tanh(gate x) * up x)";
  return act + ", F " + std::to_string(c.mlp_width()) + (c.mlp_bias ? ", biases" : ", no biases");
}

std::string attention_kind(const ModelConfig& c) {
  if (c.kv_heads() == c.n_head) return "multi-head";
  if (c.kv_heads() == 1) return "multi-query";
  return "grouped-query";
}

std::string attention_text(const ModelConfig& c) {
  std::string s = attention_kind(c) + " (" + std::to_string(c.n_head) + " query heads, " + std::to_string(c.kv_heads()) +
                  " KV heads";
  if (c.kv_heads() != c.n_head) s += ": query head h reads KV head h / " + std::to_string(c.n_head / c.kv_heads());
  s += "), scores * " + num(c.attention_scale(0));
  if (c.scale_attn_by_inverse_layer_idx) s += " / (layer + 1)";
  if (c.qkv_bias) s += ", q/k/v biases";
  if (c.qk_norm) s += ", q/k norm";
  if (c.attn_softcap > 0) s += ", soft-capped at " + num(c.attn_softcap);
  if (c.sliding_window > 0) {
    std::string layers;
    int n = 0;
    for (int l = 0; l < c.n_layer; l++)
      if (c.window_of(l) > 0) layers += (n++ ? "," : "") + std::to_string(l);
    s += ", sliding window " + std::to_string(c.sliding_window) + " keys on " +
         (n == c.n_layer ? std::string("every layer") : n == 0 ? std::string("no layer") : "layers " + layers);
  }
  if (c.parallel_residual) s += ", parallel with the MLP";
  return s;
}

// The tokenizer a GGUF file's metadata holds (tokenizer.ggml.*), as the CLI and the server load it.
ordered_json gguf_tokenizer_info(const std::string& path) {
  ordered_json t;
  t["kind"] = "GGUF metadata (tokenizer.ggml.*)";
  auto file = model::gguf::file_open(path);
  if (file) {
    const auto* m = file->find("tokenizer.ggml.model");
    const auto* pre = file->find("tokenizer.ggml.pre");
    t["model"] = m ? m->text : "none";
    t["pre_tokenizer"] = pre ? pre->text : "none";
  }
  auto tok = model::gguf::tokenizer_load(path);
  if (tok) t["tokens"] = tok->vocab_size();
  else t["error"] = tok.error().message;
  return t;
}

// The tokenizer the folder holds, as the CLI and the server load it.
ordered_json tokenizer_info(const std::string& dir) {
  if (model::gguf::is_gguf_path(dir) && !fs::is_directory(dir)) return gguf_tokenizer_info(dir);
  ordered_json t;
  const bool has_json = fs::exists(fs::path(dir) / "tokenizer.json");
  const bool has_gpt2 = fs::exists(fs::path(dir) / "vocab.json") && fs::exists(fs::path(dir) / "merges.txt");
  if (!has_json && !has_gpt2) {
    t["kind"] = "none";
    t["note"] = "no tokenizer.json and no vocab.json + merges.txt: give token ids";
    return t;
  }
  t["kind"] = has_gpt2 ? "GPT-2 byte-level BPE (vocab.json + merges.txt)" : "tokenizer.json";
  if (has_json) {
    auto text = file_read((fs::path(dir) / "tokenizer.json").string(), model::kMaxTokenizerFileBytes);
    if (text && json_depth_check(*text, "tokenizer.json")) {
      try {
        auto j = nlohmann::json::parse(*text);
        auto type_of = [&](const char* key) -> std::string {
          if (!j.contains(key) || !j[key].is_object() || !j[key].contains("type")) return "none";
          return j[key]["type"].get<std::string>();
        };
        t["model"] = type_of("model");
        t["normalizer"] = type_of("normalizer");
        t["pre_tokenizer"] = type_of("pre_tokenizer");
        t["decoder"] = type_of("decoder");
        t["added_tokens"] = j.contains("added_tokens") && j["added_tokens"].is_array() ? j["added_tokens"].size() : 0;
      } catch (const nlohmann::json::exception&) {
      }
    }
  }
  auto tok = model::model_tokenizer_load(dir);
  if (tok) t["tokens"] = tok->vocab_size();
  else t["error"] = tok.error().message;
  return t;
}

// The types the matrices are kept in ("bf16", "bf16 and f32").
std::string memory_types_text(const model::CheckpointDescription& d) {
  const auto sizes = model::parameters_sizes(d.config);
  std::string kinds;
  for (model::WeightType t : {model::WeightType::bf16, model::WeightType::f16, model::WeightType::f32}) {
    bool used = false;
    for (int i = 0; i < model::kNumParameterTensors; i++)
      used = used || (model::parameters_is_matrix(i) && sizes[std::size_t(i)] > 0 && d.memory_types[std::size_t(i)] == t);
    if (used && !d.quantized) kinds += (kinds.empty() ? "" : " and ") + std::string(model::weight_type_name(t));
  }
  if (d.quantized) {  // each matrix tensor's own type, as the loader keeps it (blocks or float)
    std::set<std::string> types;
    for (const auto& t : d.tensors)
      for (int i = 0; i < model::kNumParameterTensors; i++)
        if (model::parameters_is_matrix(i) && model::parameters_name(i) == t.target) types.insert(t.memory);
    for (const std::string& t : types) kinds += (kinds.empty() ? "" : ", ") + t;
    kinds += ", quantized ones in the file's blocks";
  }
  return kinds;
}

ordered_json info_json(const std::string& dir, const model::CheckpointDescription& d, const std::string& dtype) {
  const ModelConfig& c = d.config;
  ordered_json j;
  j["model"] = dir;
  j["family"] = c.family;
  j["sizes"] = {{"L", c.n_layer},        {"C", c.n_embd},           {"NH", c.n_head},   {"NKV", c.kv_heads()},
                {"HS", c.head_size()},   {"D", c.q_width()},        {"F", c.mlp_width()}, {"V", c.vocab_size},
                {"maxT", c.n_ctx},       {"parameters", model::parameters_count(c)}};
  j["positions"] = positions_text(c);
  j["norm"] = norm_text(c);
  j["mlp"] = mlp_text(c);
  j["attention"] = attention_text(c);
  j["attention_kind"] = attention_kind(c);
  j["embedding"] = c.embed_scale ? "wte[ids] * sqrt(C)" : "wte[ids]";
  j["unembedding"] = std::string(c.tied ? "tied to wte" : "separate") +
                     (c.final_softcap > 0 ? ", logits soft-capped at " + num(c.final_softcap) : "");
  ordered_json window = ordered_json::array();
  for (int l = 0; l < c.n_layer; l++) window.push_back(c.window_of(l));
  j["window"] = window;
  ordered_json keys = ordered_json::array();
  for (const model::ConfigKeyUse& k : d.keys)
    keys.push_back({{"key", k.key}, {"value", k.value}, {"read", k.read}, {"effect", k.effect}});
  j["config_source"] = model::gguf::is_gguf_path(dir) && !fs::is_directory(dir) ? "GGUF metadata" : "config.json";
  j["config_keys"] = keys;
  ordered_json tensors = ordered_json::array();
  std::map<std::string, std::pair<int, std::uint64_t>> by_dtype;
  std::uint64_t total = 0;
  int loaded = 0;
  for (const model::TensorMapping& t : d.tensors) {
    ordered_json shape = t.shape;
    const std::string type = t.file_type.empty() ? std::string(model::dtype_name(t.dtype)) : t.file_type;
    tensors.push_back({{"name", t.name},     {"file", fs::path(t.file).filename().string()},
                       {"dtype", type},      {"shape", shape},
                       {"bytes", t.bytes},   {"target", t.target},
                       {"layer", t.layer},   {"offset", t.offset},
                       {"memory", t.memory}, {"how", t.how}});
    auto& [count, bytes] = by_dtype[type];
    count++, bytes += t.bytes, total += t.bytes;
    if (!t.target.empty()) loaded++;
  }
  ordered_json dtypes = ordered_json::object();
  for (const auto& [name, cb] : by_dtype) dtypes[name] = {{"tensors", cb.first}, {"bytes", cb.second}};
  j["weights"] = {{"files", d.files.size()},  {"tensors", d.tensors.size()}, {"loaded", loaded},
                  {"bytes", total},           {"dtypes", dtypes},
                  {"memory_bytes", d.memory_bytes}};
  // what the loader keeps in memory under --dtype: each matrix once, packed, in that type
  j["memory"] = {{"dtype", dtype},
                 {"matrices", memory_types_text(d)},
                 {"bytes", d.memory_bytes},
                 {"rounds", d.rounds},
                 {"activations", d.quantized ? "float32 by default: a product widens 32 rows of blocks at a time to "
                                               "float32 and multiplies float32 inputs; under --compute q8 the products "
                                               "with Q4_0, Q8_0, Q4_K, Q5_K and Q6_K blocks round their inputs to 8 bits "
                                               "(Q8_K or Q8_0 blocks, as llama.cpp does) and multiply integers (" +
                                               std::string(model::matmul_q8_kernel_name(model::matmul_q8_kernel())) +
                                               " kernels)"
                                             : "float32"}};
  j["tensors"] = tensors;
  j["tokenizer"] = tokenizer_info(dir);
  return j;
}

void print_text(const ordered_json& j) {
  auto line = [](const char* label, const std::string& v) { std::printf("%-12s %s\n", label, v.c_str()); };
  const auto& s = j["sizes"];
  line("model", j["model"].get<std::string>());
  line("family", j["family"].get<std::string>());
  line("sizes", "L " + s["L"].dump() + ", C " + s["C"].dump() + ", NH " + s["NH"].dump() + ", NKV " + s["NKV"].dump() +
                    ", HS " + s["HS"].dump() + ", D " + s["D"].dump() + ", F " + s["F"].dump() + ", V " + s["V"].dump() +
                    ", maxT " + s["maxT"].dump() + "; " + s["parameters"].dump() + " parameters");
  line("embedding", j["embedding"].get<std::string>());
  line("positions", j["positions"].get<std::string>());
  line("norm", j["norm"].get<std::string>());
  line("attention", j["attention"].get<std::string>());
  line("mlp", j["mlp"].get<std::string>());
  line("unembedding", j["unembedding"].get<std::string>());
  const auto& tk = j["tokenizer"];
  std::string tok = tk["kind"].get<std::string>();
  if (tk.contains("model")) tok += " (" + tk["model"].get<std::string>() + ", pre-tokenizer " + tk["pre_tokenizer"].get<std::string>() + ")";
  if (tk.contains("tokens")) tok += ", " + tk["tokens"].dump() + " tokens";
  if (tk.contains("error")) tok += ": does not load: " + tk["error"].get<std::string>();
  if (tk.contains("note")) tok += ": " + tk["note"].get<std::string>();
  line("tokenizer", tok);

  int read = 0;
  for (const auto& k : j["config_keys"]) read += k["read"].get<bool>() ? 1 : 0;
  std::printf("\n%s: %d keys, %d read\n", j["config_source"].get<std::string>().c_str(), int(j["config_keys"].size()), read);
  for (const auto& k : j["config_keys"])
    std::printf("  %-40s %-24s %s\n", k["key"].get<std::string>().c_str(), k["value"].get<std::string>().c_str(),
                k["effect"].get<std::string>().c_str());

  const auto& w = j["weights"];
  std::string dtypes;
  for (const auto& [name, v] : w["dtypes"].items())
    dtypes += (dtypes.empty() ? "" : ", ") + name + " " + v["tensors"].dump() + " (" + bytes_text(v["bytes"].get<std::uint64_t>()) + ")";
  std::printf("\nweights: %s tensors in %s file(s), %s loaded, %s on disk [%s]\n", w["tensors"].dump().c_str(),
              w["files"].dump().c_str(), w["loaded"].dump().c_str(), bytes_text(w["bytes"].get<std::uint64_t>()).c_str(),
              dtypes.c_str());
  const auto& mem = j["memory"];
  std::printf("in memory:   about %s: the matrices as %s (each kept once), norms, biases and positions as f32 "
              "(--dtype %s%s); activations %s\n",
              bytes_text(mem["bytes"].get<std::uint64_t>()).c_str(), mem["matrices"].get<std::string>().c_str(),
              mem["dtype"].get<std::string>().c_str(), mem["rounds"].get<bool>() ? ", which rounds them" : "",
              mem["activations"].get<std::string>().c_str());
  for (const auto& t : j["tensors"]) {
    std::string shape = "(";
    for (std::size_t i = 0; i < t["shape"].size(); i++) shape += (i ? ", " : "") + t["shape"][i].dump();
    shape += ")";
    std::string target = t["target"].get<std::string>();
    if (!target.empty()) {
      if (t["layer"].get<int>() >= 0) target += "[" + t["layer"].dump() + "]";
      if (t["offset"].get<std::int64_t>() > 0) target += " +" + t["offset"].dump();
    }
    if (!target.empty()) target += " " + t["memory"].get<std::string>();
    std::printf("  %-48s %-5s %-14s %10s -> %-22s %s\n", t["name"].get<std::string>().c_str(),
                t["dtype"].get<std::string>().c_str(), shape.c_str(), bytes_text(t["bytes"].get<std::uint64_t>()).c_str(),
                target.empty() ? "-" : target.c_str(), t["how"].get<std::string>().c_str());
  }
}

int run_info(const InfoOptions& o) {
  auto d = model::model_describe(o.model, dtype_choice(o.dtype));
  if (!d) return print_error(d.error().message);
  ordered_json j = info_json(o.model, *d, o.dtype);
  if (o.format == "json") std::cout << j.dump(2) << "\n";
  else print_text(j);
  return 0;
}

}  // namespace

void add_info_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand("info", "What headlab makes of a model folder: family, sizes, block, keys, tensors");
  cmd->footer(
      "\nReads config.json and the headers of model.safetensors (or the shards of\n"
      "model.safetensors.index.json) without loading a weight, and prints: the family and\n"
      "every size (L layers, C channels, NH query heads, NKV KV heads, HS head size, D = NH HS,\n"
      "F the MLP width, V the vocabulary, maxT the context); the block's positions, norm,\n"
      "attention and MLP; each config.json key with what it set (a key that would change the\n"
      "maths and is not implemented is refused, so the unread ones do not change the forward);\n"
      "each tensor with its dtype, shape and bytes and the headlab tensor and layer it fills;\n"
      "and the tokenizer. The same loader runs the model in `headlab run`, the scanner and\n"
      "the server, so what this prints is what they use.\n\n"
      "A GGUF file (llama.cpp's format, a path ending in .gguf) is described the same way from\n"
      "its metadata and tensor infos: each key with what it set, each tensor's type (F16,\n"
      "Q8_0, Q4_K, ...) and how it is read (dequantized, llama.cpp's q/k rows re-paired,\n"
      "Gemma's 1 + w), and the tokenizer from tokenizer.ggml.*.\n\n"
      "Examples:\n"
      "  headlab info --model models/headlab-tiny\n"
      "  headlab info --model tests/fixtures/model/families/gemma3 --format json\n"
      "  headlab info --model qwen2.5-0.5b-instruct-q8_0.gguf");
  cmd->add_option("--model", opts->model,
                  "Model directory (config.json and model.safetensors or its index), or a .gguf file")->required();
  add_dtype_option(cmd, opts->dtype);
  cmd->add_option("--format", opts->format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  cmd->callback([opts, &exit_code] { exit_code = run_info(*opts); });
}

}  // namespace headlab::cli
