// server/model_service.cpp — tokenise, check limits, run the engine in the pool, shape answers.
#include "server/model_service.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/scanner.h"
#include "core/sentence.h"
#include "model/checkpoint.h"
#include "model/forward.h"
#include "server/model_views.h"
#include "train/train_log.h"
#include "util/file.h"

namespace headlab::server {
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// True for tokens that are one punctuation mark, with or without a leading space.
bool token_is_punctuation(const std::string& bytes) {
  std::string_view t = bytes;
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  return core::is_punctuation(t);
}

Status check_head(const model::ModelConfig& c, int layer, int head, bool any_head_ok) {
  if (layer < 0 || layer >= c.n_layer)
    return make_error(ErrorCode::invalid_argument, "Layer " + std::to_string(layer) + " does not exist: the model has layers 0 to " +
                                                       std::to_string(c.n_layer - 1) + ".");
  if ((head < 0 && !(any_head_ok && head == -1)) || head >= c.n_head)
    return make_error(ErrorCode::invalid_argument, "Head " + std::to_string(head) + " does not exist: each layer has heads 0 to " +
                                                       std::to_string(c.n_head - 1) + (any_head_ok ? " (or -1 for all)." : "."));
  return {};
}

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
  auto params = model::checkpoint_load(options.dir);
  if (!params) return tl::unexpected(params.error());
  auto tok = model::BpeTokenizer::load(options.dir);
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
  s->pool_ = std::make_unique<InferencePool>(options.pool);
  return s;
}

Result<std::vector<model::Token>> ModelService::tokenize(const std::string& text, bool bos, bool truncate,
                                                         bool& truncated) const {
  if (text.empty()) return make_error(ErrorCode::invalid_argument, "The text is empty. Type something for the model to read.");
  auto toks = tokenizer_->encode(text);
  if (!toks) return tl::unexpected(toks.error());
  std::vector<model::Token> out;
  if (bos) out.push_back({info_.bos_id, info_.bos_text, 0, 0});
  const int limit = info_.max_tokens;
  const int total = static_cast<int>(toks->size()) + (bos ? 1 : 0);
  truncated = false;
  if (total > limit) {
    if (!truncate)
      return make_error(ErrorCode::too_long, "The text is " + std::to_string(total) + " tokens long; this server takes at most " +
                                                 std::to_string(limit) + ". Shorten it, or send \"truncate\": true to keep the last " +
                                                 std::to_string(limit) + ".");
    toks->erase(toks->begin(), toks->end() - (limit - (bos ? 1 : 0)));
    truncated = true;
  }
  out.insert(out.end(), toks->begin(), toks->end());
  return out;
}

Outcome ModelService::outcome_of(const model::ForwardOutput& out, const std::vector<int>& ids, int top_k) const {
  Outcome o;
  const int V = out.V;
  o.token_loss = next_token_losses(out.logits, ids, V);
  double sum = 0.0;
  for (float l : o.token_loss) sum += l;
  o.loss = o.token_loss.empty() ? 0.0f : static_cast<float>(sum / o.token_loss.size());
  for (int t = 0; t < out.T; ++t) {
    const float* row = out.logits.data() + std::size_t(t) * V;
    float max = *std::max_element(row, row + V);
    double z = 0.0;
    for (int v = 0; v < V; ++v) z += std::exp(double(row[v]) - max);
    std::vector<Prediction> preds;
    for (int id : model::top_k(row, V, top_k))
      preds.push_back({id, tokenizer_->token_bytes(id), static_cast<float>(std::exp(double(row[id]) - max) / z)});
    o.top_next.push_back(std::move(preds));
  }
  return o;
}

Result<ModelRunResult> ModelService::run(const ModelRunRequest& req) {
  const model::ModelConfig& c = params_.config;
  if (req.top_k < 0 || req.top_k > 50)
    return make_error(ErrorCode::invalid_argument, "top_k must be between 0 and 50.");
  std::vector<HeadRef> heads = req.heads;
  if (req.all_heads)
    for (int l = 0; l < c.n_layer; ++l)
      for (int h = 0; h < c.n_head; ++h) heads.push_back({l, h});
  for (const HeadRef& h : heads)
    if (auto s = check_head(c, h.layer, h.head, false); !s) return tl::unexpected(s.error());
  ModelRunResult result;
  auto tokens = tokenize(req.text, req.bos, req.truncate, result.truncated);
  if (!tokens) return tl::unexpected(tokens.error());
  const int T = static_cast<int>(tokens->size());
  if (req.window)
    if (auto s = check_window(*req.window, T); !s) return tl::unexpected(s.error());
  const TokenWindow window = req.window.value_or(TokenWindow{{0, T}, {0, T}});
  // Only the cells sent count: a window over a long text carries every head.
  const int views = int(req.want_pattern) + int(req.want_value_weighted) + int(req.want_scores);
  const std::size_t cells = heads.size() * views * window_cell_count(window);
  if (cells > options_.max_pattern_cells)
    return make_error(ErrorCode::too_long, std::to_string(heads.size()) + " heads over " +
                                               (req.window ? "the window" : std::to_string(T) + " tokens") + " are " +
                                               std::to_string(cells) + " values, more than one answer carries (" +
                                               std::to_string(options_.max_pattern_cells) +
                                               "). Ask for fewer heads with \"heads\", a smaller \"window\", or a shorter text.");
  std::vector<int> ids;
  for (const auto& t : *tokens) ids.push_back(t.id);
  result.tokens = std::move(*tokens);
  result.n_layer = c.n_layer;
  result.n_head = c.n_head;
  result.window = req.window;
  result.sends = {req.want_pattern, req.want_value_weighted, req.want_scores, req.rollout};

  auto done = pool_->run<bool>([&](model::Workspace& ws) -> Result<bool> {
    model::ForwardOptions opt;
    opt.record.pattern = req.want_pattern || req.want_value_weighted || req.rollout || !heads.empty();
    opt.record.scores = req.want_scores;
    opt.record.qkv = req.want_value_weighted;
    model::ForwardOutput out;
    if (auto s = model::forward(params_, ids, opt, out, ws); !s) return tl::unexpected(s.error());
    const std::size_t P = model::ActivationRecord::packed_size(T);
    for (const HeadRef& h : heads) {
      HeadView v{h.layer, h.head, {}, {}, {}};
      const std::size_t at = (std::size_t(h.layer) * c.n_head + h.head) * P;
      if (req.want_pattern) v.pattern = window_cells(out.record.pattern.data() + at, window);
      if (req.want_scores) v.scores = window_cells(out.record.scores.data() + at, window);
      if (req.want_value_weighted)
        v.value_weighted = window_cells(value_weighted_pattern(params_, out.record, h.layer, h.head).data(), window);
      result.heads.push_back(std::move(v));
    }
    if (req.rollout) result.rollout = window_cells(attention_rollout(out.record).data(), window);
    result.outcome = outcome_of(out, ids, req.top_k);
    return true;
  });
  if (!done) return tl::unexpected(done.error());
  return result;
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
    if (auto s = check_head(c, a.layer, a.head, false); !s) return tl::unexpected(s.error());
    iv.ablate.push_back({a.layer, a.head, a.mean ? model::Ablation::mean : model::Ablation::zero});
  }
  for (const auto& b : req.interventions.block) {
    if (auto s = check_head(c, b.layer, b.head, true); !s) return tl::unexpected(s.error());
    if (b.key < 0 || b.key >= T)
      return make_error(ErrorCode::invalid_argument, "Key " + std::to_string(b.key) + " is outside the text (positions 0 to " +
                                                         std::to_string(T - 1) + ").");
    iv.block.push_back({b.layer, b.head, b.key});
  }
  for (const auto& r : req.interventions.replace) {
    if (auto s = check_head(c, r.layer, r.head, false); !s) return tl::unexpected(s.error());
    iv.replace.push_back({r.layer, r.head, model::PatternReplacementKind::uniform, {}});
  }
  std::vector<int> ids;
  for (const auto& t : *tokens) ids.push_back(t.id);
  ModelInterveneResult result;
  result.tokens = std::move(*tokens);
  auto done = pool_->run<bool>([&](model::Workspace& ws) -> Result<bool> {
    model::ForwardOptions opt;
    model::ForwardOutput out;
    if (auto s = model::forward(params_, ids, opt, out, ws); !s) return tl::unexpected(s.error());
    result.baseline = outcome_of(out, ids, req.top_k);
    opt.interventions = iv;
    if (auto s = model::forward(params_, ids, opt, out, ws); !s) return tl::unexpected(s.error());
    result.intervened = outcome_of(out, ids, req.top_k);
    return true;
  });
  if (!done) return tl::unexpected(done.error());
  return result;
}

Result<std::string> ModelService::scan_json() {
  auto r = scan_report();
  if (!r) return tl::unexpected(r.error());
  std::lock_guard<std::mutex> lock(scan_mutex_);
  return *scan_json_;
}

Result<analysis::ScanReport> ModelService::scan_report() {
  std::lock_guard<std::mutex> lock(scan_mutex_);
  if (scan_) return *scan_;
  fs::path heldout = fs::path(options_.dir) / "heldout.txt";
  if (!fs::exists(heldout))
    return make_error(ErrorCode::not_found, "The model folder has no heldout.txt, the held-out text the scanner reads. Add "
                                            "one (plain English, a few thousand words) to " + options_.dir + ".");
  auto ids = tokenizer_->encode_ids(read_file(heldout));
  if (!ids) return tl::unexpected(ids.error());
  const model::ModelConfig& c = params_.config;
  std::vector<bool> is_punct(c.vocab_size, false);
  for (int v = 0; v < c.vocab_size; ++v) is_punct[v] = token_is_punctuation(tokenizer_->token_bytes(v));
  auto probes = analysis::scan_probes_build(*ids, is_punct, c.vocab_size, c.bos_token_id, c.n_ctx, analysis::ScanOptions{});
  if (!probes) return tl::unexpected(probes.error());
  // A long job: it runs outside the request pool's time limit, once.
  auto report = analysis::scan_model(params_, *probes);
  if (!report) return tl::unexpected(report.error());
  scan_json_ = analysis::scan_report_json(*report, info_.name);
  scan_ = std::move(*report);
  return *scan_;
}

Result<std::vector<float>> ModelService::head_ablation_deltas(const std::string& text) {
  bool truncated = false;
  auto tokens = tokenize(text, /*bos=*/true, /*truncate=*/false, truncated);
  if (!tokens) return tl::unexpected(tokens.error());
  if (tokens->size() < 3) return make_error(ErrorCode::invalid_argument, "The text is too short to measure a loss; type a sentence.");
  std::vector<int> ids;
  for (const auto& t : *tokens) ids.push_back(t.id);
  const model::ModelConfig& c = params_.config;
  return pool_->run<std::vector<float>>([&](model::Workspace& ws) -> Result<std::vector<float>> {
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
