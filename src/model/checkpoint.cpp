// model/checkpoint.cpp — a model directory in the Hugging Face GPT-2 layout (see checkpoint.h).
#include "model/checkpoint.h"

#include <cmath>
#include <filesystem>
#include <set>
#include <span>

#include "model/packed_weights.h"
#include "util/check.h"

namespace headlab::model {

namespace {

// One checkpoint tensor: its HF name (without "transformer."), its shape in the file, and
// where it goes. Conv1D weights are (in, out) in the file and (out, in) in headlab.
// GPT-NeoX fuses q, k and v head by head; its rows are reordered into [q; k; v].
enum class Layout { copy, transpose, neox_qkv };
struct TensorSlot {
  std::string name;
  std::vector<std::int64_t> file_shape;
  float* dest;
  bool transpose;  // Conv1D: file (in, out) -> dest (out, in)
  Layout layout = Layout::copy;
};

// GPT-NeoX (Pythia), names under "gpt_neox." except the unembedding "embed_out".
std::vector<TensorSlot> neox_slots(const ModelConfig& c, const ParameterTensors& t) {
  const std::int64_t C = c.n_embd, V = c.vocab_size, QKV = c.qkv_width(), F = c.mlp_width();
  std::vector<TensorSlot> slots;
  slots.push_back({"gpt_neox.embed_in.weight", {V, C}, t.wte, false});
  for (int l = 0; l < c.n_layer; l++) {
    const std::string h = "gpt_neox.layers." + std::to_string(l) + ".";
    slots.push_back({h + "input_layernorm.weight", {C}, t.ln1w + l * C, false});
    slots.push_back({h + "input_layernorm.bias", {C}, t.ln1b + l * C, false});
    slots.push_back({h + "attention.query_key_value.weight", {QKV, C}, t.qkvw + l * QKV * C, false, Layout::neox_qkv});
    if (c.qkv_bias)
      slots.push_back({h + "attention.query_key_value.bias", {QKV}, t.qkvb + l * QKV, false, Layout::neox_qkv});
    slots.push_back({h + "attention.dense.weight", {C, C}, t.attprojw + l * C * C, false});
    if (c.attn_out_bias) slots.push_back({h + "attention.dense.bias", {C}, t.attprojb + l * C, false});
    slots.push_back({h + "post_attention_layernorm.weight", {C}, t.ln2w + l * C, false});
    slots.push_back({h + "post_attention_layernorm.bias", {C}, t.ln2b + l * C, false});
    slots.push_back({h + "mlp.dense_h_to_4h.weight", {F, C}, t.fcw + l * F * C, false});
    slots.push_back({h + "mlp.dense_h_to_4h.bias", {F}, t.fcb + l * F, false});
    slots.push_back({h + "mlp.dense_4h_to_h.weight", {C, F}, t.fcprojw + l * C * F, false});
    slots.push_back({h + "mlp.dense_4h_to_h.bias", {C}, t.fcprojb + l * C, false});
  }
  slots.push_back({"gpt_neox.final_layer_norm.weight", {C}, t.lnfw, false});
  slots.push_back({"gpt_neox.final_layer_norm.bias", {C}, t.lnfb, false});
  if (!c.tied) slots.push_back({"embed_out.weight", {V, C}, t.lm_head, false});
  return slots;
}

// Llama, Mistral and Qwen2 (LlamaForCausalLM's names under "model."): q_proj, k_proj and
// v_proj fill the rows of qkvw in turn, gate_proj and up_proj those of fcw.
std::vector<TensorSlot> llama_slots(const ModelConfig& c, const ParameterTensors& t) {
  const std::int64_t C = c.n_embd, V = c.vocab_size, QKV = c.qkv_width(), D = c.q_width(), F = c.mlp_width();
  const std::int64_t KVD = std::int64_t(c.kv_heads()) * c.head_size();
  std::vector<TensorSlot> slots;
  slots.push_back({"model.embed_tokens.weight", {V, C}, t.wte, false});
  for (int l = 0; l < c.n_layer; l++) {
    const std::string h = "model.layers." + std::to_string(l) + ".";
    float* qkvw = t.qkvw + l * QKV * C;
    slots.push_back({h + "input_layernorm.weight", {C}, t.ln1w + l * C, false});
    slots.push_back({h + "self_attn.q_proj.weight", {D, C}, qkvw, false});
    slots.push_back({h + "self_attn.k_proj.weight", {KVD, C}, qkvw + D * C, false});
    slots.push_back({h + "self_attn.v_proj.weight", {KVD, C}, qkvw + (D + KVD) * C, false});
    if (c.qkv_bias) {
      float* qkvb = t.qkvb + l * QKV;
      slots.push_back({h + "self_attn.q_proj.bias", {D}, qkvb, false});
      slots.push_back({h + "self_attn.k_proj.bias", {KVD}, qkvb + D, false});
      slots.push_back({h + "self_attn.v_proj.bias", {KVD}, qkvb + D + KVD, false});
    }
    slots.push_back({h + "self_attn.o_proj.weight", {C, D}, t.attprojw + l * C * D, false});
    if (c.attn_out_bias) slots.push_back({h + "self_attn.o_proj.bias", {C}, t.attprojb + l * C, false});
    slots.push_back({h + "post_attention_layernorm.weight", {C}, t.ln2w + l * C, false});
    float* fcw = t.fcw + l * 2 * F * C;
    slots.push_back({h + "mlp.gate_proj.weight", {F, C}, fcw, false});
    slots.push_back({h + "mlp.up_proj.weight", {F, C}, fcw + F * C, false});
    slots.push_back({h + "mlp.down_proj.weight", {C, F}, t.fcprojw + l * C * F, false});
    if (c.mlp_bias) {
      slots.push_back({h + "mlp.gate_proj.bias", {F}, t.fcb + l * 2 * F, false});
      slots.push_back({h + "mlp.up_proj.bias", {F}, t.fcb + l * 2 * F + F, false});
      slots.push_back({h + "mlp.down_proj.bias", {C}, t.fcprojb + l * C, false});
    }
  }
  slots.push_back({"model.norm.weight", {C}, t.lnfw, false});
  if (!c.tied) slots.push_back({"lm_head.weight", {V, C}, t.lm_head, false});
  return slots;
}

// The unembedding's name in the family's files (kept or ignored when tied).
std::string unembedding_name(const ModelConfig& c) { return c.family == "gpt_neox" ? "embed_out.weight" : "lm_head.weight"; }

std::vector<TensorSlot> checkpoint_slots(const ModelConfig& c, const ParameterTensors& t) {
  if (c.family == "gpt_neox") return neox_slots(c, t);
  if (!c.is_gpt2()) return llama_slots(c, t);
  const std::int64_t C = c.n_embd, V = c.vocab_size, maxT = c.n_ctx;
  std::vector<TensorSlot> slots;
  slots.push_back({"wte.weight", {V, C}, t.wte, false});
  slots.push_back({"wpe.weight", {maxT, C}, t.wpe, false});
  for (int l = 0; l < c.n_layer; l++) {
    const std::string h = "h." + std::to_string(l) + ".";
    slots.push_back({h + "ln_1.weight", {C}, t.ln1w + l * C, false});
    slots.push_back({h + "ln_1.bias", {C}, t.ln1b + l * C, false});
    slots.push_back({h + "attn.c_attn.weight", {C, 3 * C}, t.qkvw + l * 3 * C * C, true});
    slots.push_back({h + "attn.c_attn.bias", {3 * C}, t.qkvb + l * 3 * C, false});
    slots.push_back({h + "attn.c_proj.weight", {C, C}, t.attprojw + l * C * C, true});
    slots.push_back({h + "attn.c_proj.bias", {C}, t.attprojb + l * C, false});
    if (c.mlp) {
      slots.push_back({h + "ln_2.weight", {C}, t.ln2w + l * C, false});
      slots.push_back({h + "ln_2.bias", {C}, t.ln2b + l * C, false});
      slots.push_back({h + "mlp.c_fc.weight", {C, 4 * C}, t.fcw + l * 4 * C * C, true});
      slots.push_back({h + "mlp.c_fc.bias", {4 * C}, t.fcb + l * 4 * C, false});
      slots.push_back({h + "mlp.c_proj.weight", {4 * C, C}, t.fcprojw + l * 4 * C * C, true});
      slots.push_back({h + "mlp.c_proj.bias", {C}, t.fcprojb + l * C, false});
    }
  }
  slots.push_back({"ln_f.weight", {C}, t.lnfw, false});
  slots.push_back({"ln_f.bias", {C}, t.lnfb, false});
  if (!c.tied) slots.push_back({"lm_head.weight", {V, C}, t.lm_head, false});
  return slots;
}

std::string shape_string(const std::vector<std::int64_t>& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

// Buffers some GPT-2 files carry that are not weights.
bool is_ignorable(const std::string& name) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".attn.bias") || ends_with(".attn.masked_bias") || ends_with(".attention.bias") ||
         ends_with(".attention.masked_bias") || ends_with(".rotary_emb.inv_freq");
}

// GPT-NeoX's fused rows (NH, 3, HS) x width -> headlab's [q (NH, HS); k; v] x width.
void neox_qkv_reorder(float* dest, const float* src, int NH, int HS, std::int64_t width) {
  for (int h = 0; h < NH; h++)
    for (int s = 0; s < 3; s++)
      for (int i = 0; i < HS; i++) {
        const float* from = src + ((std::int64_t(h) * 3 + s) * HS + i) * width;
        float* to = dest + ((std::int64_t(s) * NH + h) * HS + i) * width;
        std::copy(from, from + width, to);
      }
}

// Finds a tensor in any of the files (one, or a sharded checkpoint's shards).
const SafetensorsTensor* find_in(std::span<const SafetensorsFile> files, const std::string& name,
                                 const SafetensorsFile** owner) {
  for (const SafetensorsFile& f : files)
    if (const SafetensorsTensor* t = f.find(name)) {
      *owner = &f;
      return t;
    }
  return nullptr;
}

}  // namespace

namespace {

Result<Parameters> checkpoint_from_files(const ModelConfig& config, std::span<const SafetensorsFile> files,
                                         const SafetensorsFile& file) {
  if (Status s = config_validate(config); !s) return tl::unexpected(s.error());
  Parameters p = parameters_allocate(config);
  std::vector<TensorSlot> slots = checkpoint_slots(config, p.t);
  std::set<std::string> used;
  std::vector<float> tmp;
  for (const TensorSlot& slot : slots) {
    const SafetensorsFile* owner = &file;
    const SafetensorsTensor* t = find_in(files, slot.name, &owner);
    if (!t && config.is_gpt2()) t = find_in(files, "transformer." + slot.name, &owner);
    if (!t && slot.name == unembedding_name(config))
      return make_error(ErrorCode::corrupt, file.path + ": missing tensor \"" + slot.name + "\" (config.json says "
                                                        "tie_word_embeddings is false)");
    if (!t)
      return make_error(ErrorCode::corrupt, file.path + ": missing tensor \"" + slot.name + "\"" +
                                                (slot.name.find("mlp") != std::string::npos || slot.name.find("ln_2") != std::string::npos
                                                     ? " (an attention-only model needs \"headlab_mlp\": false in config.json)"
                                                     : ""));
    used.insert(t->name);
    if (t->shape != slot.file_shape) {
      // Say which setting disagrees when the other dimensions agree: the rows of wte and
      // lm_head are the vocabulary, the rows of wpe the positions.
      std::string which;
      if (t->shape.size() == 2 && t->shape[1] == slot.file_shape[1]) {
        const std::string rows = std::to_string(t->shape[0]);
        if (slot.name == "wte.weight" || slot.name == "lm_head.weight")
          which = ": config.json's vocab_size is " + std::to_string(config.vocab_size) + " but the weights hold " +
                  rows + " tokens";
        else if (slot.name == "wpe.weight")
          which = ": config.json's n_positions is " + std::to_string(config.n_ctx) + " but the weights hold " + rows +
                  " positions";
      }
      return make_error(ErrorCode::corrupt, file.path + ": tensor \"" + t->name + "\" has shape " + shape_string(t->shape) +
                                                ", config.json implies " + shape_string(slot.file_shape) + which);
    }
    const std::int64_t n = t->numel();
    float* dest = slot.dest;
    if (slot.transpose || slot.layout == Layout::neox_qkv) {
      tmp.resize(std::size_t(n));
      dest = tmp.data();
    }
    if (Status s = safetensors_to_f32(*owner, *t, dest); !s) return tl::unexpected(s.error());
    for (std::int64_t i = 0; i < n; i++)
      if (!std::isfinite(dest[i]))
        return make_error(ErrorCode::corrupt, file.path + ": tensor \"" + t->name + "\" holds a non-finite value (" +
                                                  std::to_string(dest[i]) + ") at flat index " + std::to_string(i));
    if (slot.transpose) {
      const std::int64_t in = slot.file_shape[0], out = slot.file_shape[1];
      for (std::int64_t i = 0; i < in; i++)
        for (std::int64_t o = 0; o < out; o++) slot.dest[o * in + i] = tmp[i * out + o];
    }
    if (slot.layout == Layout::neox_qkv)
      neox_qkv_reorder(slot.dest, tmp.data(), config.n_head, config.head_size(),
                       slot.file_shape.size() == 2 ? slot.file_shape[1] : 1);
  }
  for (const SafetensorsFile& f : files)
    for (const SafetensorsTensor& t : f.tensors) {
      if (used.count(t.name) || is_ignorable(t.name)) continue;
      if (config.tied && (t.name == unembedding_name(config) || t.name == "transformer.lm_head.weight")) continue;
      return make_error(ErrorCode::corrupt, f.path + ": unexpected tensor \"" + t.name +
                                                "\" (config.json does not describe it: wrong n_layer, biases the family "
                                                "does not have, or MLP weights in an attention-only model?)");
    }
  return p;
}

}  // namespace

Result<Parameters> checkpoint_from_safetensors(const ModelConfig& config, const SafetensorsFile& file) {
  return checkpoint_from_files(config, std::span<const SafetensorsFile>(&file, 1), file);
}

Result<Parameters> checkpoint_from_shards(const ModelConfig& config, const std::vector<SafetensorsFile>& shards) {
  if (shards.empty()) return make_error(ErrorCode::corrupt, "a sharded checkpoint without shards");
  return checkpoint_from_files(config, shards, shards.front());
}

Result<Parameters> checkpoint_load(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error(ErrorCode::not_found, dir + ": not a directory");
  auto config = config_load((fs::path(dir) / "config.json").string());
  if (!config) return tl::unexpected(config.error());
  // header only: each tensor is read into its place, so the file's bytes and the weights
  // are never both in memory
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  Result<Parameters> params = make_error(ErrorCode::internal, "unreachable");
  if (!fs::exists(single, ec) && fs::exists(index, ec)) {
    auto shards = safetensors_open_index(index.string());  // sharded: model-00001-of-0000N.safetensors, ...
    if (!shards) return tl::unexpected(shards.error());
    params = checkpoint_from_shards(*config, *shards);
  } else {
    auto file = safetensors_open(single.string());
    if (!file) return tl::unexpected(file.error());
    params = checkpoint_from_safetensors(*config, *file);
  }
  if (params) parameters_pack(*params);  // for short inputs at inference (packed_weights.h)
  return params;
}

Status checkpoint_save(const std::string& dir, const Parameters& params, Dtype dtype) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io_error, dir + ": cannot create the directory: " + ec.message());
  if (!params.config.is_gpt2())
    return make_error(ErrorCode::unsupported, dir + ": saving a " + params.config.family +
                                                  " model is not implemented (headlab saves GPT-2 checkpoints only)");
  if (Status s = config_save(params.config, (fs::path(dir) / "config.json").string()); !s) return s;
  // The slots point into params; they are only read here.
  std::vector<TensorSlot> slots = checkpoint_slots(params.config, params.t);
  std::vector<std::vector<float>> transposed;
  transposed.reserve(slots.size());
  std::vector<SafetensorsWriteTensor> out;
  for (const TensorSlot& slot : slots) {
    const float* values = slot.dest;
    if (slot.transpose) {
      const std::int64_t in = slot.file_shape[0], o = slot.file_shape[1];
      std::vector<float>& t = transposed.emplace_back(std::size_t(in * o));
      for (std::int64_t i = 0; i < in; i++)
        for (std::int64_t j = 0; j < o; j++) t[i * o + j] = slot.dest[j * in + i];
      values = t.data();
    }
    const std::string name = slot.name == "lm_head.weight" ? slot.name : "transformer." + slot.name;
    out.push_back({name, slot.file_shape, values});
  }
  return safetensors_write((fs::path(dir) / "model.safetensors").string(), out, dtype, {{"format", "pt"}});
}

}  // namespace headlab::model
