// formats/gguf/gguf_architecture.cpp — llama.cpp's architectures onto the configured block
// (see gguf_architecture.h). One table of slots names each tensor of a config, its shape in
// ggml's order (ne = {cols, rows}) and where its rows go in headlab's parameters; the reader
// sets the config from the keys, the writer writes the keys and reads them back through the
// same reader, so a file never says less than the model does.
#include "formats/gguf/gguf_architecture.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <new>
#include <set>
#include <tuple>

#include <sys/mman.h>
#include <unistd.h>

#include "model/forward.h"
#include "formats/gguf/gguf_dequantize.h"
#include "model/ops/rope.h"
#include "model/packed_weights.h"
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
  float shift = 0.0f;   // the file holds headlab's value + shift (Gemma's norms: 1 + w)
};

const std::set<std::string> kArchitectures = {"gpt2", "gptneox", "llama", "qwen2", "qwen3", "gemma2", "gemma3"};

bool is_gemma(const std::string& arch) { return arch == "gemma2" || arch == "gemma3"; }

std::vector<Slot> slots_for(const ModelConfig& c) {
  const std::string arch = architecture_of(c);
  const std::int64_t C = c.n_embd, V = c.vocab_size, QKV = c.qkv_width(), D = c.q_width(), F = c.mlp_width();
  const std::int64_t FC = c.fc_width(), HS = c.head_size(), KVD = std::int64_t(c.kv_heads()) * HS;
  const bool layernorm = c.norm == ModelConfig::Norm::layernorm;
  const float shift = c.norm_plus_one ? 1.0f : 0.0f;  // Gemma's converter adds 1 to every norm weight
  std::vector<Slot> s;
  auto norm = [&](std::string name, std::int64_t n, float* P::*tensor, std::int64_t offset) {
    s.push_back({std::move(name), {n}, tensor, offset, Layout::copy, 0, shift});
  };
  s.push_back({"token_embd.weight", {C, V}, &P::wte, 0});
  if (c.positions == ModelConfig::Positions::learned) s.push_back({"position_embd.weight", {C, c.n_ctx}, &P::wpe, 0});
  for (std::int64_t l = 0; l < c.n_layer; l++) {
    const std::string b = "blk." + std::to_string(l) + ".";
    norm(b + "attn_norm.weight", C, &P::ln1w, l * C);
    if (layernorm) s.push_back({b + "attn_norm.bias", {C}, &P::ln1b, l * C});
    if (c.is_gpt2() || c.family == "gpt_neox") {
      s.push_back({b + "attn_qkv.weight", {C, QKV}, &P::qkvw, l * QKV * C});
      if (c.qkv_bias) s.push_back({b + "attn_qkv.bias", {QKV}, &P::qkvb, l * QKV});
    } else {
      const Layout rope = arch == "llama" ? Layout::rope_pairs : Layout::copy;
      s.push_back({b + "attn_q.weight", {C, D}, &P::qkvw, l * QKV * C, rope, c.n_head});
      s.push_back({b + "attn_k.weight", {C, KVD}, &P::qkvw, l * QKV * C + D * C, rope, c.kv_heads()});
      s.push_back({b + "attn_v.weight", {C, KVD}, &P::qkvw, l * QKV * C + (D + KVD) * C});
      if (c.qkv_bias) {
        s.push_back({b + "attn_q.bias", {D}, &P::qkvb, l * QKV, rope, c.n_head});
        s.push_back({b + "attn_k.bias", {KVD}, &P::qkvb, l * QKV + D, rope, c.kv_heads()});
        s.push_back({b + "attn_v.bias", {KVD}, &P::qkvb, l * QKV + D + KVD});
      }
    }
    if (c.qk_norm) {  // one (HS) weight shared by the heads, before the rotary
      norm(b + "attn_q_norm.weight", HS, &P::qnormw, l * HS);
      norm(b + "attn_k_norm.weight", HS, &P::knormw, l * HS);
    }
    s.push_back({b + "attn_output.weight", {D, C}, &P::attprojw, l * C * D});
    if (c.attn_out_bias) s.push_back({b + "attn_output.bias", {C}, &P::attprojb, l * C});
    if (c.sandwich_norm) norm(b + "post_attention_norm.weight", C, &P::postattnw, l * C);
    if (!c.mlp) continue;
    norm(b + "ffn_norm.weight", C, &P::ln2w, l * C);
    if (layernorm) s.push_back({b + "ffn_norm.bias", {C}, &P::ln2b, l * C});
    if (c.gated()) {  // c_fc holds [gate; up]
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
    if (c.sandwich_norm) norm(b + "post_ffw_norm.weight", C, &P::postmlpw, l * C);
  }
  norm("output_norm.weight", C, &P::lnfw, 0);
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

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
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
  static const std::set<std::string> gemma2 = [] {
    auto k = llama;
    k.insert({"attn_logit_softcapping", "final_logit_softcapping", "attention.sliding_window_pattern", "rope.freq_base_swa"});
    return k;
  }();
  static const std::set<std::string> gemma3 = [] {
    auto k = llama;  // no attn_logit_softcapping: llama.cpp's gemma3 does not cap the scores
    k.insert({"final_logit_softcapping", "attention.sliding_window_pattern", "rope.freq_base_swa"});
    return k;
  }();
  if (arch == "gpt2") return gpt2;
  if (arch == "gptneox") return neox;
  if (arch == "gemma2") return gemma2;
  if (arch == "gemma3") return gemma3;
  return llama;
}

// The sliding layers of llama.cpp's swa pattern n (llama_hparams::set_swa_pattern): layer l
// slides when l % n < n - 1 (n = 0: every layer).
std::vector<unsigned char> swa_layers(int n_layer, std::int64_t n) {
  std::vector<unsigned char> out(std::size_t(std::max(n_layer, 0)));
  for (int l = 0; l < n_layer; l++) out[std::size_t(l)] = n == 0 || (l % n < n - 1);
  return out;
}

// Gemma's score scale as llama.cpp sets it: 1/sqrt(HS), except for the 27B models (46 layers
// of Gemma 2, 62 of Gemma 3), whose query_pre_attn_scalar is C / NH.
float gemma_query_pre_attn_scalar(const std::string& arch, const ModelConfig& c) {
  const bool big = (arch == "gemma2" && c.n_layer == 46) || (arch == "gemma3" && c.n_layer == 62);
  return float(big && c.n_head > 0 ? c.n_embd / c.n_head : c.head_size());
}

}  // namespace

std::string architecture_of(const ModelConfig& c) {
  if (c.is_gpt2()) return "gpt2";
  if (c.family == "gpt_neox") return "gptneox";
  if (c.family == "llama" || c.family == "mistral") return "llama";  // llama.cpp converts Mistral as llama
  if (c.family == "qwen2" || c.family == "qwen3" || c.family == "gemma2" || c.family == "gemma3") return c.family;
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
  if (!kArchitectures.count(arch))
    return unsupported("architecture \"" + arch + "\" is not supported (gpt2, gptneox, llama, qwen2, qwen3, gemma2, gemma3)");

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
      return false;
    }
    const auto n = v->as_int();
    if (!n || *n < 0 || *n > 0x7fffffff) {
      if (bad.empty()) bad = prefix + k + " must be a whole number that fits in 32 bits (it is a " +
                             std::string(value_type_name(v->type)) + ")";
      return false;
    }
    field = int(*n);
    return true;
  };
  auto float_key = [&](const std::string& k, float& field) {
    const Value* v = f.find(prefix + k);
    if (!v) return false;
    const auto x = v->as_number();
    if (!x || !std::isfinite(*x) || *x <= 0) {
      if (bad.empty()) bad = prefix + k + " must be a positive number";
      return false;
    }
    field = float(*x);
    return true;
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
    if (bad.empty() && std::int64_t(ff) != 4 * std::int64_t(c.n_embd))  // 64 bits: embedding_length may be near 2^31
      return unsupported(prefix + "feed_forward_length is " + std::to_string(ff) + "; headlab's GPT-2 block has 4 * " +
                         "embedding_length (" + std::to_string(4 * std::int64_t(c.n_embd)) + ")");
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
  } else {  // llama, qwen2, qwen3, gemma2, gemma3: RMSNorm, rotary on every channel of a head
    const bool gemma = is_gemma(arch);
    c.family = arch;
    c.positions = ModelConfig::Positions::rotary;
    c.norm = ModelConfig::Norm::rmsnorm;
    c.mlp_kind = gemma ? ModelConfig::Mlp::geglu : ModelConfig::Mlp::swiglu;
    c.d_mlp = ff;
    c.n_kv_head = kv_heads;
    c.layer_norm_eps = 1e-5f;
    float_key("attention.layer_norm_rms_epsilon", c.layer_norm_eps);
    float_key("rope.freq_base", c.rope_theta);
    int key_length = 0, value_length = 0, rope_dims = 0, experts = 0, used = 0, window = 0;
    int_key("attention.key_length", key_length, false);
    int_key("attention.value_length", value_length, false);
    int_key("rope.dimension_count", rope_dims, false);
    int_key("expert_count", experts, false);
    int_key("expert_used_count", used, false);
    const bool has_window = int_key("attention.sliding_window", window, false);
    if (bad.empty()) {
      if (experts > 0 || used > 0) return unsupported(prefix + "expert_count: mixture-of-experts blocks are not supported");
      if (key_length != value_length)
        return unsupported(prefix + "attention.key_length and value_length differ (headlab's heads have one size)");
      c.head_dim = key_length;
      const int hs = c.head_size();
      if (rope_dims != 0 && rope_dims != hs)
        return unsupported(prefix + "rope.dimension_count is " + std::to_string(rope_dims) + ", not the head size " +
                           std::to_string(hs) + " (partial rotary is not supported for " + arch + ")");
      if (arch == "qwen2" && c.n_head > 0 && std::int64_t(hs) * c.n_head != c.n_embd)
        return unsupported(prefix + "attention.key_length times head_count is not embedding_length: llama.cpp's qwen2 "
                                    "projects q to embedding_length channels");
    }
    // rope scaling: llama.cpp reads rope.scaling.factor as linear unless the type says otherwise
    std::string kind = "linear";
    if (const Value* v = f.find(prefix + "rope.scaling.type")) {
      if (v->type != ValueType::string) return corrupt(prefix + "rope.scaling.type is not a string");
      kind = v->text;
    }
    float factor = 1.0f;
    const bool has_factor = float_key("rope.scaling.factor", factor);
    if (kind == "linear") {
      if (factor < 1.0f) return unsupported(prefix + "rope.scaling.factor below 1 is not supported");
      c.rope_linear_factor = factor;
    } else if (kind == "none") {
      if (has_factor && factor != 1.0f)
        return unsupported(prefix + "rope.scaling.factor " + num(factor) + " with rope.scaling.type \"none\" "
                           "(llama.cpp scales Gemma 2's sliding layers by it and no other): not supported");
    } else {
      return unsupported(prefix + "rope.scaling.type \"" + kind + "\" is not supported (none, linear)");
    }
    c.qkv_bias = has_bias("attn_q");
    // the biases each graph adds: llama has them all; the others q, k and v only, so an
    // attn_output or ffn bias in their file is a tensor no weight reads (refused below)
    c.attn_out_bias = arch == "llama" && has_bias("attn_output");
    c.mlp_bias = arch == "llama" && has_bias("ffn_up");
    c.qk_norm = arch == "qwen3" || arch == "gemma3";
    if (arch == "llama" || arch == "qwen2" || arch == "qwen3") {
      // llama.cpp's llama, qwen2 and qwen3 attend to every key whatever the file says: a
      // window here would mean one thing to llama.cpp and another to a reader of the key
      if (window > 0)
        return unsupported(prefix + "attention.sliding_window is " + std::to_string(window) + ", but llama.cpp's " +
                           arch + " applies no sliding window (every query sees every key): headlab refuses the file "
                           "rather than guess which was meant");
    }
    if (arch == "llama") {
      if (const TensorInfo* t = f.find_tensor("rope_freqs.weight")) {
        // Llama 3's rope scaling as llama.cpp stores it: frequency i is divided by value i
        const std::int64_t half = c.head_size() / 2;
        if (t->ne != std::vector<std::int64_t>{half})
          return corrupt("tensor \"rope_freqs.weight\" has shape " + shape_string(t->ne) + ", the head size implies {" +
                         std::to_string(half) + "}");
        if (half > (1 << 20)) return corrupt("tensor \"rope_freqs.weight\" is implausibly large");
        c.rope_freq_factors.resize(std::size_t(half));
        dequantize(t->type, f.tensor_data(*t), half, c.rope_freq_factors.data());
        for (float x : c.rope_freq_factors)
          if (!(x > 0.0f) || !std::isfinite(x))
            return corrupt("tensor \"rope_freqs.weight\" holds " + num(x) + ": each frequency's divisor must be a "
                           "positive number");
      }
    }
    if (gemma) {
      // Gemma: (1 + w) norms (the file holds 1 + w), norms after attention and MLP, x * sqrt(C)
      c.norm_plus_one = c.sandwich_norm = c.embed_scale = true;
      if (arch == "gemma2") c.tied = true;  // llama.cpp's gemma2 unembeds with token_embd (an output.weight is refused)
      c.query_pre_attn_scalar = gemma_query_pre_attn_scalar(arch, c);
      if (arch == "gemma2") {
        c.attn_softcap = 50.0f, c.final_softcap = 30.0f;  // llama.cpp's defaults when the keys are absent
        float_key("attn_logit_softcapping", c.attn_softcap);
      }
      float_key("final_logit_softcapping", c.final_softcap);
      // the sliding layers: a window of n keys on the layers of the pattern
      if (arch == "gemma2" && !has_window) window = 4096;
      std::int64_t pattern = arch == "gemma2" ? 2 : 6;
      if (const Value* v = f.find(prefix + "attention.sliding_window_pattern")) {
        const auto n = v->as_int();
        if (v->type == ValueType::array)
          return unsupported(prefix + "attention.sliding_window_pattern as a list: llama.cpp's " + arch +
                             " reads only a number (every n-th layer global)");
        if (!n || *n < 0 || *n > 0x7fffffff) return corrupt(prefix + "attention.sliding_window_pattern is not a count of layers");
        pattern = *n;
      }
      if (window > 0) {
        c.sliding_window = window;
        c.sliding_layers = swa_layers(c.n_layer, pattern);
      }
      float base_swa = arch == "gemma2" ? c.rope_theta : 10000.0f;  // llama.cpp's defaults
      const bool has_base_swa = float_key("rope.freq_base_swa", base_swa);
      if (arch == "gemma3" && c.sliding_window > 0) c.rope_local_theta = base_swa;  // the local layers, unscaled
      if (arch == "gemma2" && has_base_swa && base_swa != c.rope_theta)
        return unsupported(prefix + "rope.freq_base_swa differs from rope.freq_base: Gemma 2's layers share one "
                                    "rotary base in headlab");
    }
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
                         {"context_length", c.n_ctx}, {"rope.dimension_count", c.rotary_dim},
                         {"attention.sliding_window", c.sliding_window}})
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

// Every slot's tensor is in the file with the shape the config implies, and every tensor of
// the file is read (rope_freqs.weight into the config).
Status check_tensors(const File& f, const ModelConfig& c, const std::vector<Slot>& slots) {
  std::set<std::string> used;
  if (!c.rope_freq_factors.empty()) used.insert("rope_freqs.weight");  // read into the config
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
  return {};
}

// Each matrix's type in memory under `dtype`: its tensors' kept type (q, k and v fill c_attn;
// f32 when they differ), then --dtype's choice.
MatrixTypes memory_types(const File& f, const std::vector<Slot>& slots, DtypeChoice dtype) {
  std::array<int, kNumParameterTensors> kept;
  kept.fill(-1);
  for (const Slot& s : slots) {
    int& k = kept[std::size_t(parameters_index(s.tensor))];
    const int d = int(kept_dtype(f.find_tensor(s.name)->type));
    k = k == -1 || k == d ? d : int(Dtype::F32);
  }
  MatrixTypes types = matrix_types_all(WeightType::f32);
  for (int i = 0; i < kNumParameterTensors; i++)
    types[std::size_t(i)] = weight_type_for(dtype, kept[std::size_t(i)] >= 0 ? Dtype(kept[std::size_t(i)]) : Dtype::F32);
  return types;
}

// The slot's matrix, layer and first row (a slot fills whole rows of one layer's matrix).
struct SlotPlace {
  int index, layer, row0;
};
SlotPlace slot_place(const ModelConfig& c, const Slot& s) {
  const int index = parameters_index(s.tensor);
  const auto [rows, cols] = parameters_matrix_shape(c, index);
  const std::int64_t per_layer = std::int64_t(rows) * cols;
  return {index, int(s.offset / per_layer), int(s.offset % per_layer / cols)};
}

// --dtype auto keeps a matrix's quantized blocks when every tensor that fills it (q, k and v;
// gate and up) is of a block type; the bands are those tensors' rows in order. A matrix filled
// from a float tensor and a quantized one is widened to f32 whole (memory_types).
MatrixBands quantized_bands(const File& f, const ModelConfig& c, const std::vector<Slot>& slots, DtypeChoice dtype,
                            bool rows) {
  MatrixBands bands;
  if (rows || dtype != DtypeChoice::keep) return bands;
  std::map<std::pair<int, int>, std::vector<std::pair<int, RowBand>>> parts;  // (index, layer) -> (row0, band)
  std::set<std::pair<int, int>> mixed;
  for (const Slot& s : slots) {
    const int index = parameters_index(s.tensor);
    if (!parameters_is_matrix(index)) continue;
    const TensorInfo& t = *f.find_tensor(s.name);
    const SlotPlace at = slot_place(c, s);
    const WeightType type = weight_type_of(t.type).value_or(WeightType::f32);
    if (!weight_type_quantized(type)) {
      mixed.insert({index, at.layer});
      continue;
    }
    parts[{index, at.layer}].push_back({at.row0, RowBand{type, int(t.rows())}});
  }
  for (auto& [key, list] : parts) {
    if (mixed.count(key)) continue;
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<RowBand> merged;
    for (const auto& [row0, band] : list) {
      if (!merged.empty() && merged.back().type == band.type) merged.back().rows += band.rows;
      else merged.push_back(band);
    }
    auto& of = bands.bands[std::size_t(key.first)];
    if (of.size() <= std::size_t(key.second)) of.resize(std::size_t(key.second) + 1);
    of[std::size_t(key.second)] = std::move(merged);
  }
  return bands;
}

// Keeping a tensor narrower than its values rounds it (--dtype bf16 / f16).
bool types_round(const File& f, const std::vector<Slot>& slots, const MatrixTypes& types) {
  bool rounds = false;
  for (const Slot& s : slots)
    rounds = rounds || weight_type_rounds(types[std::size_t(parameters_index(s.tensor))], kept_dtype(f.find_tensor(s.name)->type));
  return rounds;
}

}  // namespace

Result<Parameters> parameters_from_file(const File& f, const LoadOptions& options) {
  auto config = config_from_file(f);
  if (!config) return tl::unexpected(config.error());
  const ModelConfig& c = *config;
  const std::vector<Slot> slots = slots_for(c);
  // every tensor is where the config says, of its shape, before anything is allocated
  if (Status s = check_tensors(f, c, slots); !s) return tl::unexpected(s.error());
  if (options.rows && options.dtype != DtypeChoice::keep && options.dtype != DtypeChoice::f32)
    return make_error(ErrorCode::invalid_argument, "float32 rows (for training) cannot hold --dtype " +
                                                       std::string(dtype_choice_name(options.dtype)));
  const MatrixTypes types = options.rows ? matrix_types_all(WeightType::f32) : memory_types(f, slots, options.dtype);
  const MatrixBands bands = quantized_bands(f, c, slots, options.dtype, options.rows);
  Parameters p;
  try {
    p = options.rows ? parameters_allocate(c) : parameters_allocate_packed(c, types, &bands);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::unsupported, f.path + ": the model needs about " +
                                                  std::to_string(parameters_packed_bytes(c, types, &bands) / (1 << 20)) + " MiB (" +
                                                  std::to_string(parameters_count(c)) + " weights" +
                                                  checkpoint_types_text(c, types) + "), more than this machine can allocate");
  }
  p.rounded = types_round(f, slots, types);
  std::vector<float> tmp, tmp2;
  constexpr std::int64_t kChunkFloats = std::int64_t(1) << 20;  // a part of a tensor at a time
  for (const Slot& s : slots) {
    const TensorInfo& t = *f.find_tensor(s.name);
    const int index = parameters_index(s.tensor);
    const std::int64_t n = t.elements(), cols = t.cols();
    if (parameters_is_matrix(index) && bands.find(index, slot_place(c, s).layer)) {
      // kept as the file's blocks: copied row by row (re-paired for llama's q and k)
      const SlotPlace at = slot_place(c, s);
      const WeightType type = *weight_type_of(t.type);
      const std::int64_t row_bytes = std::int64_t(quant_row_bytes(type, int(cols))), rows = t.rows();
      const unsigned char* data = f.tensor_data(t);
      if (s.layout == Layout::rope_pairs) {
        const std::int64_t HS = c.head_size();
        for (std::int64_t h = 0; h < s.heads; h++)
          for (std::int64_t i = 0; i < HS / 2; i++)
            for (std::int64_t j = 0; j < 2; j++) {
              const std::int64_t pair = h * HS + 2 * i + j, half = h * HS + j * (HS / 2) + i;  // as rope_rows
              parameters_write_blocks(p, index, at.layer, at.row0 + int(half), 1, data + pair * row_bytes);
            }
      } else {
        parameters_write_blocks(p, index, at.layer, at.row0, int(rows), data);
      }
      // checked once copied: the file's pages are in by now (the copy took their faults on every core)
      if (const std::int64_t b = quant_first_nonfinite_block(type, data, rows * row_bytes / quant_block_bytes(type)); b >= 0)
        return make_error(ErrorCode::corrupt, f.path + ": tensor \"" + s.name + "\" holds a non-finite scale in block " +
                                                  std::to_string(b) + " (flat index " + std::to_string(b * quant_block_elements(type)) + ")");
      release_pages(f, t);
      continue;
    }
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
      if (s.shift != 0.0f)
        for (std::int64_t i = 0; i < count; i++) tmp[std::size_t(i)] -= s.shift;  // Gemma: the file's 1 + w back to w
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
  parameters_set_compute(p, options.compute);
  return p;
}

Result<Parameters> parameters_load(const std::string& path, const LoadOptions& options) {
  auto file = file_open(path);
  if (!file) return tl::unexpected(file.error());
  return parameters_from_file(*file, options);
}

namespace {

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// A metadata value, short: a number, a string (cut at 40 characters), or "[151936 strings]".
std::string value_text(const Value& v) {
  if (v.type == ValueType::string) return v.text.size() > 40 ? "\"" + v.text.substr(0, 37) + "...\"" : "\"" + v.text + "\"";
  if (v.type == ValueType::boolean) return v.as_bool().value_or(false) ? "true" : "false";
  if (v.type == ValueType::array)
    return "[" + std::to_string(v.count) + " " +
           (v.element_type == ValueType::string ? std::string("strings") : std::string(value_type_name(v.element_type))) + "]";
  if (const auto x = v.as_number()) return number_text(*x);
  return std::string(value_type_name(v.type));
}

// What a key of the file set in the config (or why it is not read).
ConfigKeyUse key_use(const std::string& key, const Value& v, const std::string& arch, const ModelConfig& c) {
  ConfigKeyUse u{key, value_text(v), true, ""};
  const std::string prefix = arch + ".";
  if (key.compare(0, prefix.size(), prefix) == 0) {
    const std::string k = key.substr(prefix.size());
    const std::map<std::string, std::string> effects = {
        {"context_length", "maxT = " + std::to_string(c.n_ctx)},
        {"embedding_length", "C = " + std::to_string(c.n_embd)},
        {"block_count", "L = " + std::to_string(c.n_layer)},
        {"feed_forward_length", "F = " + std::to_string(c.mlp_width())},
        {"attention.head_count", "NH = " + std::to_string(c.n_head)},
        {"attention.head_count_kv", "NKV = " + std::to_string(c.kv_heads())},
        {"vocab_size", "V = " + std::to_string(c.vocab_size) + " (token_embd.weight's rows)"},
        {"attention.layer_norm_epsilon", "LayerNorm eps " + number_text(c.layer_norm_eps)},
        {"attention.layer_norm_rms_epsilon", "RMSNorm eps " + number_text(c.layer_norm_eps)},
        {"rope.dimension_count", "rotary on " + std::to_string(c.rotary_size()) + " channels of each head"},
        {"rope.freq_base", "rope theta " + number_text(c.rope_theta)},
        {"rope.freq_base_swa", "local layers' rope theta " + number_text(c.rope_local_theta)},
        {"attention.key_length", "HS = " + std::to_string(c.head_size())},
        {"attention.value_length", "HS = " + std::to_string(c.head_size()) + " (values too)"},
        {"attention.sliding_window", "sliding window of " + std::to_string(c.sliding_window) + " keys"},
        {"attention.sliding_window_pattern", "which layers slide (see attention)"},
        {"attn_logit_softcapping", "scores soft-capped at " + number_text(c.attn_softcap)},
        {"final_logit_softcapping", "logits soft-capped at " + number_text(c.final_softcap)},
        {"use_parallel_residual", c.parallel_residual ? "attention and MLP in parallel" : "attention, then MLP"},
    };
    if (k == "tensor_data_layout" || k == "rope.scaling.finetuned") {  // known, so not refused; no effect on the forward
      u.read = false;
      u.effect = "not read: it does not change the forward (llama.cpp's graph does not read it either)";
      return u;
    }
    auto it = effects.find(k);
    u.effect = it != effects.end() ? it->second
               : k.rfind("rope.scaling.", 0) == 0 ? "rope scaling (see positions)"
               : k.rfind("expert_", 0) == 0       ? "no experts: a dense MLP (mixture-of-experts is refused)"
                                                  : "read (see the block above)";
    return u;
  }
  if (key == "general.architecture") return u.effect = "the block: " + arch, u;
  if (key == "general.alignment") return u.effect = "tensor data aligned to " + value_text(v) + " bytes", u;
  if (key == "tokenizer.ggml.bos_token_id") return u.effect = "BOS id " + std::to_string(c.bos_token_id), u;
  if (key == "tokenizer.ggml.eos_token_id") return u.effect = "EOS id " + std::to_string(c.eos_token_id), u;
  if (key.rfind("tokenizer.", 0) == 0) return u.effect = "the tokenizer (headlab tokenize, run and the server read it)", u;
  u.read = false;
  u.effect = key.rfind("general.", 0) == 0 ? "a description of the file, not the maths" : "not part of the model's maths";
  return u;
}

}  // namespace

Result<CheckpointDescription> describe_file(const std::string& path, DtypeChoice dtype) {
  auto file = file_open(path);
  if (!file) return tl::unexpected(file.error());
  const File& f = *file;
  auto config = config_from_file(f);
  if (!config) return tl::unexpected(config.error());
  const ModelConfig& c = *config;
  const std::vector<Slot> slots = slots_for(c);
  if (Status s = check_tensors(f, c, slots); !s) return tl::unexpected(s.error());
  CheckpointDescription d;
  d.config = c;
  d.memory_types = memory_types(f, slots, dtype);
  const MatrixBands bands = quantized_bands(f, c, slots, dtype, /*rows=*/false);
  d.memory_bytes = parameters_packed_bytes(c, d.memory_types, &bands);
  d.quantized = !bands.empty();
  d.rounds = types_round(f, slots, d.memory_types);
  d.files.push_back(path);
  const std::string arch = architecture_of(c);
  for (const auto& [key, value] : f.metadata) d.keys.push_back(key_use(key, value, arch, c));
  std::map<std::string, const Slot*> by_name;
  for (const Slot& s : slots) by_name[s.name] = &s;
  for (const TensorInfo& t : f.tensors) {
    TensorMapping m;
    m.name = t.name;
    m.file = path;
    m.file_type = tensor_type_name(std::uint32_t(t.type));
    m.shape.assign(t.ne.rbegin(), t.ne.rend());  // rows first, as a safetensors shape
    m.bytes = t.bytes;
    auto it = by_name.find(t.name);
    if (it == by_name.end()) {
      m.how = "read into the config: a divisor per rotary frequency (Llama 3's rope scaling)";
      d.tensors.push_back(std::move(m));
      continue;
    }
    const Slot& s = *it->second;
    tensor_mapping_place(m, c, parameters_index(s.tensor), s.offset, d.memory_types);
    const bool quantized = t.type != TensorType::f32 && t.type != TensorType::f16 && t.type != TensorType::bf16;
    const bool kept = parameters_is_matrix(parameters_index(s.tensor)) && bands.find(parameters_index(s.tensor), slot_place(c, s).layer);
    if (kept) m.memory = m.file_type;
    m.how = kept        ? "kept as the file's " + m.file_type + " blocks (a product widens 32 rows at a time to float32)"
            : quantized ? "dequantized to float32 from " + m.file_type +
                              (dtype == DtypeChoice::keep ? " (the matrix also takes a float tensor)" : "")
                        : std::string("copied");
    if (s.layout == Layout::rope_pairs) m.how += ", rows re-paired (llama.cpp permuted them for its rotary pairs)";
    if (s.shift != 0.0f) m.how += ", the file's 1 + w taken back to w";
    d.tensors.push_back(std::move(m));
  }
  return d;
}

namespace {

// What refuses a config outright: no llama.cpp architecture has its block at all.
Status architecture_exists(const ModelConfig& c) {
  if (architecture_of(c).empty())
    return make_error(ErrorCode::unsupported, "a " + c.family + " model has no llama.cpp architecture headlab writes");
  if (!c.mlp) return make_error(ErrorCode::unsupported, "an attention-only model has no llama.cpp architecture (its blocks need an MLP)");
  if (c.is_gpt2() && (!c.scale_attn_weights || c.scale_attn_by_inverse_layer_idx))
    return make_error(ErrorCode::unsupported, "llama.cpp's gpt2 scales the scores by 1/sqrt(HS) only; this model's "
                                              "scale_attn_weights / scale_attn_by_inverse_layer_idx differ");
  if (c.positions == ModelConfig::Positions::rotary && c.rotary_interleaved)
    return make_error(ErrorCode::unsupported, "rotary pairs (2i, 2i+1) are not written (llama.cpp's " + architecture_of(c) +
                                                  " reads Hugging Face's halves order)");
  return {};
}

// rope_freqs.weight for a llama whose global frequencies are scaled one by one (Llama 3):
// divisor i = the unscaled frequency / the scaled one, as llama.cpp's converter computes it.
std::vector<float> rope_freqs_of(const ModelConfig& c) {
  if (architecture_of(c) != "llama" || (c.rope_llama3_factor <= 0.0f && c.rope_freq_factors.empty())) return {};
  const std::vector<float> plain = rope_frequencies(c.rotary_size(), c.rope_theta);
  ModelConfig global = c;
  global.rope_local_theta = 0.0f;
  const std::vector<float> scaled = rope_of_layer(global, 0).inv_freq;
  std::vector<float> out(plain.size());
  for (std::size_t i = 0; i < out.size(); i++) out[i] = float(double(plain[i]) / double(scaled[i]));
  return out;
}

// The first setting that changes the forward and differs between the model's config and the
// one a file would carry, as "setting: model value here, file value in the file"; empty if none.
std::string config_difference(const ModelConfig& a, const ModelConfig& b) {
  auto differ = [](const std::string& what, double x, double y) {
    return what + " is " + num(x) + " here but would read back as " + num(y);
  };
  std::vector<std::tuple<std::string, double, double>> fields = {
      {"n_layer", a.n_layer, b.n_layer},
      {"n_head", a.n_head, b.n_head},
      {"n_embd", a.n_embd, b.n_embd},
      {"n_ctx", a.n_ctx, b.n_ctx},
      {"vocab_size", a.vocab_size, b.vocab_size},
      {"tied (unembedding = wte)", a.tied, b.tied},
      {"layer_norm_eps", a.layer_norm_eps, b.layer_norm_eps},
      {"bos_token_id", a.bos_token_id, b.bos_token_id},
      {"eos_token_id", a.eos_token_id, b.eos_token_id},
      {"positions (0 learned, 1 rotary, 2 none)", int(a.positions), int(b.positions)},
      {"rotary channels", a.rotary_size(), b.rotary_size()},
      {"norm (0 LayerNorm, 1 RMSNorm)", int(a.norm), int(b.norm)},
      {"mlp_kind (0 gelu_tanh, 1 gelu_erf, 2 swiglu, 3 geglu)", int(a.mlp_kind), int(b.mlp_kind)},
      {"KV heads", a.kv_heads(), b.kv_heads()},
      {"head size", a.head_size(), b.head_size()},
      {"MLP width", a.mlp_width(), b.mlp_width()},
      {"qkv_bias", a.qkv_bias, b.qkv_bias},
      {"attn_out_bias (the o_proj bias)", a.attn_out_bias, b.attn_out_bias},
      {"mlp_bias", a.mlp_bias, b.mlp_bias},
      {"parallel_residual", a.parallel_residual, b.parallel_residual},
      {"qk_norm", a.qk_norm, b.qk_norm},
      {"norm_plus_one (Gemma's 1 + w)", a.norm_plus_one, b.norm_plus_one},
      {"sandwich_norm", a.sandwich_norm, b.sandwich_norm},
      {"embed_scale (x * sqrt(C))", a.embed_scale, b.embed_scale},
      {"attn_logit_softcapping", a.attn_softcap, b.attn_softcap},
      {"final_logit_softcapping", a.final_softcap, b.final_softcap},
  };
  for (const auto& [what, x, y] : fields)
    if (x != y) return differ(what, x, y);
  // a window as long as the context hides no key (Mistral 7B v0.1's 4096 keys in a model of 32)
  auto window = [](const ModelConfig& c, int l) { return c.window_of(l) >= c.n_ctx ? 0 : c.window_of(l); };
  for (int l = 0; l < a.n_layer; l++) {
    if (window(a, l) != window(b, l))
      return differ("layer " + std::to_string(l) + "'s sliding window", window(a, l), window(b, l));
    if (a.attention_scale(l) != b.attention_scale(l))
      return differ("layer " + std::to_string(l) + "'s score scale (query_pre_attn_scalar, 1/sqrt(HS))",
                    a.attention_scale(l), b.attention_scale(l));
    if (a.positions != ModelConfig::Positions::rotary) continue;
    const LayerRope ra = rope_of_layer(a, l), rb = rope_of_layer(b, l);
    if (ra.scale != rb.scale) return differ("layer " + std::to_string(l) + "'s rope scaling factor", ra.scale, rb.scale);
    for (std::size_t i = 0; i < ra.inv_freq.size() && i < rb.inv_freq.size(); i++)
      if (std::fabs(double(ra.inv_freq[i]) - rb.inv_freq[i]) > 1e-6 * std::fabs(double(ra.inv_freq[i])))
        return differ("layer " + std::to_string(l) + "'s rotary frequency " + std::to_string(i) +
                          " (rope_theta, its scaling, Gemma 3's local base)",
                      ra.inv_freq[i], rb.inv_freq[i]);
  }
  return {};
}

Value scalar_value(const MetadataValue& m) {
  Value v;
  v.type = m.type;
  v.bits = m.bits;
  v.text = m.text;
  return v;
}

}  // namespace

std::vector<float> NamedTensor::values() const {
  std::int64_t n = 1;
  for (std::int64_t d : ne) n *= d;
  std::vector<float> v(static_cast<std::size_t>(n));
  fill(v.data());
  return v;
}

Result<std::vector<NamedTensor>> tensors_for_file(const Parameters& params) {
  const ModelConfig& c = params.config;
  if (Status s = architecture_exists(c); !s) return tl::unexpected(s.error());
  std::vector<NamedTensor> out;
  for (const Slot& s : slots_for(c)) {
    std::int64_t n = 1;
    for (std::int64_t d : s.ne) n *= d;
    out.push_back({s.name, s.ne, [&params, s, n, HS = c.head_size()](float* values) {
                     // read through the one accessor: a loaded model keeps its matrices packed (parameters.h)
                     const int index = parameters_index(s.tensor);
                     if (s.layout != Layout::rope_pairs) {
                       parameters_read(params, index, std::size_t(s.offset), std::size_t(n), values);
                     } else {
                       std::vector<float> src(static_cast<std::size_t>(n));
                       parameters_read(params, index, std::size_t(s.offset), std::size_t(n), src.data());
                       rope_rows(values, src.data(), s.heads, HS, s.ne.size() == 2 ? s.ne[0] : 1, false);
                     }
                     if (s.shift != 0.0f)
                       for (std::int64_t i = 0; i < n; i++) values[i] += s.shift;
                   }});
  }
  std::vector<float> freqs = rope_freqs_of(c);
  if (!freqs.empty())
    out.push_back({"rope_freqs.weight", {std::int64_t(freqs.size())},
                   [freqs](float* values) { std::copy(freqs.begin(), freqs.end(), values); }});
  return out;
}

Result<std::vector<Metadata>> metadata_for_file(const Parameters& params) {
  const ModelConfig& c = params.config;
  if (Status s = architecture_exists(c); !s) return tl::unexpected(s.error());
  const std::string arch = architecture_of(c);
  const std::string a = arch + ".";
  std::vector<Metadata> m;
  m.emplace_back("general.architecture", meta_string(arch));
  m.emplace_back(a + "context_length", meta_u32(std::uint32_t(c.n_ctx)));
  m.emplace_back(a + "embedding_length", meta_u32(std::uint32_t(c.n_embd)));
  m.emplace_back(a + "block_count", meta_u32(std::uint32_t(c.n_layer)));
  m.emplace_back(a + "feed_forward_length", meta_u32(std::uint32_t(c.mlp_width())));
  m.emplace_back(a + "attention.head_count", meta_u32(std::uint32_t(c.n_head)));
  if (c.norm == ModelConfig::Norm::layernorm) {
    m.emplace_back(a + "attention.layer_norm_epsilon", meta_f32(c.layer_norm_eps));
  } else {
    m.emplace_back(a + "attention.layer_norm_rms_epsilon", meta_f32(c.layer_norm_eps));
  }
  if (c.positions == ModelConfig::Positions::rotary) {
    m.emplace_back(a + "rope.dimension_count", meta_u32(std::uint32_t(c.rotary_size())));
    m.emplace_back(a + "rope.freq_base", meta_f32(c.rope_theta));
    if (c.rope_linear_factor != 1.0f) {
      m.emplace_back(a + "rope.scaling.type", meta_string("linear"));
      m.emplace_back(a + "rope.scaling.factor", meta_f32(c.rope_linear_factor));
    }
  }
  if (arch != "gpt2" && arch != "gptneox") {
    m.emplace_back(a + "attention.head_count_kv", meta_u32(std::uint32_t(c.kv_heads())));
    if (c.head_dim > 0 && c.head_dim * c.n_head != c.n_embd) {
      m.emplace_back(a + "attention.key_length", meta_u32(std::uint32_t(c.head_dim)));
      m.emplace_back(a + "attention.value_length", meta_u32(std::uint32_t(c.head_dim)));
    }
  }
  if (arch == "gptneox") m.emplace_back(a + "use_parallel_residual", meta_bool(c.parallel_residual));
  if (is_gemma(arch)) {
    // (no cap is not a number llama.cpp reads: Gemma 2 without its keys caps at 50 and 30)
    if (arch == "gemma2" && c.attn_softcap > 0.0f) m.emplace_back(a + "attn_logit_softcapping", meta_f32(c.attn_softcap));
    if (c.final_softcap > 0.0f) m.emplace_back(a + "final_logit_softcapping", meta_f32(c.final_softcap));
    // the sliding layers as llama.cpp's pattern: the smallest n with layer l sliding when l % n < n - 1
    bool slides = false;
    for (int l = 0; l < c.n_layer; l++) slides = slides || c.window_of(l) > 0;
    if (slides) {
      std::vector<unsigned char> want(std::size_t(c.n_layer));
      for (int l = 0; l < c.n_layer; l++) want[std::size_t(l)] = c.window_of(l) > 0;
      int pattern = c.n_layer + 1;  // every layer slides
      for (int n = 1; n <= c.n_layer + 1; n++)
        if (swa_layers(c.n_layer, n) == want) {
          pattern = n;
          break;
        }
      m.emplace_back(a + "attention.sliding_window", meta_u32(std::uint32_t(c.sliding_window)));
      m.emplace_back(a + "attention.sliding_window_pattern", meta_u32(std::uint32_t(pattern)));
      if (arch == "gemma3")
        m.emplace_back(a + "rope.freq_base_swa", meta_f32(c.rope_local_theta > 0.0f ? c.rope_local_theta : c.rope_theta));
    } else if (arch == "gemma2") {
      m.emplace_back(a + "attention.sliding_window_pattern", meta_u32(1));  // no layer slides
    }
  }
  // Read the keys back as a file would be read: whatever the architecture cannot say shows
  // up as a setting that differs, and is refused by name instead of written wrong.
  File view;
  view.path = "as written";
  for (const Metadata& kv : m) view.metadata.emplace_back(kv.first, scalar_value(kv.second));
  view.metadata.emplace_back("tokenizer.ggml.bos_token_id", scalar_value(meta_u32(std::uint32_t(c.bos_token_id))));
  view.metadata.emplace_back("tokenizer.ggml.eos_token_id", scalar_value(meta_u32(std::uint32_t(c.eos_token_id))));
  for (const Slot& s : slots_for(c)) view.tensors.push_back({s.name, s.ne, TensorType::f32, 0, 0});
  const std::vector<float> freqs = rope_freqs_of(c);
  if (!freqs.empty()) {
    view.tensors.push_back({"rope_freqs.weight", {std::int64_t(freqs.size())}, TensorType::f32, 0, freqs.size() * 4});
    view.bytes = reinterpret_cast<const unsigned char*>(freqs.data());
  }
  auto back = config_from_file(view);
  const std::string cannot = "llama.cpp's " + arch + " cannot express this " + c.family + " model: ";
  if (!back) return make_error(ErrorCode::unsupported, cannot + back.error().message);
  if (std::string d = config_difference(c, *back); !d.empty()) return make_error(ErrorCode::unsupported, cannot + d);
  return m;
}

}  // namespace headlab::model::gguf
