// server/model_service/model_service.cpp — tokenise, check limits, run the engine in the pool, shape answers.
#include "formats/model_files.h"
#include "server/model_service/model_service.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/query_scores.h"
#include "analysis/run_text.h"
#include "analysis/scan_text.h"
#include "formats/hf/checkpoint.h"
#include "model/forward.h"
#include "model/head_range.h"
#include "research/cache.h"
#include "research/hook_select.h"
#include "research/intervene.h"
#include "research/steering.h"
#include "server/model_service/model_views.h"
#include "train/train_log.h"
#include "util/file.h"

namespace headlab::server {
namespace fs = std::filesystem;

namespace {

// Both ranges of a window end within the text; the codec has checked 0 <= begin <= end.
Status check_window(const TokenWindow& w, int T) {
  for (const auto& [name, range] : {std::pair{"queries", w.queries}, std::pair{"keys", w.keys}})
    if (range.end > T)
      return make_error(ErrorCode::invalid_argument,
                        std::string("Field 'window.") + name + "' is [" + std::to_string(range.begin) + ", " +
                            std::to_string(range.end) + "], beyond the text: it has " + std::to_string(T) +
                            " tokens, so a range lies within [0, " + std::to_string(T) + "]. Send an end of at most " +
                            std::to_string(T) + ", or leave out 'window' for the whole text.");
  return {};
}

}  // namespace

Result<std::unique_ptr<ModelService>> ModelService::load(const ModelServiceOptions& options) {
  std::unique_ptr<ModelService> s(new ModelService());
  s->options_ = options;
  auto params = model::model_load(options.dir, options.load);
  if (!params) return tl::unexpected(params.error());
  char speedup[32];
  std::snprintf(speedup, sizeof speedup, "%.2f", options.bf16_speedup);
  if (options.compute_auto && options.load.compute == model::ComputeChoice::bf16 &&
      model::parameters_rounds_inputs(*params))
    params->notes.push_back("the products with the model's bfloat16 matrices round their inputs to bfloat16 (float32 "
                            "sums): serve's default where the CPU's bf16 dot products outrun its float32 ones (here " +
                            std::string(speedup) +
                            " times as fast, measured at start); --compute f32 gives the reference's numbers");
  else if (options.compute_auto && options.load.compute == model::ComputeChoice::f32 && options.bf16_speedup > 0 &&
           model::parameters_keeps_bf16(*params))
    params->notes.push_back("the products with the model's bfloat16 matrices multiply float32 inputs: this CPU's "
                            "AVX512_BF16 dot products ran " +
                            std::string(speedup) +
                            " times as fast as its float32 ones at start, so --compute bf16 would be slower here "
                            "(ask for it by name to round the inputs anyway)");
  else if (options.load.compute == model::ComputeChoice::bf16 && !model::parameters_rounds_inputs(*params) &&
           !options.compute_auto)
    return make_error(ErrorCode::invalid_argument,
                      "--compute bf16 rounds the inputs of the products with bfloat16 matrices, and " + options.dir +
                          " keeps none: add --dtype bf16 (rounds its matrices to bfloat16) or leave --compute out");
  auto tok = model::model_tokenizer_load(options.dir);
  if (!tok) return tl::unexpected(tok.error());
  if (Status fits = model::config_check_tokenizer(params->config, tok->vocab_size(), options.dir); !fits)
    return tl::unexpected(fits.error());
  s->params_ = std::move(*params);
  s->tokenizer_ = std::move(*tok);
  const model::ModelConfig& c = s->params_.config;
  s->info_.name = fs::path(options.dir).lexically_normal().filename().string();
  if (s->info_.name.empty()) s->info_.name = fs::path(options.dir).lexically_normal().parent_path().filename().string();
  s->info_.config = c;
  s->info_.bos_id = c.bos_token_id;
  s->info_.bos_text = s->tokenizer_->token_bytes(c.bos_token_id);
  s->info_.max_tokens = std::min(options.max_tokens, c.n_ctx);
  s->info_.has_training_log =
      fs::exists(fs::path(options.dir) / "train_log.csv") || fs::exists(fs::path(options.dir) / "training_log.csv");
  s->pool_ = std::make_unique<InferencePool>(options.pool, &s->params_);
  return s;
}

Result<std::vector<model::Token>> ModelService::tokenize(const std::string& text, std::optional<bool> bos,
                                                         bool truncate, bool& truncated, std::string_view hint) const {
  analysis::RunInputOptions o;
  o.bos = bos;
  o.max_tokens = info_.max_tokens;
  o.truncate = truncate;
  o.limit_name = "this server's limit";
  o.truncate_hint = hint.empty() ? "send \"truncate\": true" : std::string(hint);
  auto in = analysis::run_input_from_text(*tokenizer_, params_.config, text, o);
  if (!in) return tl::unexpected(in.error());
  truncated = in->truncated;
  return std::move(in->tokens);
}

Result<ModelRunResult> ModelService::run(const ModelRunRequest& req) {
  const model::ModelConfig& c = params_.config;
  if (req.top_k < 0 || req.top_k > 50)
    return make_error(ErrorCode::invalid_argument, "top_k must be between 0 and 50.");
  analysis::RunRequest rq;
  rq.heads = req.heads;
  if (req.all_heads)
    for (int l = 0; l < c.n_layer; ++l)
      for (int h = 0; h < c.n_head; ++h) rq.heads.push_back({l, h});
  for (const HeadRef& h : rq.heads)
    if (auto s = model::check_layer_head(c, h.layer, h.head); !s) return tl::unexpected(s.error());
  bool truncated = false;
  auto tokens = tokenize(req.text, req.bos, req.truncate, truncated, req.too_long_hint);
  if (!tokens) return tl::unexpected(tokens.error());
  const int T = static_cast<int>(tokens->size());
  if (req.window)
    if (auto s = check_window(*req.window, T); !s) return tl::unexpected(s.error());
  const TokenWindow window = req.window.value_or(TokenWindow{{0, T}, {0, T}});
  // Only the cells sent count: a window over a long text carries every head.
  const int views = int(req.want_pattern) + int(req.want_value_weighted) + int(req.want_scores);
  const std::size_t cells = rq.heads.size() * views * window_cell_count(window);
  if (cells > options_.max_pattern_cells)
    return make_error(ErrorCode::too_long, std::to_string(rq.heads.size()) + " heads over " +
                                               (req.window ? "the window" : std::to_string(T) + " tokens") + " are " +
                                               std::to_string(cells) + " values, more than one answer carries (" +
                                               std::to_string(options_.max_pattern_cells) +
                                               "). Ask for fewer heads with \"heads\", a smaller \"window\", or a shorter text.");
  rq.views = {req.want_pattern, req.want_value_weighted, req.want_scores, req.rollout};
  rq.top_k = req.top_k;
  rq.keep = [window](const float* packed) { return window_cells(packed, window); };
  analysis::RunInput input{std::move(*tokens), truncated};
  const std::vector<int> ids = input.ids();
  auto options = analysis::run_forward_options(c, rq);
  if (!options) return tl::unexpected(options.error());
  // Without predictions nothing reads past the last layer asked for (the rollout reads all):
  // the forward stops there.
  if (!req.predictions) {
    options->logits = false;
    if (!req.rollout) {
      int last = -1;
      for (const HeadRef& h : rq.heads) last = std::max(last, h.layer);
      options->stop_at_layer = last + 1;  // 0 with no heads: only the embedding
    }
  }
  // The forward in the pool, in one batch with the other runs waiting then; the views, the
  // predictions and the answer are made here, on this request's own thread.
  auto out = pool_->forward(ids, *options);
  if (!out) return tl::unexpected(out.error());
  // without predictions the report reads no logits: it is given no ids to predict. The output
  // is shared with the identical runs that joined this one: read, not moved, then let go (its
  // bytes count in the pool's budget while any request holds it).
  analysis::RunReport report = analysis::run_report(params_, &*tokenizer_, req.predictions ? std::span<const int>(ids) : std::span<const int>(),
                                                    rq, **out);
  out->reset();
  ModelRunResult result = model_run_result(std::move(input), std::move(report), c, rq.views, req.window);
  result.predictions = req.predictions;
  result.compact = req.compact;
  result.held = pool_->hold(model_run_result_bytes(result));
  return result;
}

// Steering: a vector is checked now; ActAdd's texts are tokenised now (BOS by the request's
// rule) and their forwards run in the turn (resolve_steering), before the runs they steer.
Result<ModelService::PreparedSteering> ModelService::prepare_steering(const std::vector<SteerSpec>& specs,
                                                                      std::optional<bool> bos) const {
  const model::ModelConfig& c = params_.config;
  PreparedSteering out;
  for (std::size_t i = 0; i < specs.size(); i++) {
    const SteerSpec& sp = specs[i];
    const std::string where = "Steering " + std::to_string(i) + ": ";
    research::Steering st{.layer = sp.layer, .coef = sp.coef, .from = sp.from, .vector = sp.vector};
    std::pair<std::vector<int>, std::vector<int>> texts;
    if (sp.vector.empty()) {
      for (auto [text, ids] : {std::pair{&sp.plus, &texts.first}, std::pair{&sp.minus, &texts.second}}) {
        bool cut = false;
        auto t = tokenize(*text, bos, /*truncate=*/false, cut, "shorten the prompt");
        if (!t) return make_error(t.error().code, where + t.error().message);
        for (const auto& tok : *t) ids->push_back(tok.id);
      }
      st.vector.assign(std::size_t(c.n_embd), 0.0f);  // checked as a vector; the rows come in the turn
    }
    if (auto s = research::steering_check(c, st); !s) return make_error(s.error().code, where + s.error().message);
    out.steering.push_back(std::move(st));
    out.actadd.push_back(std::move(texts));
  }
  return out;
}

Result<std::vector<research::Steering>> ModelService::resolve_steering(PreparedSteering p, model::Workspace& ws) const {
  for (std::size_t i = 0; i < p.steering.size(); i++) {
    if (p.actadd[i].first.empty()) continue;
    auto s = research::steering_from_prompts(params_, p.actadd[i].first, p.actadd[i].second, p.steering[i].layer,
                                             p.steering[i].coef, ws);
    if (!s) return tl::unexpected(s.error());
    s->from = p.steering[i].from;
    p.steering[i] = std::move(*s);
  }
  return std::move(p.steering);
}

Result<ModelInterveneResult> ModelService::intervene(const ModelInterveneRequest& req) {
  const model::ModelConfig& c = params_.config;
  if (req.top_k < 0 || req.top_k > 50)
    return make_error(ErrorCode::invalid_argument, "top_k must be between 0 and 50.");
  bool truncated = false;
  auto tokens = tokenize(req.text, req.bos, req.truncate, truncated);
  if (!tokens) return tl::unexpected(tokens.error());
  const int T = static_cast<int>(tokens->size());
  model::Interventions iv;
  for (const auto& a : req.interventions.ablate) {
    if (auto s = model::check_layer_head(c, a.layer, a.head); !s) return tl::unexpected(s.error());
    iv.ablate.push_back({a.layer, a.head, a.mean ? model::Ablation::mean : model::Ablation::zero});
  }
  for (const auto& b : req.interventions.block) {
    if (auto s = model::check_layer_head(c, b.layer, b.head, /*every_head_ok=*/true); !s) return tl::unexpected(s.error());
    if (b.key < 0 || b.key >= T)
      return make_error(ErrorCode::invalid_argument, "Key " + std::to_string(b.key) + " is outside the text (positions 0 to " +
                                                         std::to_string(T - 1) + ").");
    iv.block.push_back({b.layer, b.head, b.key});
  }
  for (const auto& r : req.interventions.replace) {
    if (auto s = model::check_layer_head(c, r.layer, r.head); !s) return tl::unexpected(s.error());
    iv.replace.push_back({r.layer, r.head, model::PatternReplacementKind::uniform, {}});
  }
  auto steering = prepare_steering(req.steer, req.bos);
  if (!steering) return tl::unexpected(steering.error());
  std::vector<int> ids;
  for (const auto& t : *tokens) ids.push_back(t.id);
  research::InterveneRequest rq;
  rq.interventions = iv;
  rq.top_k = req.top_k;
  // By value, as in run: a job that outlives a timed-out request must not read this frame.
  auto report = pool_->run<research::InterveneReport>(
      [this, ids, rq, steering = std::move(*steering)](model::Workspace& ws) mutable -> Result<research::InterveneReport> {
        auto s = resolve_steering(std::move(steering), ws);
        if (!s) return tl::unexpected(s.error());
        rq.steering = std::move(*s);
        return research::intervene_run(params_, &*tokenizer_, ids, rq, ws);
      });
  if (!report) return tl::unexpected(report.error());
  ModelInterveneResult result;
  result.tokens = std::move(*tokens);
  result.baseline = std::move(report->baseline);
  result.intervened = std::move(report->intervened);
  return result;
}

Result<std::string> ModelService::cache(const ModelCacheRequest& req) {
  const model::ModelConfig& c = params_.config;
  auto sel = research::hook_select(c, req.hooks);
  if (!sel) {
    std::string m = sel.error().message;
    if (m.rfind("--hooks: ", 0) == 0) m = "Field 'hooks': " + m.substr(9);
    return make_error(sel.error().code, m);
  }
  std::vector<std::vector<int>> batch;
  std::string prepend_bos;
  if (!req.ids.empty()) {
    analysis::RunInputOptions o;
    o.bos = req.bos.value_or(false);  // given ids are the input as they are
    o.max_tokens = info_.max_tokens;
    o.limit_name = "this server's limit";
    o.truncate_hint = "drop the first ids";
    auto in = analysis::run_input_from_ids(&*tokenizer_, c, req.ids, o);
    if (!in) return tl::unexpected(in.error());
    batch.push_back(in->ids());
    prepend_bos = *o.bos ? "true" : "false";
  } else {
    analysis::RunInputOptions o;  // as tokenize(), but this route has no "truncate"
    o.bos = req.bos;
    o.max_tokens = info_.max_tokens;
    o.limit_name = "this server's limit";
    o.truncate_hint = "cut the text";
    for (std::size_t i = 0; i < req.texts.size(); i++) {
      auto in = analysis::run_input_from_text(*tokenizer_, c, req.texts[i], o);
      if (!in) {
        if (req.texts.size() == 1) return tl::unexpected(in.error());
        return make_error(in.error().code, "Prompt " + std::to_string(i) + ": " + in.error().message);
      }
      batch.push_back(in->ids());
    }
    prepend_bos = req.bos.value_or(c.default_prepend_bos()) ? "true" : "false";
  }
  research::CacheOptions o;
  o.max_bytes = options_.max_cache_bytes;
  o.budget_hint = "run `headlab cache` on your own machine, whose --max-mb this server's limit does not bind";
  // Refused before the turn: a cache over the limit never waits in the queue.
  int T = 0;
  for (const auto& ids : batch) T = std::max(T, static_cast<int>(ids.size()));
  if (Status s = research::cache_check_budget(c, *sel, static_cast<int>(batch.size()), T, o); !s)
    return tl::unexpected(s.error());
  const research::CacheFileInfo info{.model = info_.name, .prepend_bos = prepend_bos};
  // By value: a job that outlives a timed-out request must not read this frame.
  return pool_->run<std::string>([this, batch, selection = *sel, o, info](model::Workspace& ws) -> Result<std::string> {
    auto cache = research::cache_run(params_, batch, selection, o, ws);
    if (!cache) return tl::unexpected(cache.error());
    return research::cache_safetensors(*cache, info);
  });
}

Result<analysis::ScanReport> ModelService::scan_report() {
  std::lock_guard<std::mutex> lock(scan_mutex_);
  if (scan_) return *scan_;
  auto text = analysis::heldout_text_read(options_.dir);
  if (!text) return tl::unexpected(text.error());
  // A long job: it runs outside the request pool's time limit, once.
  auto report = analysis::scan_text(params_, *tokenizer_, *text, analysis::ScanOptions{});
  if (!report) return tl::unexpected(report.error());
  scan_ = std::move(*report);
  return *scan_;
}

Result<QueryScoresResult> ModelService::query_scores(const QueryScoresRequest& req) {
  const model::ModelConfig& c = params_.config;
  if (auto s = model::check_layer_head(c, req.layer, req.head); !s) return tl::unexpected(s.error());
  bool truncated = false;
  auto tokens = tokenize(req.text, req.bos, /*truncate=*/false, truncated, "shorten the text");  // no "truncate" here
  if (!tokens) return tl::unexpected(tokens.error());
  const int T = static_cast<int>(tokens->size());
  if (req.query < 0 || req.query >= T)
    return make_error(ErrorCode::invalid_argument,
                      "query must be a token position from 0 to " + std::to_string(T - 1) + " (this text has " +
                          std::to_string(T) + " tokens" +
                              (req.bos.value_or(params_.config.default_prepend_bos()) ? ", the start token included)."
                                                                                      : ")."));
  std::vector<int> ids;
  for (const auto& t : *tokens) ids.push_back(t.id);
  const QueryScoresRequest r = req;
  // By value: a job that outlives a timed-out request must not read this frame.
  auto scores = pool_->run<std::vector<float>>([this, ids, r](model::Workspace& ws) -> Result<std::vector<float>> {
    model::ForwardOptions opt;
    opt.logits = false;
    opt.record.qkv = true;
    model::ForwardOutput out;
    if (auto s = model::forward(params_, ids, opt, out, ws); !s) return tl::unexpected(s.error());
    return analysis::query_scores_all_keys(out.record, params_.config, r.layer, r.head, r.query);
  });
  if (!scores) return tl::unexpected(scores.error());
  return QueryScoresResult{std::move(*tokens), req.layer, req.head, req.query, std::move(*scores)};
}

Result<std::vector<float>> ModelService::head_ablation_deltas(const std::string& text) {
  bool truncated = false;
  auto tokens = tokenize(text, /*bos=*/true, /*truncate=*/true, truncated);
  if (!tokens) return tl::unexpected(tokens.error());
  // The check measures the loss over the whole text and has no "truncate" field: a longer
  // text is refused with the limit, not with the run routes' hint.
  if (truncated)
    return make_error(ErrorCode::too_long, "The text is longer than this server's limit of " +
                                               std::to_string(info_.max_tokens) + " tokens (with BOS). This check "
                                               "measures the loss over the whole text, so shorten it.");
  if (tokens->size() < 3) return make_error(ErrorCode::invalid_argument, "The text is too short to measure a loss; type a sentence.");
  std::vector<int> ids;
  for (const auto& t : *tokens) ids.push_back(t.id);
  const model::ModelConfig& c = params_.config;
  // By value: a job that outlives a timed-out request must not read this frame.
  return pool_->run<std::vector<float>>([this, ids, c](model::Workspace& ws) -> Result<std::vector<float>> {
    model::ForwardOptions opt;
    opt.logits = false;
    opt.loss = true;
    model::ForwardOutput out;
    if (auto s = model::forward(params_, ids, opt, out, ws); !s) return tl::unexpected(s.error());
    const float base = out.loss;
    std::vector<float> deltas;
    for (int l = 0; l < c.n_layer; ++l)
      for (int h = 0; h < c.n_head; ++h) {
        opt.interventions.ablate = {{l, h, model::Ablation::zero}};
        if (auto s = model::forward(params_, ids, opt, out, ws); !s) return tl::unexpected(s.error());
        deltas.push_back(out.loss - base);
      }
    return deltas;
  });
}

Result<TrainingLog> ModelService::training_log() const {
  // `headlab train` writes train_log.csv; training_log.csv is accepted too.
  fs::path p = fs::path(options_.dir) / "train_log.csv";
  if (!fs::exists(p)) p = fs::path(options_.dir) / "training_log.csv";
  auto text = file_read(p.string());
  if (!text) return make_error(ErrorCode::not_found, "This model has no training log (" + p.string() + ").");
  auto table = train::train_log_table_parse(*text, p.string());
  if (!table) return tl::unexpected(table.error());
  return TrainingLog{std::move(table->columns), std::move(table->rows)};
}

}  // namespace headlab::server
