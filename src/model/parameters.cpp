// model/parameters.cpp — sizes, layout and initialisation of the weights (see parameters.h).
#include "model/parameters.h"

#include <cmath>
#include <random>

#include "util/check.h"

namespace headlab::model {

std::array<std::size_t, kNumParameterTensors> parameters_sizes(const ModelConfig& c) {
  const std::size_t V = c.vocab_size, C = c.n_embd, L = c.n_layer, maxT = c.n_ctx;
  const std::size_t mlp = c.mlp ? 1 : 0;
  // GPT-2: QKV = 3C, D = C, FC = F = 4C. Other families: see ModelConfig's block settings.
  const std::size_t QKV = c.qkv_width(), D = c.q_width(), F = c.mlp_width(), FC = c.fc_width();
  const std::size_t learned = c.positions == ModelConfig::Positions::learned ? 1 : 0;
  const std::size_t nb = c.norm == ModelConfig::Norm::layernorm ? 1 : 0;  // RMSNorm has no bias
  const std::size_t qb = c.qkv_bias ? 1 : 0, ob = c.attn_out_bias ? 1 : 0, mb = c.mlp_bias ? 1 : 0;
  return {
      V * C,                  // wte
      learned * maxT * C,     // wpe
      L * C,                  // ln1w
      nb * L * C,             // ln1b
      L * QKV * C,            // qkvw
      qb * L * QKV,           // qkvb
      L * C * D,              // attprojw
      ob * L * C,             // attprojb
      mlp * L * C,            // ln2w
      mlp * nb * L * C,       // ln2b
      mlp * L * FC * C,       // fcw
      mlp * mb * L * FC,      // fcb
      mlp * L * C * F,        // fcprojw
      mlp * mb * L * C,       // fcprojb
      C,                      // lnfw
      nb * C,                 // lnfb
      c.tied ? 0 : V * C,     // lm_head
      0,                      // unused
      (c.qk_norm ? L * c.head_size() : 0),                 // qnormw
      (c.qk_norm ? L * c.head_size() : 0),                 // knormw
      (c.sandwich_norm ? L * C : 0),                       // postattnw
      (c.sandwich_norm && c.mlp ? L * C : 0),              // postmlpw
  };
}

std::size_t parameters_count(const ModelConfig& c) {
  std::size_t n = 0;
  for (std::size_t s : parameters_sizes(c)) n += s;
  return n;
}

std::string_view parameters_name(int index) {
  static constexpr std::string_view kNames[kNumParameterTensors] = {
      "wte",  "wpe",  "ln1w",    "ln1b",    "qkvw", "qkvb", "attprojw", "attprojb", "ln2w",
      "ln2b", "fcw",  "fcb",     "fcprojw", "fcprojb", "lnfw", "lnfb", "lm_head", "unused",
      "qnormw", "knormw", "postattnw", "postmlpw"};
  HEADLAB_CHECK(index >= 0 && index < kNumParameterTensors);
  return kNames[index];
}

ParameterTensors parameters_point(float* memory, const ModelConfig& c) {
  auto sizes = parameters_sizes(c);
  ParameterTensors t{};
  float** ptrs[kNumParameterTensors] = {&t.wte,  &t.wpe,      &t.ln1w,     &t.ln1b,    &t.qkvw, &t.qkvb,
                                        &t.attprojw, &t.attprojb, &t.ln2w, &t.ln2b,   &t.fcw,  &t.fcb,
                                        &t.fcprojw,  &t.fcprojb,  &t.lnfw, &t.lnfb,   &t.lm_head, &t.unused,
                                        &t.qnormw,   &t.knormw,   &t.postattnw, &t.postmlpw};
  float* p = memory;
  for (int i = 0; i < kNumParameterTensors; i++) {
    *ptrs[i] = p;
    p += sizes[i];
  }
  return t;
}

std::array<float*, kNumParameterTensors> parameters_list(const ParameterTensors& t) {
  return {t.wte,  t.wpe,  t.ln1w, t.ln1b,    t.qkvw,    t.qkvb, t.attprojw, t.attprojb, t.ln2w,
          t.ln2b, t.fcw,  t.fcb,  t.fcprojw, t.fcprojb, t.lnfw, t.lnfb,     t.lm_head,  t.unused,
          t.qnormw, t.knormw, t.postattnw, t.postmlpw};
}

Parameters parameters_allocate(const ModelConfig& config) {
  HEADLAB_CHECK(config_validate(config).has_value());
  Parameters p;
  p.config = config;
  p.memory.assign(parameters_count(config), 0.0f);
  p.t = parameters_point(p.memory.data(), config);
  return p;
}

void parameters_init_random(Parameters& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto sizes = parameters_sizes(p.config);
  auto list = parameters_list(p.t);
  const float std_base = 0.02f;
  const float std_resid = 0.02f / std::sqrt(2.0f * p.config.n_layer);
  for (int i = 0; i < kNumParameterTensors; i++) {
    float* w = list[i];
    std::size_t n = sizes[i];
    std::string_view name = parameters_name(i);
    if (name == "ln1w" || name == "ln2w" || name == "lnfw" || name == "qnormw" || name == "knormw" ||
        name == "postattnw" || name == "postmlpw") {
      for (std::size_t j = 0; j < n; j++) w[j] = 1.0f;
    } else if (name == "ln1b" || name == "ln2b" || name == "lnfb" || name == "qkvb" || name == "attprojb" ||
               name == "fcb" || name == "fcprojb") {
      for (std::size_t j = 0; j < n; j++) w[j] = 0.0f;
    } else {
      std::normal_distribution<float> dist(0.0f, (name == "attprojw" || name == "fcprojw") ? std_resid : std_base);
      for (std::size_t j = 0; j < n; j++) w[j] = dist(rng);
    }
  }
}

std::string parameters_find_nonfinite(const Parameters& p) {
  auto sizes = parameters_sizes(p.config);
  auto list = parameters_list(p.t);
  for (int i = 0; i < kNumParameterTensors; i++)
    for (std::size_t j = 0; j < sizes[i]; j++)
      if (!std::isfinite(list[i][j])) return std::string(parameters_name(i)) + "[" + std::to_string(j) + "]";
  return {};
}

}  // namespace headlab::model
