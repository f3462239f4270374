// model/checkpoint.cpp — a model directory in the Hugging Face GPT-2 layout (see checkpoint.h).
#include "model/checkpoint.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "model/packed_weights.h"
#include "util/check.h"

namespace headlab::model {

namespace {

// One checkpoint tensor: its HF name (without "transformer."), its shape in the file, and
// where it goes. Conv1D weights are (in, out) in the file and (out, in) in headlab.
struct TensorSlot {
  std::string name;
  std::vector<std::int64_t> file_shape;
  float* dest;
  bool transpose;  // Conv1D: file (in, out) -> dest (out, in)
};

std::vector<TensorSlot> checkpoint_slots(const ModelConfig& c, const ParameterTensors& t) {
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
  return ends_with(".attn.bias") || ends_with(".attn.masked_bias");
}

}  // namespace

Result<Parameters> checkpoint_from_safetensors(const ModelConfig& config, const SafetensorsFile& file) {
  if (Status s = config_validate(config); !s) return tl::unexpected(s.error());
  Parameters p = parameters_allocate(config);
  std::vector<TensorSlot> slots = checkpoint_slots(config, p.t);
  std::set<std::string> used;
  std::vector<float> tmp;
  for (const TensorSlot& slot : slots) {
    const SafetensorsTensor* t = file.find(slot.name);
    if (!t) t = file.find("transformer." + slot.name);
    if (!t && slot.name == "lm_head.weight")
      return make_error(ErrorCode::corrupt, file.path + ": missing tensor \"lm_head.weight\" (config.json says "
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
    if (slot.transpose) {
      tmp.resize(std::size_t(n));
      dest = tmp.data();
    }
    if (Status s = safetensors_to_f32(file, *t, dest); !s) return tl::unexpected(s.error());
    for (std::int64_t i = 0; i < n; i++)
      if (!std::isfinite(dest[i]))
        return make_error(ErrorCode::corrupt, file.path + ": tensor \"" + t->name + "\" holds a non-finite value (" +
                                                  std::to_string(dest[i]) + ") at flat index " + std::to_string(i));
    if (slot.transpose) {
      const std::int64_t in = slot.file_shape[0], out = slot.file_shape[1];
      for (std::int64_t i = 0; i < in; i++)
        for (std::int64_t o = 0; o < out; o++) slot.dest[o * in + i] = tmp[i * out + o];
    }
  }
  for (const SafetensorsTensor& t : file.tensors) {
    if (used.count(t.name) || is_ignorable(t.name)) continue;
    if (config.tied && (t.name == "lm_head.weight" || t.name == "transformer.lm_head.weight")) continue;
    return make_error(ErrorCode::corrupt, file.path + ": unexpected tensor \"" + t.name +
                                              "\" (config.json does not describe it: wrong n_layer, or MLP weights in an "
                                              "attention-only model?)");
  }
  return p;
}

Result<Parameters> checkpoint_load(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error(ErrorCode::not_found, dir + ": not a directory");
  auto config = config_load((fs::path(dir) / "config.json").string());
  if (!config) return tl::unexpected(config.error());
  // header only: each tensor is read into its place, so the file's bytes and the weights
  // are never both in memory
  auto file = safetensors_open((fs::path(dir) / "model.safetensors").string());
  if (!file) return tl::unexpected(file.error());
  auto params = checkpoint_from_safetensors(*config, *file);
  if (params) parameters_pack(*params);  // for short inputs at inference (packed_weights.h)
  return params;
}

Status checkpoint_save(const std::string& dir, const Parameters& params, Dtype dtype) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io_error, dir + ": cannot create the directory: " + ec.message());
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
