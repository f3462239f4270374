// formats/hf/checkpoint.cpp — a model directory in the Hugging Face layout of its family (see
// checkpoint.h): GPT-2, GPT-NeoX (Pythia), Llama / Mistral / Qwen2. The shapes of every tensor
// are checked against config.json from the file's header before any weight is allocated.
#include "formats/hf/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <new>
#include <set>
#include <span>
#include <string_view>

#include "model/packed_weights.h"
#include "model/weight_type.h"
#include "util/check.h"
#include "util/file.h"

namespace headlab::model {

namespace {

// One checkpoint tensor: its HF name (GPT-2's without "transformer."), its shape in the file,
// and where it goes (null when the slots only describe the shapes). Conv1D weights are
// (in, out) in the file and (out, in) in headlab. GPT-NeoX fuses q, k and v head by head;
// its rows are reordered into [q; k; v].
enum class Layout { copy, transpose, neox_qkv };
// Where a slot's values go: a pointer into the weights (null when the slots only describe
// the shapes), and which of headlab's tensors at which offset, for checkpoint_describe.
struct SlotDest {
  float* ptr = nullptr;
  int tensor = -1;          // index in ParameterTensors order (parameters_name)
  std::int64_t offset = 0;  // floats into that tensor
  operator float*() const { return ptr; }
};
struct TensorSlot {
  std::string name;
  std::vector<std::int64_t> file_shape;
  SlotDest dest;
  bool transpose;  // Conv1D: file (in, out) -> dest (out, in)
  Layout layout = Layout::copy;
};

using P = ParameterTensors;

// The index of a member of ParameterTensors in its order.
int tensor_index(float* ParameterTensors::*tensor) {
  static float* ParameterTensors::*const kOrder[kNumParameterTensors] = {
      &P::wte,  &P::wpe,     &P::ln1w,    &P::ln1b, &P::qkvw, &P::qkvb,    &P::attprojw, &P::attprojb,
      &P::ln2w, &P::ln2b,    &P::fcw,     &P::fcb,  &P::fcprojw, &P::fcprojb, &P::lnfw, &P::lnfb,
      &P::lm_head, &P::unused, &P::qnormw, &P::knormw, &P::postattnw, &P::postmlpw};
  for (int i = 0; i < kNumParameterTensors; i++)
    if (kOrder[i] == tensor) return i;
  return -1;
}

// The address of `tensor` + offset in t (null when t is null: shapes only), and its name.
auto slot_dest(const ParameterTensors* t) {
  return [t](float* ParameterTensors::*tensor, std::int64_t offset) -> SlotDest {
    return SlotDest{t ? t->*tensor + offset : nullptr, tensor_index(tensor), offset};
  };
}

// GPT-NeoX (Pythia), names under "gpt_neox." except the unembedding "embed_out".
std::vector<TensorSlot> neox_slots(const ModelConfig& c, const ParameterTensors* t) {
  const std::int64_t C = c.n_embd, V = c.vocab_size, QKV = c.qkv_width(), F = c.mlp_width();
  auto at = slot_dest(t);
  std::vector<TensorSlot> slots;
  slots.push_back({"gpt_neox.embed_in.weight", {V, C}, at(&P::wte, 0), false});
  for (int l = 0; l < c.n_layer; l++) {
    const std::string h = "gpt_neox.layers." + std::to_string(l) + ".";
    slots.push_back({h + "input_layernorm.weight", {C}, at(&P::ln1w, l * C), false});
    slots.push_back({h + "input_layernorm.bias", {C}, at(&P::ln1b, l * C), false});
    slots.push_back({h + "attention.query_key_value.weight", {QKV, C}, at(&P::qkvw, l * QKV * C), false, Layout::neox_qkv});
    if (c.qkv_bias)
      slots.push_back({h + "attention.query_key_value.bias", {QKV}, at(&P::qkvb, l * QKV), false, Layout::neox_qkv});
    slots.push_back({h + "attention.dense.weight", {C, C}, at(&P::attprojw, l * C * C), false});
    if (c.attn_out_bias) slots.push_back({h + "attention.dense.bias", {C}, at(&P::attprojb, l * C), false});
    slots.push_back({h + "post_attention_layernorm.weight", {C}, at(&P::ln2w, l * C), false});
    slots.push_back({h + "post_attention_layernorm.bias", {C}, at(&P::ln2b, l * C), false});
    slots.push_back({h + "mlp.dense_h_to_4h.weight", {F, C}, at(&P::fcw, l * F * C), false});
    slots.push_back({h + "mlp.dense_h_to_4h.bias", {F}, at(&P::fcb, l * F), false});
    slots.push_back({h + "mlp.dense_4h_to_h.weight", {C, F}, at(&P::fcprojw, l * C * F), false});
    slots.push_back({h + "mlp.dense_4h_to_h.bias", {C}, at(&P::fcprojb, l * C), false});
  }
  slots.push_back({"gpt_neox.final_layer_norm.weight", {C}, at(&P::lnfw, 0), false});
  slots.push_back({"gpt_neox.final_layer_norm.bias", {C}, at(&P::lnfb, 0), false});
  if (!c.tied) slots.push_back({"embed_out.weight", {V, C}, at(&P::lm_head, 0), false});
  return slots;
}

// Llama, Mistral, Qwen 2/3 and Gemma 2/3 (LlamaForCausalLM's names under "model."): q_proj,
// k_proj and v_proj fill the rows of qkvw in turn, gate_proj and up_proj those of fcw; Qwen 3
// and Gemma 3 add q_norm and k_norm, Gemma the norms after attention and around the MLP.
std::vector<TensorSlot> llama_slots(const ModelConfig& c, const ParameterTensors* t) {
  const std::int64_t C = c.n_embd, V = c.vocab_size, QKV = c.qkv_width(), D = c.q_width(), F = c.mlp_width();
  const std::int64_t KVD = std::int64_t(c.kv_heads()) * c.head_size();
  auto at = slot_dest(t);
  std::vector<TensorSlot> slots;
  slots.push_back({"model.embed_tokens.weight", {V, C}, at(&P::wte, 0), false});
  for (int l = 0; l < c.n_layer; l++) {
    const std::string h = "model.layers." + std::to_string(l) + ".";
    const std::int64_t qkvw = l * QKV * C;
    slots.push_back({h + "input_layernorm.weight", {C}, at(&P::ln1w, l * C), false});
    slots.push_back({h + "self_attn.q_proj.weight", {D, C}, at(&P::qkvw, qkvw), false});
    slots.push_back({h + "self_attn.k_proj.weight", {KVD, C}, at(&P::qkvw, qkvw + D * C), false});
    slots.push_back({h + "self_attn.v_proj.weight", {KVD, C}, at(&P::qkvw, qkvw + (D + KVD) * C), false});
    if (c.qkv_bias) {
      const std::int64_t qkvb = l * QKV;
      slots.push_back({h + "self_attn.q_proj.bias", {D}, at(&P::qkvb, qkvb), false});
      slots.push_back({h + "self_attn.k_proj.bias", {KVD}, at(&P::qkvb, qkvb + D), false});
      slots.push_back({h + "self_attn.v_proj.bias", {KVD}, at(&P::qkvb, qkvb + D + KVD), false});
    }
    if (c.qk_norm) {  // Qwen 3, Gemma 3: one (HS) weight shared by the heads
      const std::int64_t HS = c.head_size();
      slots.push_back({h + "self_attn.q_norm.weight", {HS}, at(&P::qnormw, l * HS), false});
      slots.push_back({h + "self_attn.k_norm.weight", {HS}, at(&P::knormw, l * HS), false});
    }
    slots.push_back({h + "self_attn.o_proj.weight", {C, D}, at(&P::attprojw, l * C * D), false});
    if (c.attn_out_bias) slots.push_back({h + "self_attn.o_proj.bias", {C}, at(&P::attprojb, l * C), false});
    if (c.sandwich_norm) {  // Gemma: post_attention_layernorm normalises the attention output
      slots.push_back({h + "post_attention_layernorm.weight", {C}, at(&P::postattnw, l * C), false});
      slots.push_back({h + "pre_feedforward_layernorm.weight", {C}, at(&P::ln2w, l * C), false});
      slots.push_back({h + "post_feedforward_layernorm.weight", {C}, at(&P::postmlpw, l * C), false});
    } else {
      slots.push_back({h + "post_attention_layernorm.weight", {C}, at(&P::ln2w, l * C), false});
    }
    const std::int64_t fcw = l * 2 * F * C;
    slots.push_back({h + "mlp.gate_proj.weight", {F, C}, at(&P::fcw, fcw), false});
    slots.push_back({h + "mlp.up_proj.weight", {F, C}, at(&P::fcw, fcw + F * C), false});
    slots.push_back({h + "mlp.down_proj.weight", {C, F}, at(&P::fcprojw, l * C * F), false});
    if (c.mlp_bias) {
      slots.push_back({h + "mlp.gate_proj.bias", {F}, at(&P::fcb, l * 2 * F), false});
      slots.push_back({h + "mlp.up_proj.bias", {F}, at(&P::fcb, l * 2 * F + F), false});
      slots.push_back({h + "mlp.down_proj.bias", {C}, at(&P::fcprojb, l * C), false});
    }
  }
  slots.push_back({"model.norm.weight", {C}, at(&P::lnfw, 0), false});
  if (!c.tied) slots.push_back({"lm_head.weight", {V, C}, at(&P::lm_head, 0), false});
  return slots;
}

// The unembedding's name in the family's files (kept or ignored when tied).
std::string unembedding_name(const ModelConfig& c) { return c.family == "gpt_neox" ? "embed_out.weight" : "lm_head.weight"; }

// The prefix of a block's tensor names, before the layer number.
std::string_view layer_prefix(const ModelConfig& c) {
  if (c.family == "gpt_neox") return "gpt_neox.layers.";
  if (!c.is_gpt2()) return "model.layers.";
  return "h.";
}

// The slots of every tensor the config implies. With `t` null they carry only names and
// shapes (dest null): the shapes are checked against the file before any weight is allocated.
std::vector<TensorSlot> checkpoint_slots(const ModelConfig& c, const ParameterTensors* t) {
  if (c.family == "gpt_neox") return neox_slots(c, t);
  if (!c.is_gpt2()) return llama_slots(c, t);
  const std::int64_t C = c.n_embd, V = c.vocab_size, maxT = c.n_ctx;
  auto at = slot_dest(t);
  std::vector<TensorSlot> slots;
  slots.push_back({"wte.weight", {V, C}, at(&P::wte, 0), false});
  if (c.positions == ModelConfig::Positions::learned)  // headlab_positions rotary or none: no wpe
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

// Buffers some checkpoints carry that are not weights.
bool is_ignorable(const std::string& name) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".attn.bias") || ends_with(".attn.masked_bias") || ends_with(".attention.bias") ||
         ends_with(".attention.masked_bias") || ends_with(".rotary_emb.inv_freq");
}

// The vision tower of Gemma 3's multimodal checkpoint, which headlab does not load.
bool is_vision_tensor(const ModelConfig& c, const std::string& name) {
  if (!c.multimodal_text) return false;
  for (const char* p : {"vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector."})
    if (name.compare(0, std::char_traits<char>::length(p), p) == 0) return true;
  return false;
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

// The tensor a slot reads, in any of the files (one, or a sharded checkpoint's shards), with
// or without GPT-2's "transformer." prefix; null if absent. *owner is the file that holds it.
const SafetensorsTensor* find_slot_tensor(const ModelConfig& c, std::span<const SafetensorsFile> files,
                                          const std::string& name, const SafetensorsFile** owner) {
  // Gemma 3's multimodal checkpoint keeps the text model under language_model (transformers
  // before 4.52: "language_model.model.", "language_model.lm_head."; after: "model.language_model.")
  std::string mm_old, mm_new;
  if (c.multimodal_text) {
    mm_old = "language_model." + name;
    if (name.compare(0, 6, "model.") == 0) mm_new = "model.language_model." + name.substr(6);
  }
  for (const std::string& n : {name, c.is_gpt2() ? "transformer." + name : std::string(), mm_old, mm_new}) {
    if (n.empty()) continue;
    for (const SafetensorsFile& f : files)
      if (const SafetensorsTensor* t = f.find(n)) {
        *owner = &f;
        return t;
      }
  }
  return nullptr;
}

// The number of blocks the files hold weights for: one more than the largest N of the
// family's "<prefix>N.".
int file_layer_count(const ModelConfig& c, std::span<const SafetensorsFile> files) {
  const std::string_view prefix = layer_prefix(c);
  int layers = 0;
  for (const SafetensorsFile& f : files)
    for (const SafetensorsTensor& t : f.tensors) {
      std::string_view name = t.name;
      if (c.is_gpt2() && name.substr(0, 12) == "transformer.") name.remove_prefix(12);
      if (name.substr(0, prefix.size()) != prefix) continue;
      name.remove_prefix(prefix.size());
      int n = 0;
      std::size_t i = 0;
      for (; i < name.size() && i < 7 && name[i] >= '0' && name[i] <= '9'; i++) n = n * 10 + (name[i] - '0');
      if (i > 0 && i < name.size() && name[i] == '.') layers = std::max(layers, n + 1);
    }
  return layers;
}

// Which setting of config.json a wrong shape contradicts, as ": config.json's X is A but
// the weights hold B ...", or empty when no single setting explains it.
std::string shape_disagreement(const ModelConfig& c, const TensorSlot& slot, const std::vector<std::int64_t>& shape) {
  const std::vector<std::int64_t>& want = slot.file_shape;
  if (shape.size() != want.size()) return {};
  const bool vocab_rows = slot.name == "wte.weight" || slot.name == unembedding_name(c) ||
                          slot.name == "gpt_neox.embed_in.weight" || slot.name == "model.embed_tokens.weight";
  const bool embedding = vocab_rows || slot.name == "wpe.weight";
  // Rows of the embedding and the unembedding are the vocabulary, the rows of wpe the
  // positions; their columns, and the length of every vector of width C, are n_embd.
  if (embedding && shape.size() == 2 && shape[1] == want[1]) {
    const std::string rows = std::to_string(shape[0]);
    if (!vocab_rows)
      return ": config.json's n_positions is " + std::to_string(c.n_ctx) + " but the weights hold " + rows + " positions";
    return ": config.json's vocab_size is " + std::to_string(c.vocab_size) + " but the weights hold " + rows + " tokens";
  }
  // The attention projections and q/k norms hold whole heads along one axis: (heads * HS).
  // There a wrong count is the head size, which a config without head_dim takes as n_embd /
  // n_head, so it is named before n_embd (the rows of q_proj are n_embd only by coincidence).
  if (!c.is_gpt2()) {
    auto ends_with = [&](std::string_view suffix) {
      return slot.name.size() >= suffix.size() && slot.name.compare(slot.name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    int heads = 0;
    std::size_t axis = 0;
    if (ends_with("q_proj.weight") || ends_with("q_proj.bias")) heads = c.n_head;
    else if (ends_with("k_proj.weight") || ends_with("k_proj.bias") || ends_with("v_proj.weight") ||
             ends_with("v_proj.bias")) heads = c.kv_heads();
    else if (ends_with("o_proj.weight") || ends_with("attention.dense.weight")) heads = c.n_head, axis = 1;
    else if (ends_with("query_key_value.weight") || ends_with("query_key_value.bias")) heads = 3 * c.n_head;
    else if (ends_with("q_norm.weight") || ends_with("k_norm.weight")) heads = 1;
    bool others_agree = heads > 0 && axis < shape.size();
    for (std::size_t i = 0; others_agree && i < shape.size(); i++) others_agree = i == axis || shape[i] == want[i];
    if (others_agree && shape[axis] % heads == 0 && shape[axis] / heads != c.head_size()) {
      const std::string file_hs = std::to_string(shape[axis] / heads);
      if (c.head_dim > 0)
        return ": config.json's head_dim is " + std::to_string(c.head_dim) + " but the weights hold " +
               std::to_string(shape[axis]) + " = " + std::to_string(heads) + " heads of " + file_hs +
               " (or its head count is wrong)";
      return ": config.json gives no head_dim, so a head is n_embd / n_head = " + std::to_string(c.head_size()) +
             " wide, but the weights hold heads of " + file_hs + " (add \"head_dim\": " + file_hs + ")";
    }
  }
  const std::int64_t file_C = embedding ? shape[1] : shape[0];
  if (file_C != c.n_embd && (embedding || want[0] == c.n_embd))
    return ": config.json's n_embd is " + std::to_string(c.n_embd) + " but the weights have " + std::to_string(file_C) +
           " channels";
  return {};
}

// Every tensor the config implies is in the files, of a floating dtype and of the config's
// shape, and the files hold no tensor the config does not describe. Reads only the headers,
// so a lying config.json is refused before its sizes are allocated.
Status checkpoint_check_shapes(const ModelConfig& config, std::span<const SafetensorsFile> files) {
  const std::string& path = files.front().path;
  std::set<std::string> used;
  for (const TensorSlot& slot : checkpoint_slots(config, nullptr)) {
    const SafetensorsFile* owner = &files.front();
    const SafetensorsTensor* t = find_slot_tensor(config, files, slot.name, &owner);
    if (!t && slot.name == unembedding_name(config))
      return make_error(ErrorCode::corrupt, path + ": missing tensor \"" + slot.name + "\" (config.json says "
                                                   "tie_word_embeddings is false)");
    const std::string_view prefix = layer_prefix(config);
    if (!t && slot.name.compare(0, prefix.size(), prefix) == 0 && file_layer_count(config, files) < config.n_layer)
      return make_error(ErrorCode::corrupt, path + ": missing tensor \"" + slot.name + "\": config.json's n_layer is " +
                                                std::to_string(config.n_layer) + " but the weights hold " +
                                                std::to_string(file_layer_count(config, files)) + " layers");
    if (!t)
      return make_error(ErrorCode::corrupt, path + ": missing tensor \"" + slot.name + "\"" +
                                                (config.is_gpt2() && (slot.name.find("mlp") != std::string::npos ||
                                                                      slot.name.find("ln_2") != std::string::npos)
                                                     ? " (an attention-only model needs \"headlab_mlp\": false in config.json)"
                                                     : ""));
    used.insert(t->name);
    if (t->shape != slot.file_shape)
      return make_error(ErrorCode::corrupt, owner->path + ": tensor \"" + t->name + "\" has shape " + shape_string(t->shape) +
                                                ", config.json implies " + shape_string(slot.file_shape) +
                                                shape_disagreement(config, slot, t->shape));
    if (t->dtype != Dtype::F32 && t->dtype != Dtype::F16 && t->dtype != Dtype::BF16 && t->dtype != Dtype::F64)
      return make_error(ErrorCode::unsupported, owner->path + ": tensor \"" + t->name + "\" has dtype " +
                                                    std::string(dtype_name(t->dtype)) + ", not a floating type");
  }
  for (const SafetensorsFile& f : files)
    for (const SafetensorsTensor& t : f.tensors) {
      if (used.count(t.name) || is_ignorable(t.name)) continue;
      if (config.tied && (t.name == unembedding_name(config) || t.name == "transformer.lm_head.weight" ||
                          (config.multimodal_text && t.name == "language_model.lm_head.weight")))
        continue;
      if (is_vision_tensor(config, t.name)) continue;  // Gemma 3's vision tower: not loaded (checkpoint.h)
      return make_error(ErrorCode::corrupt, f.path + ": unexpected tensor \"" + t.name +
                                                "\" (config.json does not describe it: wrong n_layer, biases the family "
                                                "does not have, or MLP weights in an attention-only model?)");
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

Error out_of_memory(const ModelConfig& config, const MatrixTypes& types, const std::string& what) {
  return Error{ErrorCode::unsupported, what + ": the model needs about " + bytes_string(checkpoint_memory_bytes(config, types)) +
                                           " of memory (" + std::to_string(parameters_count(config)) + " weights" +
                                           checkpoint_types_text(config, types) +
                                           ") and this machine could not allocate it"};
}

// The type each matrix is kept in under `choice`: from the dtype of the file tensors that fill
// it (q, k and v fill c_attn); tensors of different dtypes in one matrix make it f32 under keep.
MatrixTypes matrix_types(const ModelConfig& config, std::span<const SafetensorsFile> files, DtypeChoice choice) {
  std::array<int, kNumParameterTensors> dtype;  // -1 unseen, -2 mixed, else the Dtype
  dtype.fill(-1);
  for (const TensorSlot& slot : checkpoint_slots(config, nullptr)) {
    const SafetensorsFile* owner = &files.front();
    const SafetensorsTensor* t = find_slot_tensor(config, files, slot.name, &owner);
    if (!t) continue;
    int& d = dtype[std::size_t(slot.dest.tensor)];
    d = d == -1 || d == int(t->dtype) ? int(t->dtype) : -2;
  }
  MatrixTypes types = matrix_types_all(WeightType::f32);
  for (int i = 0; i < kNumParameterTensors; i++)
    types[std::size_t(i)] = weight_type_for(choice, dtype[std::size_t(i)] >= 0 ? Dtype(dtype[std::size_t(i)]) : Dtype::F32);
  return types;
}

// Whether keeping the files' matrices as `types` rounds any of them.
bool types_round(const ModelConfig& config, std::span<const SafetensorsFile> files, const MatrixTypes& types) {
  for (const TensorSlot& slot : checkpoint_slots(config, nullptr)) {
    const SafetensorsFile* owner = &files.front();
    const SafetensorsTensor* t = find_slot_tensor(config, files, slot.name, &owner);
    if (t && parameters_is_matrix(slot.dest.tensor) && weight_type_rounds(types[std::size_t(slot.dest.tensor)], t->dtype))
      return true;
  }
  return false;
}

// The index of the first NaN or infinity in x (n), or -1: a pass that vectorises (a float is
// not finite when its exponent bits are all ones), then the search only when it found one.
std::int64_t first_nonfinite(const float* x, std::int64_t n) {
  std::uint32_t any = 0;
  for (std::int64_t i = 0; i < n; i++) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    any |= (bits & 0x7f800000u) == 0x7f800000u;
  }
  if (!any) return -1;
  for (std::int64_t i = 0; i < n; i++)
    if (!std::isfinite(x[i])) return i;
  return -1;
}

// Reads a tensor a part at a time: never more than this many floats of it beside the weights.
constexpr std::int64_t kChunkFloats = std::int64_t(1) << 20;

Result<Parameters> checkpoint_from_files(const ModelConfig& config, std::span<const SafetensorsFile> files,
                                         const LoadOptions& options) {
  if (Status s = config_validate(config); !s) return tl::unexpected(s.error());
  if (Status s = checkpoint_check_shapes(config, files); !s) return tl::unexpected(s.error());
  const std::string& path = files.front().path;
  if (options.rows && options.dtype != DtypeChoice::keep && options.dtype != DtypeChoice::f32)
    return make_error(ErrorCode::invalid_argument, "float32 rows (for training) cannot hold --dtype " +
                                                       std::string(dtype_choice_name(options.dtype)));
  const MatrixTypes types = options.rows ? matrix_types_all(WeightType::f32) : matrix_types(config, files, options.dtype);
  // The shapes are the files' now, so this is what the files hold; a machine without
  // that much memory gets a message saying how much, not an abort.
  Parameters p;
  std::vector<float> tmp, tmp2;
  try {
    p = options.rows ? parameters_allocate(config) : parameters_allocate_packed(config, types);
    tmp.reserve(std::size_t(kChunkFloats));
  } catch (const std::bad_alloc&) {
    return tl::unexpected(out_of_memory(config, types, path));
  }
  for (const TensorSlot& slot : checkpoint_slots(config, nullptr)) {
    const SafetensorsFile* owner = &files.front();
    const SafetensorsTensor* t = find_slot_tensor(config, files, slot.name, &owner);
    HEADLAB_CHECK(t != nullptr);  // checkpoint_check_shapes found every slot
    const std::int64_t n = t->numel();
    const bool whole = slot.transpose || slot.layout == Layout::neox_qkv;  // these reorder the whole tensor
    // parts of whole rows (a row is the last dimension)
    const std::int64_t cols = slot.file_shape.empty() ? 1 : slot.file_shape.back();
    const std::int64_t part = whole ? n : std::max<std::int64_t>(1, kChunkFloats / std::max<std::int64_t>(1, cols)) * cols;
    for (std::int64_t first = 0; first < n; first += part) {
      const std::int64_t count = std::min(part, n - first);
      try {
        tmp.resize(std::size_t(count));
        if (slot.layout == Layout::neox_qkv) tmp2.resize(std::size_t(count));
        if (slot.transpose)  // a band of whole output rows: at least one row of `in` floats
          tmp2.resize(std::size_t(std::min(n, std::max<std::int64_t>(slot.file_shape[0], kChunkFloats / 4))));
      } catch (const std::bad_alloc&) {
        return tl::unexpected(out_of_memory(config, types, path));
      }
      if (Status s = safetensors_to_f32_range(*owner, *t, first, count, tmp.data()); !s) return tl::unexpected(s.error());
      if (const std::int64_t i = first_nonfinite(tmp.data(), count); i >= 0)
        return make_error(ErrorCode::corrupt, owner->path + ": tensor \"" + t->name + "\" holds a non-finite value (" +
                                                  std::to_string(tmp[std::size_t(i)]) + ") at flat index " +
                                                  std::to_string(first + i));
      // values (count) into the tensor's elements from `at`, flat in its (out, in) layout
      auto write = [&](const float* values, std::int64_t at, std::int64_t count) -> Status {
        const std::int64_t bad = parameters_write(p, slot.dest.tensor, std::size_t(slot.dest.offset + at), values,
                                                  std::size_t(count));
        if (bad < 0) return {};
        return make_error(ErrorCode::unsupported,
                          owner->path + ": tensor \"" + t->name + "\" holds " + std::to_string(values[bad]) +
                              ", which " + std::string(weight_type_name(types[std::size_t(slot.dest.tensor)])) +
                              " cannot hold (f16 reaches +-65504): load it with --dtype bf16 or f32");
      };
      if (slot.transpose) {
        // Conv1D: file (in, out) -> (out, in), a band of output rows at a time (so only the file's
        // tensor and one band are in memory beside the weights), in 32 x 32 blocks that stay in cache
        const std::int64_t in = slot.file_shape[0], out = slot.file_shape[1];
        const std::int64_t band = std::max<std::int64_t>(1, std::int64_t(tmp2.size()) / std::max<std::int64_t>(1, in));
        for (std::int64_t lo = 0; lo < out; lo += band) {
          const std::int64_t hi = std::min(out, lo + band);
          for (std::int64_t i0 = 0; i0 < in; i0 += 32)
            for (std::int64_t o0 = lo; o0 < hi; o0 += 32)
              for (std::int64_t i = i0; i < std::min(in, i0 + 32); i++)
                for (std::int64_t o = o0; o < std::min(hi, o0 + 32); o++)
                  tmp2[std::size_t((o - lo) * in + i)] = tmp[std::size_t(i * out + o)];
          if (Status s = write(tmp2.data(), lo * in, (hi - lo) * in); !s) return tl::unexpected(s.error());
        }
        continue;
      }
      const float* values = tmp.data();
      if (slot.layout == Layout::neox_qkv) {
        neox_qkv_reorder(tmp2.data(), tmp.data(), config.n_head, config.head_size(),
                         slot.file_shape.size() == 2 ? slot.file_shape[1] : 1);
        values = tmp2.data();
      }
      if (Status s = write(values, first, count); !s) return tl::unexpected(s.error());
    }
  }
  p.rounded = !options.rows && types_round(config, files, types);
  parameters_set_compute(p, options.compute);
  return p;
}

}  // namespace



namespace {

// A checkpoint is a folder: a missing path and a file are told apart.
Status folder_check(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_type type = fs::status(dir, ec).type();
  if (type == fs::file_type::directory) return {};
  return make_error(ErrorCode::not_found, dir + (type == fs::file_type::not_found ? ": no such file or directory" : ": not a directory") +
                                              " (a Hugging Face model is a folder: config.json, model.safetensors)");
}

}  // namespace

Result<Parameters> checkpoint_from_safetensors(const ModelConfig& config, const SafetensorsFile& file,
                                               const LoadOptions& options) {
  return checkpoint_from_files(config, std::span<const SafetensorsFile>(&file, 1), options);
}

Result<Parameters> checkpoint_from_shards(const ModelConfig& config, const std::vector<SafetensorsFile>& shards,
                                          const LoadOptions& options) {
  if (shards.empty()) return make_error(ErrorCode::corrupt, "a sharded checkpoint without shards");
  return checkpoint_from_files(config, shards, options);
}

Result<Parameters> checkpoint_load(const std::string& dir, const LoadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (Status s = folder_check(dir); !s) return tl::unexpected(s.error());
  auto config = config_load((fs::path(dir) / "config.json").string());
  if (!config) return tl::unexpected(config.error());
  // header only: each tensor is read into its place a part at a time, so the file's bytes and
  // the weights are never both in memory
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (!fs::exists(single, ec) && fs::exists(index, ec)) {
    auto shards = safetensors_open_index(index.string());  // sharded: model-00001-of-0000N.safetensors, ...
    if (!shards) return tl::unexpected(shards.error());
    return checkpoint_from_shards(*config, *shards, options);
  }
  auto file = safetensors_open(single.string());
  if (!file) return tl::unexpected(file.error());
  return checkpoint_from_safetensors(*config, *file, options);
}


Result<CheckpointDescription> checkpoint_describe(const std::string& dir, DtypeChoice dtype) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (Status s = folder_check(dir); !s) return tl::unexpected(s.error());
  const std::string config_path = (fs::path(dir) / "config.json").string();
  auto config = config_load(config_path);
  if (!config) return tl::unexpected(config.error());
  CheckpointDescription d;
  d.config = *config;
  auto text = file_read(config_path, std::uint64_t(16) << 20);
  if (!text) return tl::unexpected(text.error());
  auto keys = config_key_uses(*text, *config);
  if (!keys) return tl::unexpected(keys.error());
  d.keys = std::move(*keys);
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::vector<SafetensorsFile> files;
  if (!fs::exists(single, ec) && fs::exists(index, ec)) {
    auto shards = safetensors_open_index(index.string());
    if (!shards) return tl::unexpected(shards.error());
    files = std::move(*shards);
  } else {
    auto file = safetensors_open(single.string());
    if (!file) return tl::unexpected(file.error());
    files.push_back(std::move(*file));
  }
  if (Status s = checkpoint_check_shapes(*config, files); !s) return tl::unexpected(s.error());
  d.memory_types = matrix_types(*config, files, dtype);
  d.memory_bytes = checkpoint_memory_bytes(*config, d.memory_types);
  d.rounds = types_round(*config, files, d.memory_types);
  // file tensor name -> the slot that reads it
  std::map<std::string, const TensorSlot*> by_file_name;
  const std::vector<TensorSlot> slots = checkpoint_slots(*config, nullptr);
  for (const TensorSlot& slot : slots) {
    const SafetensorsFile* owner = &files.front();
    if (const SafetensorsTensor* t = find_slot_tensor(*config, files, slot.name, &owner)) by_file_name[t->name] = &slot;
  }
  for (const SafetensorsFile& f : files) {
    d.files.push_back(f.path);
    for (const SafetensorsTensor& t : f.tensors) {
      TensorMapping m;
      m.name = t.name, m.file = f.path, m.dtype = t.dtype, m.shape = t.shape, m.bytes = t.end - t.begin;
      auto it = by_file_name.find(t.name);
      if (it != by_file_name.end()) {
        const TensorSlot& slot = *it->second;
        tensor_mapping_place(m, *config, slot.dest.tensor, slot.dest.offset, d.memory_types);
        m.how = slot.transpose ? "transposed (Conv1D stores (in, out))"
                : slot.layout == Layout::neox_qkv ? "reordered (GPT-NeoX fuses q, k, v per head)"
                                                  : "copied";
      } else if (is_vision_tensor(*config, t.name)) {
        m.how = "not loaded: Gemma 3's vision tower (headlab runs the text model)";
      } else if (is_ignorable(t.name)) {
        m.how = "not loaded: a buffer, not a weight (the causal mask or rotary frequencies)";
      } else {
        m.how = "not loaded: the tied unembedding (wte is used)";
      }
      d.tensors.push_back(std::move(m));
    }
  }
  return d;
}

Status checkpoint_save(const std::string& dir, const Parameters& params, Dtype dtype) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io_error, dir + ": cannot create the directory: " + ec.message());
  if (!params.config.is_gpt2())
    return make_error(ErrorCode::unsupported, dir + ": saving a " + params.config.family +
                                                  " model is not implemented (headlab saves GPT-2 checkpoints only)");
  // Each file is written beside itself (.tmp) and renamed over the old one once whole: a run
  // killed mid-write leaves the previous checkpoint, never a truncated model.safetensors beside
  // a valid-looking train_state.bin.
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const std::string weights_path = (fs::path(dir) / "model.safetensors").string();
  auto replace = [&](const std::string& tmp, const std::string& path) -> Status {
    std::error_code rename_ec;
    fs::rename(tmp, path, rename_ec);
    if (!rename_ec) return {};
    fs::remove(tmp, rename_ec);
    return make_error(ErrorCode::io_error, "cannot rename " + tmp + " to " + path + ": " + rename_ec.message());
  };
  // Each tensor read through the one accessor (a loaded model keeps its matrices packed).
  std::vector<TensorSlot> slots = checkpoint_slots(params.config, nullptr);
  std::vector<std::vector<float>> values;
  values.reserve(slots.size());
  std::vector<SafetensorsWriteTensor> out;
  std::vector<float> rows;
  for (const TensorSlot& slot : slots) {
    std::int64_t n = 1;
    for (std::int64_t d : slot.file_shape) n *= d;
    std::vector<float>& v = values.emplace_back(std::size_t(n));
    if (slot.transpose) {  // (out, in) -> Conv1D's (in, out)
      const std::int64_t in = slot.file_shape[0], o = slot.file_shape[1];
      rows.resize(std::size_t(n));
      parameters_read(params, slot.dest.tensor, std::size_t(slot.dest.offset), std::size_t(n), rows.data());
      for (std::int64_t i = 0; i < in; i++)
        for (std::int64_t j = 0; j < o; j++) v[std::size_t(i * o + j)] = rows[std::size_t(j * in + i)];
    } else {
      parameters_read(params, slot.dest.tensor, std::size_t(slot.dest.offset), std::size_t(n), v.data());
    }
    const std::string name = slot.name == "lm_head.weight" ? slot.name : "transformer." + slot.name;
    out.push_back({name, slot.file_shape, v.data()});
  }
  if (Status s = safetensors_write(weights_path + ".tmp", out, dtype, {{"format", "pt"}}); !s) {
    fs::remove(weights_path + ".tmp", ec);
    return s;
  }
  if (Status s = config_save(params.config, config_path + ".tmp"); !s) {
    fs::remove(weights_path + ".tmp", ec);
    fs::remove(config_path + ".tmp", ec);
    return s;
  }
  if (Status s = replace(weights_path + ".tmp", weights_path); !s) return s;
  return replace(config_path + ".tmp", config_path);
}

}  // namespace headlab::model
