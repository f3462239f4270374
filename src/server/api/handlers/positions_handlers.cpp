// server/api/handlers/positions_handlers.cpp — validate, then call analysis/position_views and
// the engine; the lesson models come from the shelf.
#include "server/api/handlers/positions_handlers.h"

#include "analysis/head_views.h"
#include "course/trained_heads.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "analysis/run_text.h"
#include "analysis/scan_text.h"
#include "course/word_order.h"

namespace headlab::server {
namespace {

constexpr int kMaxContentTokens = 64;  // a grid a learner can read; the view is O(T^2)

Result<std::vector<model::Token>> tokens_for_view(const model::BpeTokenizer& tok, const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return make_error(ErrorCode::invalid_argument, "Type a sentence first: the text is empty.");
  auto t = tok.encode(text, {.special = false});
  if (!t) return tl::unexpected(t.error());
  if (t->size() > std::size_t(kMaxContentTokens))
    return make_error(ErrorCode::too_long, "The text is " + std::to_string(t->size()) + " tokens long; this view shows at most " +
                                               std::to_string(kMaxContentTokens) + ". Shorten it.");
  return t;
}

Result<double> number_from(const std::string& typed, const char* what) {
  double v = 0;
  const char* end = typed.data() + typed.size();
  auto [p, ec] = std::from_chars(typed.data(), end, v);
  if (typed.empty() || ec != std::errc() || p != end)
    return make_error(ErrorCode::invalid_argument,
                      std::string("The ") + what + " must be a number; got \u201c" + typed.substr(0, 32) + "\u201d.");
  return v;
}

// One head's share on the token before, by query band, on the scanner's own natural windows
// (the probes scan_text scored it on). The caller holds e.mutex.
Result<std::vector<course::PreviousTokenShare>> previous_by_position(course::LessonModelEntry& e, const analysis::BestHead& head,
                                                                     const analysis::ScanOptions& o) {
  const model::ModelConfig& c = e.params.config;
  auto ids = e.tokenizer->encode_ids(e.heldout);
  if (!ids) return make_error(ids.error().code, "the held-out text: " + ids.error().message);
  auto probes = analysis::scan_probes_build(*ids, analysis::punctuation_table(*e.tokenizer, c.vocab_size, c.bos_token_id),
                                            c.vocab_size, c.bos_token_id, c.n_ctx, o);
  if (!probes) return tl::unexpected(probes.error());
  std::vector<std::vector<float>> patterns;
  for (const std::vector<int>& window : probes->natural) {
    model::ForwardOptions opt;
    opt.record.pattern = true;
    opt.logits = false;
    model::ForwardOutput out;
    if (auto st = model::forward(e.params, window, opt, out, e.workspace); !st) return tl::unexpected(st.error());
    patterns.push_back(out.record.pattern_full(head.layer, head.head));
  }
  std::vector<analysis::PatternView> views;
  for (std::size_t i = 0; i < patterns.size(); ++i) views.push_back({patterns[i].data(), int(probes->natural[i].size())});
  return course::previous_token_shares(views, course::previous_token_bands(int(probes->natural.front().size())));
}

}  // namespace

Result<RopeAnswer> handle_rope(const RopeRequest& r) {
  const std::vector<float>& q = r.q.empty() ? course::word_order_q() : r.q;
  const std::vector<float>& k = r.k.empty() ? course::word_order_k() : r.k;
  auto dots = analysis::rope_dots(q, k, r.theta, r.pairs);
  if (!dots) return tl::unexpected(dots.error());
  return RopeAnswer{r.theta, static_cast<int>(q.size()), std::move(*dots)};
}

Result<WavelengthAnswer> handle_rope_wavelengths(const WavelengthQuery& query) {
  auto theta = number_from(query.theta, "base theta");
  if (!theta) return tl::unexpected(theta.error());
  auto hs = number_from(query.head_size, "head size");
  if (!hs) return tl::unexpected(hs.error());
  if (*hs != std::floor(*hs))
    return make_error(ErrorCode::invalid_argument, "The head size must be a whole number, like 64 or 128.");
  if (std::fabs(*hs) > 1e6)  // before the cast to int; rope_wavelengths says the range of the rest
    return make_error(ErrorCode::invalid_argument, "The head size is at most 1024 here (real models use 64 or 128); got " +
                                                       query.head_size.substr(0, 40) + ".");
  auto pairs = analysis::rope_wavelengths(*theta, static_cast<int>(*hs));
  if (!pairs) return tl::unexpected(pairs.error());
  return WavelengthAnswer{*theta, static_cast<int>(*hs), std::move(*pairs),
                          {{"GPT-NeoX (Pythia)", 10000, 128, 2048}, {"Llama 3", 500000, 128, 8192}, {"headlab-rope", 10000, 32, 128}}};
}

Result<PositionsAnswer> handle_positions(ModelService* model) {
  PositionsAnswer a;
  int n_ctx = kMaxPositionsShown, C = 128;
  const model::Parameters* p = nullptr;
  if (model) {
    p = &model->parameters();
    a.model = model->info().name;
    n_ctx = p->config.n_ctx;
    C = p->config.n_embd;
  }
  a.n_ctx = n_ctx;
  a.n_embd = C;
  const int N = std::min(n_ctx, kMaxPositionsShown);
  for (int i = 0; i < N; ++i) a.positions.push_back(N == n_ctx ? i : int(std::lround(double(i) * (n_ctx - 1) / (N - 1))));
  std::vector<float> rows(std::size_t(N) * C);  // (N, C)
  if (p && p->config.positions == model::ModelConfig::Positions::learned) {
    for (int i = 0; i < N; ++i) std::copy_n(p->t.wpe + std::size_t(a.positions[i]) * C, C, rows.begin() + std::size_t(i) * C);
    a.learned = analysis::position_similarity(rows.data(), N, C);
  } else {
    a.learned_note = p ? "This model has no learned position vectors (wpe)." : "No model is loaded.";
  }
  const std::vector<float> pe = analysis::sinusoidal_positions(n_ctx, C);
  for (int i = 0; i < N; ++i) std::copy_n(pe.begin() + std::size_t(a.positions[i]) * C, C, rows.begin() + std::size_t(i) * C);
  a.sinusoidal = analysis::position_similarity(rows.data(), N, C);
  return a;
}

Result<ContentOnlyAnswer> handle_content_only(ModelService& model, const ContentOnlyRequest& r) {
  const model::ModelConfig& c = model.parameters().config;
  if (r.head < 0 || r.head >= c.n_head)
    return make_error(ErrorCode::invalid_argument, "Field 'head' is " + std::to_string(r.head) + "; layer 0 has heads 0 to " +
                                                       std::to_string(c.n_head - 1) + ".");
  auto toks = tokens_for_view(model.tokenizer(), r.text);
  if (!toks) return tl::unexpected(toks.error());
  const int T = static_cast<int>(toks->size());
  std::vector<int> order = r.order;
  if (order.empty())
    for (int i = 0; i < T; ++i) order.push_back(i);
  std::vector<bool> seen(T, false);
  bool ok = static_cast<int>(order.size()) == T;
  for (int o : order) {
    if (!ok) break;
    ok = o >= 0 && o < T && !seen[o];
    if (ok) seen[o] = true;
  }
  if (!ok)
    return make_error(ErrorCode::invalid_argument, "Field 'order' must list each of the text's " + std::to_string(T) +
                                                       " tokens once (0 to " + std::to_string(T - 1) + ").");
  ContentOnlyAnswer a;
  std::vector<int> ids;
  for (int o : order) a.tokens.push_back((*toks)[o]), ids.push_back((*toks)[o].id);
  auto p = analysis::content_only_pattern(model.parameters(), ids, r.head);
  if (!p) return tl::unexpected(p.error());
  a.order = std::move(order);
  a.head = r.head;
  a.n_head = c.n_head;
  a.pattern = std::move(*p);
  return a;
}

Result<std::vector<LessonModelSummary>> handle_positions_models(course::LessonModelShelf& shelf) {
  std::vector<LessonModelSummary> out;
  for (const course::WordOrderModel& wm : course::word_order_models()) {
    LessonModelSummary s;
    s.positions = wm.positions;
    s.name = wm.name;
    s.title = wm.title;
    auto m = shelf.get(wm.name);
    if (!m) {
      s.error = m.error().message;
      out.push_back(std::move(s));
      continue;
    }
    course::LessonModelEntry& e = **m;
    std::lock_guard<std::mutex> lock(e.mutex);
    if (!e.scan) {
      if (e.heldout.empty()) {
        s.error = "The lesson model " + e.name + " has no heldout.txt for the head scanner.";
        out.push_back(std::move(s));
        continue;
      }
      // The scanner's windows stay within the trained context.
      analysis::ScanOptions o;
      o.window_length = std::min(e.trained_context, 128);
      auto scan = analysis::scan_text(e.params, *e.tokenizer, e.heldout, o);
      if (!scan) {
        s.error = scan.error().message;
        out.push_back(std::move(s));
        continue;
      }
      auto bands = previous_by_position(e, analysis::best_head(*scan, &analysis::HeadScores::previous_token), o);
      if (!bands) {
        s.error = bands.error().message;
        out.push_back(std::move(s));
        continue;
      }
      e.scan = std::move(*scan);
      e.previous_by_position = std::move(*bands);
    }
    s.available = true;
    s.config_positions = e.positions;  // what the folder holds, which the page shows
    s.n_layer = e.params.config.n_layer;
    s.n_head = e.params.config.n_head;
    s.n_ctx = e.n_ctx;
    s.trained_context = e.trained_context;
    s.run_limit = e.run_limit;
    s.previous_token = analysis::best_head(*e.scan, &analysis::HeadScores::previous_token);
    s.induction = analysis::best_head(*e.scan, &analysis::HeadScores::induction);
    s.previous_by_position = e.previous_by_position;
    for (const analysis::HeadReport& h : e.scan->heads)
      for (const analysis::Label& l : h.labels)
        if (l.name == "sink")
          s.sinks.push_back({h.layer, h.head, h.scores.first_token.score, h.scores.first_token_value_weighted.score});
    for (const analysis::HeadReport& h : e.scan->heads) {
      if (h.layer == s.previous_token.layer && h.head == s.previous_token.head) s.previous_token_chance = h.scores.previous_token.chance;
      if (h.layer == s.induction.layer && h.head == s.induction.head) s.induction_chance = h.scores.induction.chance;
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<LengthAnswer> handle_positions_length(course::LessonModelShelf& shelf, const LengthRequest& r) {
  auto m = shelf.get(r.model);
  if (!m) return tl::unexpected(m.error());
  course::LessonModelEntry& e = **m;
  const std::string& text = r.text.empty() ? e.heldout : r.text;
  if (text.empty()) return make_error(ErrorCode::invalid_argument, "Send a text, in 'text': this model has no heldout.txt.");
  auto ids = e.tokenizer->encode_ids(text, {.special = false});
  if (!ids) return tl::unexpected(ids.error());
  std::vector<int> in = {e.params.config.bos_token_id};
  in.insert(in.end(), ids->begin(), ids->begin() + std::min<std::size_t>(ids->size(), std::size_t(e.run_limit - 1)));
  if (in.size() < 9) return make_error(ErrorCode::invalid_argument, "The text is too short: send at least 8 tokens.");
  LengthAnswer a;
  a.model = e.name;
  a.positions = e.positions;
  a.trained_context = e.trained_context;
  a.run_limit = e.run_limit;
  a.T = static_cast<int>(in.size());
  std::lock_guard<std::mutex> lock(e.mutex);
  model::ForwardOptions opt;
  model::ForwardOutput out;
  if (auto s = model::forward(e.params, in, opt, out, e.workspace); !s) return tl::unexpected(s.error());
  analysis::NextTokenOutcome o = analysis::next_token_outcome(out.logits, in, out.V, 0, nullptr, a.T);
  a.token_loss = o.token_loss;
  double si = 0, sb = 0;
  int ni = 0;
  for (int t = 0; t < static_cast<int>(a.token_loss.size()); ++t) {
    if (t < e.trained_context) si += a.token_loss[t], ++ni;
    else sb += a.token_loss[t], ++a.beyond_count;
  }
  a.inside = ni ? si / ni : 0.0;
  a.beyond = a.beyond_count ? sb / a.beyond_count : std::numeric_limits<double>::quiet_NaN();
  return a;
}

Result<LessonRunAnswer> handle_positions_run(course::LessonModelShelf& shelf, const LessonRunRequest& r) {
  auto m = shelf.get(r.model);
  if (!m) return tl::unexpected(m.error());
  course::LessonModelEntry& e = **m;
  const model::ModelConfig& c = e.params.config;
  if (r.layer < 0 || r.layer >= c.n_layer || r.head < 0 || r.head >= c.n_head)
    return make_error(ErrorCode::invalid_argument, "Answer with a head of " + e.name + ": layer 0 to " + std::to_string(c.n_layer - 1) +
                                                       ", head 0 to " + std::to_string(c.n_head - 1) + ".");
  auto toks = tokens_for_view(*e.tokenizer, r.text);
  if (!toks) return tl::unexpected(toks.error());
  LessonRunAnswer a;
  a.model = e.name;
  a.positions = e.positions;
  a.tokens.push_back({c.bos_token_id, e.tokenizer->token_bytes(c.bos_token_id), 0, 0});
  a.tokens.insert(a.tokens.end(), toks->begin(), toks->end());
  std::vector<int> ids;
  for (const model::Token& t : a.tokens) ids.push_back(t.id);
  std::lock_guard<std::mutex> lock(e.mutex);
  model::ForwardOptions opt;
  opt.record.pattern = true;
  opt.record.qkv = true;  // the value-weighted view
  opt.logits = false;
  model::ForwardOutput out;
  if (auto s = model::forward(e.params, ids, opt, out, e.workspace); !s) return tl::unexpected(s.error());
  a.pattern = out.record.pattern_full(r.layer, r.head);
  const int T = static_cast<int>(ids.size());
  a.previous_token = course::previous_token_shares({{a.pattern.data(), T}}, {{2, T}}).front();
  // packed causal half (T*(T+1)/2) -> (T, T)
  const std::vector<float> packed = analysis::value_weighted_pattern(e.params, out.record, r.layer, r.head);
  a.value_weighted.assign(std::size_t(T) * T, 0.0f);
  for (int q = 0; q < T; ++q)
    for (int k = 0; k <= q; ++k)
      a.value_weighted[std::size_t(q) * T + k] = packed[model::ActivationRecord::packed_offset(q) + k];
  a.first_token = course::first_token_shares({r.layer, r.head, "", T, a.pattern, a.value_weighted});
  return a;
}

}  // namespace headlab::server
