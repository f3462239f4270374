// model/gguf/gguf_architecture.cpp — llama.cpp's architectures onto the configured block
// (see gguf_architecture.h). One table of slots per architecture names each tensor, its
// shape in ggml's order (ne = {cols, rows}) and where its rows go in headlab's parameters.
#include "model/gguf/gguf_architecture.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <new>
#include <set>

#include <sys/mman.h>
#include <unistd.h>

#include "model/checkpoint.h"
#include "model/gguf/gguf_dequantize.h"
#include "util/check.h"

namespace headlab::model::gguf {

namespace {

using P = ParameterTensors;

// rope_pairs: llama's q and k rows, permuted by llama.cpp's converter within each of `heads`
// heads from Hugging Face's halves order (channel j*HS/2 + i) to pairs (channel 2i + j).
enum class Layout { copy, rope_pairs };

struct Slot {
  std::string name;
  std::vector<std::int64_t> ne;  // ggml order: {cols} or {cols, rows}
  float* P::*tensor;
  std::int64_t offset;  // floats into the tensor
  Layout layout = Layout::copy;
  int heads = 0;        // rope_pairs: heads in the tensor's rows
};

bool llama_permuted(const ModelConfig& c) { return c.family == "llama"; }

std::vector<Slot> slots_for(const ModelConfig& c) {
  const std::int64_t C = c.n_embd, V = c.vocab_size, QKV = c.qkv_width(), D = c.q_width(), F = c.mlp_width();
  const std::int64_t FC = c.fc_width(), HS = c.head_size(), KVD = std::int64_t(c.kv_heads()) * HS;
  const bool layernorm = c.norm == ModelConfig::Norm::layernorm;
  std::vector<Slot> s;
  s.push_back({"token_embd.weight", {C, V}, &P::wte, 0});
  if (c.positions == ModelConfig::Positions::learned) s.push_back({"position_embd.weight", {C, c.n_ctx}, &P::wpe, 0});
  for (std::int64_t l = 0; l < c.n_layer; l++) {
    const std::string b = "blk." + std::to_string(l) + ".";
    s.push_back({b + "attn_norm.weight", {C}, &P::ln1w, l * C});
    if (layernorm) s.push_back({b + "attn_norm.bias", {C}, &P::ln1b, l * C});
    if (c.is_gpt2() || c.family == "gpt_neox") {
      s.push_back({b + "attn_qkv.weight", {C, QKV}, &P::qkvw, l * QKV * C});
      if (c.qkv_bias) s.push_back({b + "attn_qkv.bias", {QKV}, &P::qkvb, l * QKV});
    } else {
      const Layout rope = llama_permuted(c) ? Layout::rope_pairs : Layout::copy;
      s.push_back({b + "attn_q.weight", {C, D}, &P::qkvw, l * QKV * C, rope, c.n_head});
      s.push_back({b + "attn_k.weight", {C, KVD}, &P::qkvw, l * QKV * C + D * C, rope, c.kv_heads()});
      s.push_back({b + "attn_v.weight", {C, KVD}, &P::qkvw, l * QKV * C + (D + KVD) * C});
      if (c.qkv_bias) {
        s.push_back({b + "attn_q.bias", {D}, &P::qkvb, l * QKV, rope, c.n_head});
        s.push_back({b + "attn_k.bias", {KVD}, &P::qkvb, l * QKV + D, rope, c.kv_heads()});
        s.push_back({b + "attn_v.bias", {KVD}, &P::qkvb, l * QKV + D + KVD});
      }
    }
    s.push_back({b + "attn_output.weight", {D, C}, &P::attprojw, l * C * D});
    if (c.attn_out_bias) s.push_back({b + "attn_output.bias", {C}, &P::attprojb, l * C});
    if (!c.mlp) continue;
    s.push_back({b + "ffn_norm.weight", {C}, &P::ln2w, l * C});
    if (layernorm) s.push_back({b + "ffn_norm.bias", {C}, &P::ln2b, l * C});
    if (c.mlp_kind == ModelConfig::Mlp::swiglu) {
      s.push_back({b + "ffn_gate.weight", {C, F}, &P::fcw, l * FC * C});
      s.push_back({b + "ffn_up.weight", {C, F}, &P::fcw, l * FC * C + F * C});
      if (c.mlp_bias) {
        s.push_back({b + "ffn_gate.bias", {F}, &P::fcb, l * FC});
        s.push_back({b + "ffn_up.bias", {F}, &P::fcb, l * FC + F});
      }
    } else {
      s.push_back({b + "ffn_up.weight", {C, F}, &P::fcw, l * F * C});
      if (c.mlp_bias) s.push_back({b + "ffn_up.bias", {F}, &P::fcb, l * F});
    }
    s.push_back({b + "ffn_down.weight", {F, C}, &P::fcprojw, l * C * F});
    if (c.mlp_bias) s.push_back({b + "ffn_down.bias", {C}, &P::fcprojb, l * C});
  }
  s.push_back({"output_norm.weight", {C}, &P::lnfw, 0});
  if (layernorm) s.push_back({"output_norm.bias", {C}, &P::lnfb, 0});
  if (!c.tied) s.push_back({"output.weight", {C, V}, &P::lm_head, 0});
  return s;
}

// rows (heads * HS) of `width` values: from llama.cpp's pair order to HF's halves order
// (to_halves) or back.   file row h*HS + 2i + j  <->  HF row h*HS + j*HS/2 + i
void rope_rows(float* out, const float* in, int heads, std::int64_t HS, std::int64_t width, bool to_halves) {
  for (std::int64_t h = 0; h < heads; h++)
    for (std::int64_t i = 0; i < HS / 2; i++)
      for (std::int64_t j = 0; j < 2; j++) {
        const std::int64_t pair = h * HS + 2 * i + j, half = h * HS + j * (HS / 2) + i;
        const float* from = in + (to_halves ? pair : half) * width;
        std::copy(from, from + width, out + (to_halves ? half : pair) * width);
      }
}

std::string shape_string(const std::vector<std::int64_t>& ne) {
  std::string out = "{";
  for (std::size_t i = 0; i < ne.size(); i++) out += (i ? ", " : "") + std::to_string(ne[i]);
  return out + "}";
}

// The keys of "<arch>.*" each architecture reads (honoured, or checked to change nothing).
const std::set<std::string>& known_keys(const std::string& arch) {
  static const std::set<std::string> common = {
      "context_length", "embedding_length", "block_count", "feed_forward_length", "attention.head_count",
      "attention.head_count_kv", "vocab_size"};
  static const std::set<std::string> gpt2 = [] {
    auto k = common;
    k.insert("attention.layer_norm_epsilon");
    return k;
  }();
  static const std::set<std::string> neox = [] {
    auto k = common;
    k.insert({"attention.layer_norm_epsilon", "rope.dimension_count", "rope.freq_base", "use_parallel_residual"});
    return k;
  }();
  static const std::set<std::string> llama = [] {
    auto k = common;
    k.insert({"attention.layer_norm_rms_epsilon", "rope.dimension_count", "rope.freq_base", "attention.key_length",
              "attention.value_length", "rope.scaling.type", "rope.scaling.factor", "rope.scaling.original_context_length",
              "rope.scaling.finetuned", "expert_count", "expert_used_count", "tensor_data_layout",
              "attention.sliding_window"});
    return k;
  }();
  if (arch == "gpt2") return gpt2;
  if (arch == "gptneox") return neox;
  return llama;
}

}  // namespace

std::string architecture_of(const ModelConfig& c) {
  if (c.is_gpt2()) return "gpt2";
  if (c.family == "gpt_neox") return "gptneox";
  if (c.family == "llama" || c.family == "qwen2") return c.family;
  return {};
}

Result<ModelConfig> config_from_file(const File& f) {
  const std::string& path = f.path;
  auto corrupt = [&](const std::string& m) { return make_error(ErrorCode::corrupt, path + ": " + m); };
  auto unsupported = [&](const std::string& m) { return make_error(ErrorCode::unsupported, path + ": " + m); };
  const Value* arch_value = f.find("general.architecture");
  if (!arch_value || arch_value->type != ValueType::string)
    return corrupt("general.architecture is missing or not a string");
  const std::string arch = arch_value->text;
  if (arch == "qwen3" || arch == "gemma2" || arch == "gemma3" || arch == "gemma")
    return unsupported("architecture \"" + arch + "\" is not supported yet: its block (q/k norm, soft-capping, "
                       "Gemma's norms) is not in headlab's ModelConfig; supported: gpt2, gptneox, llama, qwen2");
  if (arch != "gpt2" && arch != "gptneox" && arch != "llama" && arch != "qwen2")
    return unsupported("architecture \"" + arch + "\" is not supported (gpt2, gptneox, llama, qwen2)");

  // every "<arch>.*" key must be one the architecture reads: none is silently ignored
  const std::string prefix = arch + ".";
  const auto& known = known_keys(arch);
  for (const auto& [key, value] : f.metadata)
    if (key.compare(0, prefix.size(), prefix) == 0 && !known.count(key.substr(prefix.size())))
      return unsupported("metadata \"" + key + "\" is not supported (headlab does not implement what it changes)");

  std::string bad;
  auto int_key = [&](const std::string& k, int& field, bool required) {
    const Value* v = f.find(prefix + k);
    if (!v) {
      if (required && bad.empty()) bad = prefix + k + " is missing";
      return;
    }
    const auto n = v->as_int();
    if (!n || *n < 0 || *n > 0x7fffffff) {
      if (bad.empty()) bad = prefix + k + " must be a whole number that fits in 32 bits (it is a " +
                             std::string(value_type_name(v->type)) + ")";
      return;
    }
    field = int(*n);
  };
  auto float_key = [&](const std::string& k, float& field) {
    const Value* v = f.find(prefix + k);
    if (!v) return;
    const auto x = v->as_number();
    if (!x || !std::isfinite(*x) || *x <= 0) {
      if (bad.empty()) bad = prefix + k + " must be a positive number";
      return;
    }
    field = float(*x);
  };
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd) return corrupt("missing tensor \"token_embd.weight\"");
  if (embd->ne.size() != 2) return corrupt("tensor \"token_embd.weight\" has shape " + shape_string(embd->ne) + ", not a matrix");
  if (embd->ne[1] > 0x7fffffff) return corrupt("tensor \"token_embd.weight\" has more rows than 32 bits can count");

  ModelConfig c;
  c.bos_token_id = c.eos_token_id = 0;
  c.vocab_size = int(embd->ne[1]);
  int_key("block_count", c.n_layer, true);
  int_key("embedding_length", c.n_embd, true);
  int_key("attention.head_count", c.n_head, true);
  int_key("context_length", c.n_ctx, true);
  int ff = 0, kv_heads = 0, vocab = c.vocab_size;
  int_key("feed_forward_length", ff, true);
  int_key("attention.head_count_kv", kv_heads, false);
  int_key("vocab_size", vocab, false);
  if (bad.empty() && vocab != c.vocab_size)
    bad = prefix + "vocab_size is " + std::to_string(vocab) + " but token_embd.weight has " + std::to_string(c.vocab_size) + " rows";
  c.tied = f.find_tensor("output.weight") == nullptr;
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"}) {
    const Value* v = f.find(key);
    if (!v) continue;
    const auto n = v->as_int();
    if (!n || *n < 0 || *n > 0x7fffffff) return corrupt(std::string(key) + " is not a token id");
    (std::string(key).find("bos") != std::string::npos ? c.bos_token_id : c.eos_token_id) = int(*n);
  }
  // a bias is in the model when layer 0 has it
  auto has_bias = [&](const char* tensor) { return f.find_tensor(std::string("blk.0.") + tensor + ".bias") != nullptr; };

  if (arch == "gpt2") {
    c.family = "gpt2";
    float_key("attention.layer_norm_epsilon", c.layer_norm_eps);
    if (bad.empty() && ff != 4 * c.n_embd)
      return unsupported(prefix + "feed_forward_length is " + std::to_string(ff) + "; headlab's GPT-2 block has 4 * " +
                         "embedding_length (" + std::to_string(4 * c.n_embd) + ")");
    if (bad.empty() && kv_heads != 0 && kv_heads != c.n_head)
      return unsupported(prefix + "attention.head_count_kv differs from head_count (GPT-2 has multi-head attention)");
  } else if (arch == "gptneox") {
    c.family = "gpt_neox";
    c.positions = ModelConfig::Positions::rotary;
    c.norm = ModelConfig::Norm::layernorm;
    c.mlp_kind = ModelConfig::Mlp::gelu_erf;  // Pythia's hidden_act "gelu" (llama.cpp computes the tanh form)
    c.d_mlp = ff;
    c.parallel_residual = true;
    if (const Value* v = f.find(prefix + "use_parallel_residual")) {
      if (!v->as_bool()) return corrupt(prefix + "use_parallel_residual is not a bool");
      c.parallel_residual = *v->as_bool();
    }
    float_key("attention.layer_norm_epsilon", c.layer_norm_eps);
    float_key("rope.freq_base", c.rope_theta);
    int_key("rope.dimension_count", c.rotary_dim, true);
    c.qkv_bias = has_bias("attn_qkv");
    c.attn_out_bias = has_bias("attn_output");
    c.mlp_bias = has_bias("ffn_up");
  } else {  // llama, qwen2
    c.family = arch;
    c.positions = ModelConfig::Positions::rotary;
    c.norm = ModelConfig::Norm::rmsnorm;
    c.mlp_kind = ModelConfig::Mlp::swiglu;
    c.d_mlp = ff;
    c.n_kv_head = kv_heads;
    c.layer_norm_eps = 1e-5f;
    float_key("attention.layer_norm_rms_epsilon", c.layer_norm_eps);
    float_key("rope.freq_base", c.rope_theta);
    int key_length = 0, value_length = 0, rope_dims = 0, experts = 0, used = 0;
    int_key("attention.key_length", key_length, false);
    int_key("attention.value_length", value_length, false);
    int_key("rope.dimension_count", rope_dims, false);
    int_key("expert_count", experts, false);
    int_key("expert_used_count", used, false);
    int_key("attention.sliding_window", c.sliding_window, false);
    if (bad.empty()) {
      if (experts > 0 || used > 0) return unsupported(prefix + "expert_count: mixture-of-experts blocks are not supported");
      if (key_length != value_length)
        return unsupported(prefix + "attention.key_length and value_length differ (headlab's heads have one size)");
      c.head_dim = key_length;
      const int hs = c.head_size();
      if (rope_dims != 0 && rope_dims != hs)
        return unsupported(prefix + "rope.dimension_count is " + std::to_string(rope_dims) + ", not the head size " +
                           std::to_string(hs) + " (partial rotary is not supported for " + arch + ")");
    }
    if (const Value* v = f.find(prefix + "rope.scaling.type")) {
      const std::string kind = v->type == ValueType::string ? v->text : "";
      if (kind == "linear") {
        float factor = 1.0f;
        float_key("rope.scaling.factor", factor);
        if (factor < 1.0f) return unsupported(prefix + "rope.scaling.factor below 1 is not supported");
        c.rope_linear_factor = factor;
      } else if (kind != "none") {
        return unsupported(prefix + "rope.scaling.type \"" + kind + "\" is not supported (none, linear)");
      }
    }
    if (f.find_tensor("rope_freqs.weight"))
      return unsupported("tensor \"rope_freqs.weight\" (Llama 3's rope scaling factors) is not supported");
    c.qkv_bias = has_bias("attn_q");
    c.attn_out_bias = has_bias("attn_output");
    c.mlp_bias = has_bias("ffn_up");
  }
  if (!bad.empty()) return corrupt(bad);
  // sizes a lying file could make overflow the shapes' arithmetic: each block has tensors in
  // the file, the embedding width is token_embd's, and no width goes past 2^24
  if (std::uint64_t(c.n_layer) > f.tensors.size())
    return corrupt(prefix + "block_count is " + std::to_string(c.n_layer) + " but the file holds only " +
                   std::to_string(f.tensors.size()) + " tensors");
  if (c.n_embd != embd->ne[0])
    return corrupt(prefix + "embedding_length is " + std::to_string(c.n_embd) + " but token_embd.weight has rows of " +
                   std::to_string(embd->ne[0]));
  constexpr int kMaxWidth = 1 << 24;
  for (auto [name, v] : {std::pair{"attention.head_count", c.n_head}, {"attention.head_count_kv", c.n_kv_head},
                         {"attention.key_length", c.head_dim}, {"feed_forward_length", c.d_mlp},
                         {"context_length", c.n_ctx}, {"rope.dimension_count", c.rotary_dim}})
    if (v > kMaxWidth) return unsupported(prefix + name + " is " + std::to_string(v) + ", more than headlab handles (2^24)");
  if (std::int64_t(c.head_size()) * (std::int64_t(c.n_head) + 2 * c.kv_heads()) > kMaxWidth)
    return unsupported("the attention's q, k and v rows ((head_count + 2 * head_count_kv) * head size) pass 2^24");
  if (Status s = config_validate(c); !s) return make_error(ErrorCode::invalid_argument, path + ": " + s.error().message);
  return c;
}

namespace {
// Once a tensor is in the weights, the pages of the mapped file that hold only it are given
// back (a private read-only mapping: they would be read from the file again if touched), so the
// file's bytes and the weights are never both resident. Only for a file file_open mapped.
void release_pages(const File& f, const TensorInfo& t) {
  if (!f.owner) return;
  const std::uintptr_t page = std::uintptr_t(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(f.tensor_data(t));
  const std::uintptr_t first = (begin + page - 1) / page * page, last = (begin + t.bytes) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

// The dtype a tensor type is kept in under --dtype auto: F32, F16 and BF16 as they are;
// the quantized types dequantize to float32.
Dtype kept_dtype(TensorType t) {
  return t == TensorType::f16 ? Dtype::F16 : t == TensorType::bf16 ? Dtype::BF16 : Dtype::F32;
}
}  // namespace

Result<Parameters> parameters_from_file(const File& f, const LoadOptions& options) {
  auto config = config_from_file(f);
  if (!config) return tl::unexpected(config.error());
  const ModelConfig& c = *config;
  const std::vector<Slot> slots = slots_for(c);
  // every tensor is where the config says, of its shape, before anything is allocated
  std::set<std::string> used;
  for (const Slot& s : slots) {
    const TensorInfo* t = f.find_tensor(s.name);
    if (!t) return make_error(ErrorCode::corrupt, f.path + ": missing tensor \"" + s.name + "\"");
    if (t->ne != s.ne)
      return make_error(ErrorCode::corrupt, f.path + ": tensor \"" + s.name + "\" has shape " + shape_string(t->ne) +
                                                ", the metadata implies " + shape_string(s.ne));
    used.insert(s.name);
  }
  for (const TensorInfo& t : f.tensors)
    if (!used.count(t.name))
      return make_error(ErrorCode::corrupt, f.path + ": tensor \"" + t.name + "\" is not a weight of the " +
                                                architecture_of(c) + " model the metadata describes");
  if (options.rows && options.dtype != DtypeChoice::keep && options.dtype != DtypeChoice::f32)
    return make_error(ErrorCode::invalid_argument, "float32 rows (for training) cannot hold --dtype " +
                                                       std::string(dtype_choice_name(options.dtype)));
  // each matrix's type: its tensors' (q, k and v fill c_attn), f32 when they differ
  std::array<int, kNumParameterTensors> kept;
  kept.fill(-1);
  for (const Slot& s : slots) {
    int& k = kept[std::size_t(parameters_index(s.tensor))];
    const int d = int(kept_dtype(f.find_tensor(s.name)->type));
    k = k == -1 || k == d ? d : int(Dtype::F32);
  }
  MatrixTypes types = matrix_types_all(WeightType::f32);
  for (int i = 0; i < kNumParameterTensors && !options.rows; i++)
    types[std::size_t(i)] = weight_type_for(options.dtype, kept[std::size_t(i)] >= 0 ? Dtype(kept[std::size_t(i)]) : Dtype::F32);
  Parameters p;
  try {
    p = options.rows ? parameters_allocate(c) : parameters_allocate_packed(c, types);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::unsupported, f.path + ": the model needs about " +
                                                  std::to_string(checkpoint_memory_bytes(c, types) / (1 << 20)) + " MiB (" +
                                                  std::to_string(parameters_count(c)) + " weights" +
                                                  checkpoint_types_text(c, types) + "), more than this machine can allocate");
  }
  for (const Slot& s : slots)  // keeping a tensor narrower than its values rounds it (--dtype bf16 / f16)
    p.rounded = p.rounded || weight_type_rounds(types[std::size_t(parameters_index(s.tensor))],
                                                kept_dtype(f.find_tensor(s.name)->type));
  std::vector<float> tmp, tmp2;
  constexpr std::int64_t kChunkFloats = std::int64_t(1) << 20;  // a part of a tensor at a time
  for (const Slot& s : slots) {
    const TensorInfo& t = *f.find_tensor(s.name);
    const int index = parameters_index(s.tensor);
    const std::int64_t n = t.elements(), cols = t.cols();
    const bool whole = s.layout == Layout::rope_pairs;  // reorders rows across the tensor
    const std::int64_t part = whole ? n : std::max<std::int64_t>(1, kChunkFloats / std::max<std::int64_t>(1, cols)) * cols;
    const std::uint64_t row_bytes = t.rows() > 0 ? t.bytes / std::uint64_t(t.rows()) : 0;
    for (std::int64_t first = 0; first < n; first += part) {
      const std::int64_t count = std::min(part, n - first);
      try {
        tmp.resize(std::size_t(count));
        if (whole) tmp2.resize(std::size_t(count));
      } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::unsupported, f.path + ": not enough memory to read tensor \"" + s.name + "\"");
      }
      dequantize(t.type, f.tensor_data(t) + std::uint64_t(first / cols) * row_bytes, count, tmp.data());
      for (std::int64_t i = 0; i < count; i++)
        if (!std::isfinite(tmp[std::size_t(i)]))
          return make_error(ErrorCode::corrupt, f.path + ": tensor \"" + s.name + "\" holds a non-finite value at flat index " +
                                                    std::to_string(first + i));
      const float* values = tmp.data();
      if (whole) {
        rope_rows(tmp2.data(), tmp.data(), s.heads, c.head_size(), s.ne.size() == 2 ? s.ne[0] : 1, true);
        values = tmp2.data();
      }
      const std::int64_t bad = parameters_write(p, index, std::size_t(s.offset + first), values, std::size_t(count));
      if (bad >= 0)
        return make_error(ErrorCode::unsupported, f.path + ": tensor \"" + s.name + "\" holds " + std::to_string(values[bad]) +
                                                      ", which " + std::string(weight_type_name(types[std::size_t(index)])) +
                                                      " cannot hold (f16 reaches +-65504): load it with --dtype bf16 or f32");
    }
    release_pages(f, t);
  }
  return p;
}

Result<Parameters> parameters_load(const std::string& path, const LoadOptions& options) {
  auto file = file_open(path);
  if (!file) return tl::unexpected(file.error());
  return parameters_from_file(*file, options);
}

Result<std::vector<NamedTensor>> tensors_for_file(const Parameters& params) {
  const ModelConfig& c = params.config;
  if (architecture_of(c).empty())
    return make_error(ErrorCode::unsupported, "a " + c.family + " model has no llama.cpp architecture headlab writes");
  if (!c.mlp) return make_error(ErrorCode::unsupported, "an attention-only model has no llama.cpp architecture (its blocks need an MLP)");
  if (c.is_gpt2() && (!c.scale_attn_weights || c.scale_attn_by_inverse_layer_idx))
    return make_error(ErrorCode::unsupported, "llama.cpp's gpt2 scales the scores by 1/sqrt(HS) only; this model's "
                                              "scale_attn_weights / scale_attn_by_inverse_layer_idx differ");
  if (c.positions == ModelConfig::Positions::rotary && c.rotary_interleaved)
    return make_error(ErrorCode::unsupported, "rotary pairs (2i, 2i+1) are not written (llama.cpp's " + architecture_of(c) +
                                                  " reads Hugging Face's halves order)");
  std::vector<NamedTensor> out;
  for (const Slot& s : slots_for(c)) {
    std::int64_t n = 1;
    for (std::int64_t d : s.ne) n *= d;
    // read through the one accessor: a loaded model keeps its matrices packed (parameters.h)
    std::vector<float> src(static_cast<std::size_t>(n));
    parameters_read(params, parameters_index(s.tensor), std::size_t(s.offset), std::size_t(n), src.data());
    NamedTensor t{s.name, s.ne, src};
    if (s.layout == Layout::rope_pairs) rope_rows(t.values.data(), src.data(), s.heads, c.head_size(), s.ne.size() == 2 ? s.ne[0] : 1, false);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace headlab::model::gguf
