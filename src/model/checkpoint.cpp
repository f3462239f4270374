// model/checkpoint.cpp — a model directory in the Hugging Face GPT-2 layout (see checkpoint.h).
#include "model/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <new>
#include <string_view>
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

// With `t` null the slots carry only names and shapes (dest null): the shapes are checked
// against the file before any weight is allocated.
std::vector<TensorSlot> checkpoint_slots(const ModelConfig& c, const ParameterTensors* t) {
  const std::int64_t C = c.n_embd, V = c.vocab_size, maxT = c.n_ctx;
  auto at = [t](float* ParameterTensors::*tensor, std::int64_t offset) -> float* {
    return t ? t->*tensor + offset : nullptr;
  };
  using P = ParameterTensors;
  std::vector<TensorSlot> slots;
  slots.push_back({"wte.weight", {V, C}, at(&P::wte, 0), false});
  slots.push_back({"wpe.weight", {maxT, C}, at(&P::wpe, 0), false});
  for (int l = 0; l < c.n_layer; l++) {
    const std::string h = "h." + std::to_string(l) + ".";
    slots.push_back({h + "ln_1.weight", {C}, at(&P::ln1w, l * C), false});
    slots.push_back({h + "ln_1.bias", {C}, at(&P::ln1b, l * C), false});
    slots.push_back({h + "attn.c_attn.weight", {C, 3 * C}, at(&P::qkvw, l * 3 * C * C), true});
    slots.push_back({h + "attn.c_attn.bias", {3 * C}, at(&P::qkvb, l * 3 * C), false});
    slots.push_back({h + "attn.c_proj.weight", {C, C}, at(&P::attprojw, l * C * C), true});
    slots.push_back({h + "attn.c_proj.bias", {C}, at(&P::attprojb, l * C), false});
    if (c.mlp) {
      slots.push_back({h + "ln_2.weight", {C}, at(&P::ln2w, l * C), false});
      slots.push_back({h + "ln_2.bias", {C}, at(&P::ln2b, l * C), false});
      slots.push_back({h + "mlp.c_fc.weight", {C, 4 * C}, at(&P::fcw, l * 4 * C * C), true});
      slots.push_back({h + "mlp.c_fc.bias", {4 * C}, at(&P::fcb, l * 4 * C), false});
      slots.push_back({h + "mlp.c_proj.weight", {4 * C, C}, at(&P::fcprojw, l * 4 * C * C), true});
      slots.push_back({h + "mlp.c_proj.bias", {C}, at(&P::fcprojb, l * C), false});
    }
  }
  slots.push_back({"ln_f.weight", {C}, at(&P::lnfw, 0), false});
  slots.push_back({"ln_f.bias", {C}, at(&P::lnfb, 0), false});
  if (!c.tied) slots.push_back({"lm_head.weight", {V, C}, at(&P::lm_head, 0), false});
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

// The tensor a slot reads, with or without the "transformer." prefix; null if absent.
const SafetensorsTensor* find_slot_tensor(const SafetensorsFile& file, const std::string& name) {
  const SafetensorsTensor* t = file.find(name);
  return t ? t : file.find("transformer." + name);
}

// The number of blocks the file holds weights for: one more than the largest N of "h.N.".
int file_layer_count(const SafetensorsFile& file) {
  int layers = 0;
  for (const SafetensorsTensor& t : file.tensors) {
    std::string_view name = t.name;
    if (name.substr(0, 12) == "transformer.") name.remove_prefix(12);
    if (name.substr(0, 2) != "h.") continue;
    int n = 0;
    std::size_t i = 2;
    for (; i < name.size() && i < 9 && name[i] >= '0' && name[i] <= '9'; i++) n = n * 10 + (name[i] - '0');
    if (i > 2 && i < name.size() && name[i] == '.') layers = std::max(layers, n + 1);
  }
  return layers;
}

// Which setting of config.json a wrong shape contradicts, as ": config.json's X is A but
// the weights hold B ...", or empty when no single setting explains it.
std::string shape_disagreement(const ModelConfig& c, const TensorSlot& slot, const std::vector<std::int64_t>& shape) {
  const std::vector<std::int64_t>& want = slot.file_shape;
  if (shape.size() != want.size()) return {};
  const bool embedding = slot.name == "wte.weight" || slot.name == "lm_head.weight" || slot.name == "wpe.weight";
  // Rows of wte and lm_head are the vocabulary, the rows of wpe the positions; their
  // columns, and the length of every vector (ln_*, biases of width C), are n_embd.
  if (embedding && shape.size() == 2 && shape[1] == want[1]) {
    const std::string rows = std::to_string(shape[0]);
    if (slot.name == "wpe.weight")
      return ": config.json's n_positions is " + std::to_string(c.n_ctx) + " but the weights hold " + rows + " positions";
    return ": config.json's vocab_size is " + std::to_string(c.vocab_size) + " but the weights hold " + rows + " tokens";
  }
  const std::int64_t file_C = embedding ? shape[1] : shape[0];
  if (file_C != c.n_embd && (embedding || want[0] == c.n_embd))
    return ": config.json's n_embd is " + std::to_string(c.n_embd) + " but the weights have " + std::to_string(file_C) +
           " channels";
  return {};
}

// Every tensor the config implies is in the file, of a floating dtype and of the config's
// shape, and the file holds no tensor the config does not describe. Reads only the header,
// so a lying config.json is refused before its sizes are allocated.
Status checkpoint_check_shapes(const ModelConfig& config, const SafetensorsFile& file) {
  std::set<std::string> used;
  for (const TensorSlot& slot : checkpoint_slots(config, nullptr)) {
    const SafetensorsTensor* t = find_slot_tensor(file, slot.name);
    if (!t && slot.name == "lm_head.weight")
      return make_error(ErrorCode::corrupt, file.path + ": missing tensor \"lm_head.weight\" (config.json says "
                                                        "tie_word_embeddings is false)");
    if (!t && slot.name.compare(0, 2, "h.") == 0 && file_layer_count(file) < config.n_layer)
      return make_error(ErrorCode::corrupt, file.path + ": missing tensor \"" + slot.name + "\": config.json's n_layer is " +
                                                std::to_string(config.n_layer) + " but the weights hold " +
                                                std::to_string(file_layer_count(file)) + " layers");
    if (!t)
      return make_error(ErrorCode::corrupt, file.path + ": missing tensor \"" + slot.name + "\"" +
                                                (slot.name.find("mlp") != std::string::npos || slot.name.find("ln_2") != std::string::npos
                                                     ? " (an attention-only model needs \"headlab_mlp\": false in config.json)"
                                                     : ""));
    used.insert(t->name);
    if (t->shape != slot.file_shape)
      return make_error(ErrorCode::corrupt, file.path + ": tensor \"" + t->name + "\" has shape " + shape_string(t->shape) +
                                                ", config.json implies " + shape_string(slot.file_shape) +
                                                shape_disagreement(config, slot, t->shape));
    if (t->dtype != Dtype::F32 && t->dtype != Dtype::F16 && t->dtype != Dtype::BF16 && t->dtype != Dtype::F64)
      return make_error(ErrorCode::unsupported, file.path + ": tensor \"" + t->name + "\" has dtype " +
                                                    std::string(dtype_name(t->dtype)) + ", not a floating type");
  }
  for (const SafetensorsTensor& t : file.tensors) {
    if (used.count(t.name) || is_ignorable(t.name)) continue;
    if (config.tied && (t.name == "lm_head.weight" || t.name == "transformer.lm_head.weight")) continue;
    return make_error(ErrorCode::corrupt, file.path + ": unexpected tensor \"" + t.name +
                                              "\" (config.json does not describe it: wrong n_layer, or MLP weights in an "
                                              "attention-only model?)");
  }
  return {};
}

// "1.5 GB", "310 MB": a size for a message.
std::string bytes_string(std::uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.1f GB", double(bytes) / double(1ull << 30));
  else
    std::snprintf(buf, sizeof buf, "%.0f MB", std::max(1.0, double(bytes) / double(1ull << 20)));
  return buf;
}

Error out_of_memory(const ModelConfig& config, const std::string& what) {
  return Error{ErrorCode::unsupported, what + ": the model needs about " + bytes_string(checkpoint_memory_bytes(config)) +
                                           " of memory (" + std::to_string(parameters_count(config)) +
                                           " weights as float32, and the matrices again in the layout of the short-input "
                                           "kernel) and this machine could not allocate it"};
}

}  // namespace

std::uint64_t checkpoint_memory_bytes(const ModelConfig& c) {
  const std::uint64_t C = std::uint64_t(c.n_embd), L = std::uint64_t(c.n_layer), V = std::uint64_t(c.vocab_size);
  const std::uint64_t matrices = L * (3 * C * C + C * C + (c.mlp ? 8 * C * C : 0)) + V * C;
  return 4 * (std::uint64_t(parameters_count(c)) + matrices);
}

Result<Parameters> checkpoint_from_safetensors(const ModelConfig& config, const SafetensorsFile& file) {
  if (Status s = config_validate(config); !s) return tl::unexpected(s.error());
  if (Status s = checkpoint_check_shapes(config, file); !s) return tl::unexpected(s.error());
  // The shapes are the file's now, so this is what the file holds; a machine without
  // that much memory gets a message saying how much, not an abort.
  Parameters p;
  try {
    p = parameters_allocate(config);
  } catch (const std::bad_alloc&) {
    return tl::unexpected(out_of_memory(config, file.path));
  }
  std::vector<float> tmp;
  for (const TensorSlot& slot : checkpoint_slots(config, &p.t)) {
    const SafetensorsTensor* t = find_slot_tensor(file, slot.name);
    HEADLAB_CHECK(t != nullptr);  // checkpoint_check_shapes found every slot
    const std::int64_t n = t->numel();
    float* dest = slot.dest;
    if (slot.transpose) {
      try {
        tmp.resize(std::size_t(n));
      } catch (const std::bad_alloc&) {
        return tl::unexpected(out_of_memory(config, file.path));
      }
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
  if (!params) return params;
  try {
    parameters_pack(*params);  // for short inputs at inference (packed_weights.h)
  } catch (const std::bad_alloc&) {
    return tl::unexpected(out_of_memory(*config, file->path));
  }
  return params;
}

Status checkpoint_save(const std::string& dir, const Parameters& params, Dtype dtype) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io_error, dir + ": cannot create the directory: " + ec.message());
  if (Status s = config_save(params.config, (fs::path(dir) / "config.json").string()); !s) return s;
  // The slots point into params; they are only read here.
  std::vector<TensorSlot> slots = checkpoint_slots(params.config, &params.t);
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
