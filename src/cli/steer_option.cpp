// cli/steer_option.cpp — --steer, --steer-prompts and --steer-from (steer_option.h).
#include "cli/steer_option.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <tuple>

#include "analysis/run_text.h"
#include "cli/whole_number.h"

namespace headlab::cli {

namespace {

Error steer_usage(const std::string& m) { return Error{ErrorCode::invalid_argument, m}; }

// "L:COEF:REST" -> (L, COEF, REST)
Result<std::tuple<int, float, std::string>> steer_spec(const std::string& spec, const std::string& option,
                                                       const char* form) {
  const std::size_t a = spec.find(':'), b = a == std::string::npos ? a : spec.find(':', a + 1);
  if (b == std::string::npos) return tl::unexpected(steer_usage(option + " " + spec + ": expected " + form));
  const std::string layer_text = spec.substr(0, a), coef_text = spec.substr(a + 1, b - a - 1);
  std::size_t used = 0;
  long layer = -1;
  float coef = 0;
  try {
    layer = std::stol(layer_text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (layer_text.empty() || used != layer_text.size() || layer < 0 || layer > 1 << 30)
    return tl::unexpected(steer_usage(option + " " + spec + ": the layer \"" + layer_text + "\" is not a whole number"));
  try {
    coef = std::stof(coef_text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (coef_text.empty() || used != coef_text.size() || !std::isfinite(coef))
    return tl::unexpected(steer_usage(option + " " + spec + ": the coefficient \"" + coef_text + "\" is not a finite number"));
  return std::tuple{static_cast<int>(layer), coef, spec.substr(b + 1)};
}

}  // namespace

void add_steer_options(CLI::App* cmd, SteerOptions& o) {
  cmd->add_option("--steer", o.steer, "L:COEF:FILE: add COEF * v at blocks.L.hook_resid_pre, v from FILE "
                                      "(n_embd float32, or a JSON list of n_embd numbers); repeatable");
  cmd->add_option("--steer-prompts", o.steer_prompts,
                  "L:COEF:PLUS TEXT:MINUS TEXT: ActAdd, v = resid_pre(PLUS) - resid_pre(MINUS) at L, row by row over "
                  "the shorter; repeatable");
  cmd->add_option("--steer-from", o.steer_from, "The first position the steering is added at")
      ->check(whole_number_from(0))
      ->capture_default_str();
}

Result<std::vector<research::Steering>> steering_from_options(const SteerOptions& o, const model::Parameters& params,
                                                              const model::BpeTokenizer* tok, std::optional<bool> bos,
                                                              model::Workspace& ws) {
  const model::ModelConfig& c = params.config;
  std::vector<research::Steering> out;
  for (const std::string& s : o.steer) {
    auto h = steer_spec(s, "--steer", "L:COEF:FILE");
    if (!h) return tl::unexpected(h.error());
    auto v = research::steering_vector_read(std::get<2>(*h), c.n_embd);
    if (!v) return tl::unexpected(v.error());
    research::Steering st{.layer = std::get<0>(*h), .coef = std::get<1>(*h), .from = o.steer_from, .vector = *v};
    if (auto ok = research::steering_check(c, st); !ok) return tl::unexpected(steer_usage("--steer " + s + ": " + ok.error().message));
    out.push_back(std::move(st));
  }
  for (const std::string& s : o.steer_prompts) {
    auto h = steer_spec(s, "--steer-prompts", "L:COEF:PLUS TEXT:MINUS TEXT");
    if (!h) return tl::unexpected(h.error());
    const std::string& texts = std::get<2>(*h);
    const std::size_t cut = texts.find(':');
    if (cut == std::string::npos || cut == 0 || cut + 1 == texts.size())
      return tl::unexpected(steer_usage("--steer-prompts " + s + ": expected L:COEF:PLUS TEXT:MINUS TEXT, two texts after "
                                        "the coefficient (the first may not hold a ':')"));
    if (!tok) return tl::unexpected(steer_usage("--steer-prompts: this model has no tokenizer to read the texts"));
    analysis::RunInputOptions io;
    io.bos = bos;
    auto plus = analysis::run_input_from_text(*tok, c, texts.substr(0, cut), io);
    if (!plus) return tl::unexpected(plus.error());
    auto minus = analysis::run_input_from_text(*tok, c, texts.substr(cut + 1), io);
    if (!minus) return tl::unexpected(minus.error());
    auto st = research::steering_from_prompts(params, plus->ids(), minus->ids(), std::get<0>(*h), std::get<1>(*h), ws);
    if (!st) return tl::unexpected(st.error());
    st->from = o.steer_from;
    out.push_back(std::move(*st));
  }
  return out;
}

}  // namespace headlab::cli
