// analysis/scanner.cpp — probes, the per-head scores of a model or of the constructed
// heads, and their labels. Values only: the CLI and the server's codec format them.
#include "analysis/scanner.h"
#include "analysis/head_views.h"

#include <algorithm>
#include <cmath>

#include "core/attention_pattern.h"
#include "core/constructed_heads.h"
#include "core/sentence.h"
#include "model/forward.h"
#include "model/thread_pool.h"

namespace headlab::analysis {

const std::vector<ScoreField>& score_fields() {
  static const std::vector<ScoreField> fields = {
      {"previous_token", &HeadScores::previous_token, false},
      {"current_token", &HeadScores::current_token, false},
      {"first_token", &HeadScores::first_token, false},
      {"first_token_value_weighted", &HeadScores::first_token_value_weighted, true},
      {"duplicate_token", &HeadScores::duplicate_token, false},
      {"induction", &HeadScores::induction, false},
      {"prefix_matching", &HeadScores::prefix_matching, false},
      {"copying", &HeadScores::copying, true},
      {"punctuation", &HeadScores::punctuation, false},
      {"entropy", &HeadScores::entropy, false},
  };
  return fields;
}

namespace {

std::vector<int> random_tokens(int n, int V, int bos, std::uint64_t& state) {
  std::vector<int> out(n);
  for (int& t : out) {
    // splitmix64
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    int id = static_cast<int>(z % static_cast<std::uint64_t>(V - 1));
    t = id >= bos ? id + 1 : id;
  }
  return out;
}

std::vector<int> copies(int bos, const std::vector<int>& seq, int n) {
  std::vector<int> out = {bos};
  for (int i = 0; i < n; ++i) out.insert(out.end(), seq.begin(), seq.end());
  return out;
}

// Running means of the Scored fields over probes.
struct Accumulator {
  Scored sum;
  int n = 0;
  void add(Scored s) {
    sum.score += s.score;
    sum.chance += s.chance;
    ++n;
  }
  Scored mean() const { return n ? Scored{sum.score / n, sum.chance / n} : Scored{}; }
};

struct HeadAccumulators {
  Accumulator previous_token, current_token, first_token, duplicate_token, induction, prefix_matching,
      entropy, punctuation, value_weighted;
};

// The patterns of every head on one probe, as (T, T) arrays: [layer * NH + head].
using PatternSet = std::vector<std::vector<float>>;

void score_natural(HeadAccumulators& acc, PatternView p, const std::vector<bool>& is_punct) {
  acc.previous_token.add(previous_token_score(p));
  acc.current_token.add(current_token_score(p));
  acc.first_token.add(first_token_score(p));
  acc.entropy.add(entropy_score(p));
  acc.punctuation.add(punctuation_score(p, is_punct));
}

HeadScores finish(const HeadAccumulators& a) {
  HeadScores s;
  s.previous_token = a.previous_token.mean();
  s.current_token = a.current_token.mean();
  s.first_token = a.first_token.mean();
  s.duplicate_token = a.duplicate_token.mean();
  s.induction = a.induction.mean();
  s.prefix_matching = a.prefix_matching.mean();
  s.entropy = a.entropy.mean();
  s.punctuation = a.punctuation.mean();
  s.first_token_value_weighted = a.value_weighted.mean();
  return s;
}

void rank(ScanReport& r) {
  for (HeadReport& h : r.heads) h.labels = label_head(h.scores);
  std::stable_sort(r.heads.begin(), r.heads.end(), [](const HeadReport& a, const HeadReport& b) {
    const double ma = a.labels.empty() ? -1e9 : a.labels.front().margin();
    const double mb = b.labels.empty() ? -1e9 : b.labels.front().margin();
    return ma > mb;
  });
}

// Copying score of head h of layer l: eigenvalues of the HS x HS matrix
//   M = Wv_h diag(ln1w) E^T Wu diag(lnfw) Wo_h
// whose non-zero eigenvalues are those of the (V, V) OV circuit Wu diag(lnfw) Wo_h Wv_h
// diag(ln1w) E^T (the LayerNorms' scales folded in, their centring and biases ignored).
}  // namespace

double ov_copying_score_plain(const model::Parameters& params, const std::vector<double>& G, int l, int h) {
  const model::ModelConfig& c = params.config;
  // GPT-2: QKV = 3C, D = C; with GQA head h reads the v rows of KV head kv_head_of(h)
  const int C = c.n_embd, HS = c.head_size(), D = c.q_width();
  const std::size_t v_row = std::size_t(D) + std::size_t(c.kv_heads()) * HS + std::size_t(c.kv_head_of(h)) * HS;
  // the weights as float32 rows, wherever the model keeps them (model/parameters.h)
  std::vector<float> wv(std::size_t(HS) * C), wo(std::size_t(C) * D);
  model::parameters_read_rows(params, &model::ParameterTensors::qkvw, l, int(v_row), HS, wv.data());  // (HS, C)
  model::parameters_read_rows(params, &model::ParameterTensors::attprojw, l, 0, C, wo.data());  // (C, D)
  const float* Wv = wv.data();
  const float* Wo = wo.data();  // head h: columns h*HS..
  const float* ln1w = params.t.ln1w + l * C;
  // A = Wv_h diag(ln1w) G    (HS, C)
  std::vector<double> A(std::size_t(HS) * C, 0.0);
  for (int i = 0; i < HS; ++i)
    for (int k = 0; k < C; ++k) {
      const double w = double(Wv[std::size_t(i) * C + k]) * ln1w[k];
      if (w == 0.0) continue;
      const double* g = G.data() + std::size_t(k) * C;
      double* a = A.data() + std::size_t(i) * C;
      for (int j = 0; j < C; ++j) a[j] += w * g[j];
    }
  // M = A Wo_h    (HS, HS)
  std::vector<double> M(std::size_t(HS) * HS, 0.0);
  for (int i = 0; i < HS; ++i)
    for (int j = 0; j < HS; ++j) {
      double s = 0.0;
      for (int k = 0; k < C; ++k) s += A[std::size_t(i) * C + k] * Wo[std::size_t(k) * D + h * HS + j];
      M[std::size_t(i) * HS + j] = s;
    }
  std::vector<double> re, im;
  if (!eigenvalues(M, HS, re, im)) return 0.0;
  return copying_score_from_eigenvalues(re, im);
}

// The plain loop streams all of G (C² doubles) once for each of the HS rows of A. Here the loop
// over k is outside: each row of G is read once and added into every row of A (HS · C doubles,
// in L2). Each A[i][j] still adds its terms k = 0, 1, ..., C − 1 in order, the same expression:
// the same bits as ov_copying_score_plain.
double ov_copying_score(const model::Parameters& params, const std::vector<double>& G, int l, int h) {
  const model::ModelConfig& c = params.config;
  const int C = c.n_embd, HS = c.head_size(), D = c.q_width();
  const std::size_t v_row = std::size_t(D) + std::size_t(c.kv_heads()) * HS + std::size_t(c.kv_head_of(h)) * HS;
  std::vector<float> wv(std::size_t(HS) * C), wo(std::size_t(C) * D);
  model::parameters_read_rows(params, &model::ParameterTensors::qkvw, l, int(v_row), HS, wv.data());  // (HS, C)
  model::parameters_read_rows(params, &model::ParameterTensors::attprojw, l, 0, C, wo.data());  // (C, D)
  const float* Wv = wv.data();
  const float* Wo = wo.data();
  const float* ln1w = params.t.ln1w + l * C;
  // A = Wv_h diag(ln1w) G    (HS, C)
  std::vector<double> A(std::size_t(HS) * C, 0.0);
  for (int k = 0; k < C; ++k) {
    const double* g = G.data() + std::size_t(k) * C;
    for (int i = 0; i < HS; ++i) {
      const double w = double(Wv[std::size_t(i) * C + k]) * ln1w[k];
      if (w == 0.0) continue;
      double* a = A.data() + std::size_t(i) * C;
      for (int j = 0; j < C; ++j) a[j] += w * g[j];
    }
  }
  // M = A Wo_h    (HS, HS)
  std::vector<double> M(std::size_t(HS) * HS, 0.0);
  for (int i = 0; i < HS; ++i)
    for (int j = 0; j < HS; ++j) {
      double s = 0.0;
      for (int k = 0; k < C; ++k) s += A[std::size_t(i) * C + k] * Wo[std::size_t(k) * D + h * HS + j];
      M[std::size_t(i) * HS + j] = s;
    }
  std::vector<double> re, im;
  if (!eigenvalues(M, HS, re, im)) return 0.0;
  return copying_score_from_eigenvalues(re, im);
}

Status scan_options_check(const ScanOptions& o, int n_ctx) {
  auto bad = [](std::string m) -> Status { return make_error(ErrorCode::invalid_argument, std::move(m)); };
  const std::string most = std::to_string(kMaxScanProbes);
  if (o.natural_windows < 1 || o.natural_windows > kMaxScanProbes)
    return bad("natural windows: " + std::to_string(o.natural_windows) + " is not from 1 to " + most);
  if (o.random_probes < 1 || o.random_probes > kMaxScanProbes)
    return bad("random probes: " + std::to_string(o.random_probes) + " is not from 1 to " + most);
  if (o.window_length < 0 || o.window_length > n_ctx)
    return bad("window length: " + std::to_string(o.window_length) + " is not from 5 to the model's context, " +
               std::to_string(n_ctx) + " tokens (0: min(n_ctx, 128))");
  const int W = o.window_length > 0 ? o.window_length : std::min(n_ctx, 128);
  if (o.repeat_length < 0 || (o.repeat_length > 0 && o.repeat_length > (W - 1) / 2))
    return bad("repeat length: " + std::to_string(o.repeat_length) + " is not from 1 to " + std::to_string((W - 1) / 2) +
               ", the most two copies fit in a window of " + std::to_string(W) + " tokens with BOS (0: min(50, that))");
  return {};
}

Result<ScanProbes> scan_probes_build(const std::vector<int>& natural_ids, const std::vector<bool>& is_punct_by_id,
                                     int V, int bos, int n_ctx, const ScanOptions& o) {
  if (Status s = scan_options_check(o, n_ctx); !s) return tl::unexpected(s.error());
  ScanProbes p;
  const int W = o.window_length > 0 ? std::min(o.window_length, n_ctx) : std::min(n_ctx, 128);
  if (W < 5)
    return make_error(ErrorCode::invalid_argument,
                      o.window_length > 0 && o.window_length < n_ctx
                          ? "a window of " + std::to_string(o.window_length) + " tokens is too short to scan: the probes need at least 5"
                          : "the model's context (" + std::to_string(n_ctx) + " tokens) is too short to scan: the probes need at least 5");
  if (static_cast<int>(natural_ids.size()) < W - 1)
    return make_error(ErrorCode::invalid_argument,
                      "the natural text has " + std::to_string(natural_ids.size()) + " tokens; the scanner needs at least " +
                          std::to_string(W - 1));
  // natural windows spread evenly over the text
  const int n_windows = std::max(1, o.natural_windows);
  const std::size_t span = natural_ids.size() - (W - 1);
  for (int i = 0; i < n_windows; ++i) {
    const std::size_t start = n_windows == 1 ? 0 : span * i / (n_windows - 1);
    std::vector<int> w = {bos};
    w.insert(w.end(), natural_ids.begin() + start, natural_ids.begin() + start + (W - 1));
    std::vector<bool> punct;
    for (int id : w) punct.push_back(id >= 0 && id < static_cast<int>(is_punct_by_id.size()) && is_punct_by_id[id]);
    p.natural.push_back(std::move(w));
    p.natural_is_punct.push_back(std::move(punct));
  }
  p.R = o.repeat_length > 0 ? std::min(o.repeat_length, (W - 1) / 2) : std::min(50, (W - 1) / 2);
  const int R3 = std::max(1, (W - 1) / 3);
  std::uint64_t state = o.seed * 0x2545F4914F6CDD1Dull + 1;
  for (int i = 0; i < std::max(1, o.random_probes); ++i) {
    p.repeated.push_back(copies(bos, random_tokens(p.R, V, bos, state), 2));
    p.three_copies.push_back(copies(bos, random_tokens(std::min(R3, p.R), V, bos, state), 3));
  }
  return p;
}

namespace {
constexpr int kGramRows = 256;  // E and Wu are read a block of vocabulary rows at a time, as float32
}  // namespace

std::vector<double> ov_gram_plain(const model::Parameters& params) {
  const model::ModelConfig& c = params.config;
  const int C = c.n_embd, V = c.vocab_size;
  std::vector<double> G(std::size_t(C) * C, 0.0);
  std::vector<float> E(std::size_t(kGramRows) * C), Wu(std::size_t(kGramRows) * C);
  for (int v0 = 0; v0 < V; v0 += kGramRows) {
    const int n = std::min(kGramRows, V - v0);
    model::parameters_read_rows(params, &model::ParameterTensors::wte, 0, v0, n, E.data());
    model::parameters_read_rows(params, model::parameters_unembedding_tensor(c), 0, v0, n, Wu.data());
    for (int r = 0; r < n; ++r) {
      const float* e = E.data() + std::size_t(r) * C;
      const float* u = Wu.data() + std::size_t(r) * C;
      for (int i = 0; i < C; ++i) {
        const double ei = e[i];
        double* g = G.data() + std::size_t(i) * C;
        for (int j = 0; j < C; ++j) g[j] += ei * u[j];
      }
    }
  }
  for (int i = 0; i < C; ++i)
    for (int j = 0; j < C; ++j) G[std::size_t(i) * C + j] *= params.t.lnfw[j];
  return G;
}

// The plain loop streams all of G (C² doubles: 32 MB at C = 2,048) through memory once per
// vocabulary row. Here each task owns a band of kBand rows of G (kBand · C doubles, in L2) and
// adds a whole block of vocabulary rows into it before moving on; each element still adds its
// terms r = 0, 1, ..., V − 1 in order, the same expression, so the same bits as the plain loop.
std::vector<double> ov_gram(const model::Parameters& params, const ScanProgressFn& progress) {
  const model::ModelConfig& c = params.config;
  const int C = c.n_embd, V = c.vocab_size;
  constexpr int kBand = 16;
  const int bands = (C + kBand - 1) / kBand;
  const int blocks = (V + kGramRows - 1) / kGramRows;
  std::vector<double> G(std::size_t(C) * C, 0.0);
  std::vector<float> E(std::size_t(kGramRows) * C), Wu(std::size_t(kGramRows) * C);
  for (int b = 0; b < blocks; ++b) {
    if (progress) progress(ScanProgress{"OV circuits", b, blocks});
    const int v0 = b * kGramRows, n = std::min(kGramRows, V - v0);
    model::parameters_read_rows(params, &model::ParameterTensors::wte, 0, v0, n, E.data());
    model::parameters_read_rows(params, model::parameters_unembedding_tensor(c), 0, v0, n, Wu.data());
    model::thread_pool_run(bands, [&](int band) {
      const int i0 = band * kBand, i1 = std::min(C, i0 + kBand);
      for (int r = 0; r < n; ++r) {
        const float* e = E.data() + std::size_t(r) * C;
        const float* u = Wu.data() + std::size_t(r) * C;
        for (int i = i0; i < i1; ++i) {
          const double ei = e[i];
          double* g = G.data() + std::size_t(i) * C;
          for (int j = 0; j < C; ++j) g[j] += ei * u[j];
        }
      }
    });
  }
  if (progress) progress(ScanProgress{"OV circuits", blocks, blocks});
  for (int i = 0; i < C; ++i)
    for (int j = 0; j < C; ++j) G[std::size_t(i) * C + j] *= params.t.lnfw[j];
  return G;
}

Result<ScanReport> scan_model(const model::Parameters& params, const ScanProbes& probes,
                              const ScanProgressFn& progress) {
  const model::ModelConfig& c = params.config;
  const int L = c.n_layer, NH = c.n_head, V = c.vocab_size;
  std::vector<HeadAccumulators> acc(std::size_t(L) * NH);
  model::Workspace ws;
  model::ForwardOutput out;
  model::ForwardOptions opt;
  opt.record.pattern = true;
  opt.logits = false;

  auto tell = [&](const char* stage, std::size_t done, std::size_t total) {
    if (progress) progress(ScanProgress{stage, int(done), int(total)});
  };
  // Each head's scores on a probe are one task of the pool: a head writes only its own
  // accumulators, so the order the tasks run in changes nothing.
  auto for_each_head = [&](const std::function<void(int l, int h)>& fn) {
    model::thread_pool_run(L * NH, [&](int lh) { fn(lh / NH, lh % NH); });
  };

  // 1. natural text: position scores, entropy, punctuation, value-weighted first token
  for (std::size_t w = 0; w < probes.natural.size(); ++w) {
    tell("natural text", w, probes.natural.size());
    const auto& ids = probes.natural[w];
    opt.record.qkv = true;
    if (Status s = model::forward(params, ids, opt, out, ws); !s) return tl::unexpected(s.error());
    const int T = static_cast<int>(ids.size());
    for_each_head([&](int l, int h) {
      std::vector<float> full = out.record.pattern_full(l, h);
      PatternView p{full.data(), T};
      HeadAccumulators& a = acc[std::size_t(l) * NH + h];
      score_natural(a, p, probes.natural_is_punct[w]);
      // |f(x_k)| = |Wo_h v_k| for every key
      const std::vector<double> fnorm = value_norms(params, out.record, l, h);
      Scored vw;
      int n = 0;
      for (int q = 1; q < T; ++q) {
        double total = 0.0;
        for (int k = 0; k <= q; ++k) total += p.at(q, k) * fnorm[k];
        if (total <= 0.0) continue;
        vw.score += p.at(q, 0) * fnorm[0] / total;
        // chance: uniform attention, the same vectors
        double ut = 0.0;
        for (int k = 0; k <= q; ++k) ut += fnorm[k];
        vw.chance += ut > 0 ? fnorm[0] / ut : 0.0;
        ++n;
      }
      if (n > 0) a.value_weighted.add({vw.score / n, vw.chance / n});
    });
  }
  opt.record.qkv = false;

  // 2. repeated random: duplicate token, induction, in-context learning
  ScanReport report;
  report.repeat_length = probes.R;
  for (const auto& ids : probes.natural) report.natural_tokens += static_cast<int>(ids.size()) - 1;
  double first_sum = 0.0, second_sum = 0.0;
  int first_n = 0, second_n = 0;
  for (std::size_t i = 0; i < probes.repeated.size(); ++i) {
    tell("repeated random", i, probes.repeated.size());
    const auto& ids = probes.repeated[i];
    opt.logits = true;
    if (Status s = model::forward(params, ids, opt, out, ws); !s) return tl::unexpected(s.error());
    const int T = static_cast<int>(ids.size());
    for_each_head([&](int l, int h) {
      std::vector<float> full = out.record.pattern_full(l, h);
      PatternView p{full.data(), T};
      acc[std::size_t(l) * NH + h].duplicate_token.add(duplicate_token_score(p, probes.R));
      acc[std::size_t(l) * NH + h].induction.add(induction_score(p, probes.R));
    });
    // loss predicting tokens 2..R (positions q = 1..R-1) and the same tokens in the copy
    for (int q = 1; q + 1 < T; ++q) {
      if (q == probes.R) continue;  // the copy's first token cannot be predicted
      const double loss = model::token_loss(out.logits.data() + std::size_t(q) * V, V, ids[q + 1]);
      if (q < probes.R) first_sum += loss, ++first_n;
      else second_sum += loss, ++second_n;
    }
  }
  opt.logits = false;
  if (first_n > 0 && second_n > 0) {
    report.has_icl = true;
    report.icl.loss_first_copy = first_sum / first_n;
    report.icl.loss_second_copy = second_sum / second_n;
  }

  // 3. three copies: prefix matching
  for (std::size_t i = 0; i < probes.three_copies.size(); ++i) {
    tell("three copies", i, probes.three_copies.size());
    const auto& ids = probes.three_copies[i];
    if (Status s = model::forward(params, ids, opt, out, ws); !s) return tl::unexpected(s.error());
    const int T = static_cast<int>(ids.size());
    for_each_head([&](int l, int h) {
      std::vector<float> full = out.record.pattern_full(l, h);
      acc[std::size_t(l) * NH + h].prefix_matching.add(prefix_matching_score(PatternView{full.data(), T}, ids));
    });
  }

  // 4. weights: the copying score of each head's OV circuit, one head per task
  const std::vector<double> G = ov_gram(params, progress);
  std::vector<double> copying(std::size_t(L) * NH);
  tell("copying scores", 0, copying.size());
  for_each_head([&](int l, int h) {
    copying[std::size_t(l) * NH + h] = ov_copying_score(params, G, l, h);
  });
  tell("copying scores", copying.size(), copying.size());

  for (int l = 0; l < L; ++l)
    for (int h = 0; h < NH; ++h) {
      HeadReport hr;
      hr.layer = l;
      hr.head = h;
      hr.name = std::to_string(l) + "." + std::to_string(h);
      hr.scores = finish(acc[std::size_t(l) * NH + h]);
      hr.scores.copying = {copying[std::size_t(l) * NH + h], 0.0};
      hr.scores.has_weights = true;
      report.heads.push_back(std::move(hr));
    }
  rank(report);
  return report;
}

ScanReport scan_constructed_heads(const std::vector<std::string>& natural_words, const ScanOptions& o) {
  const std::string bos = "<|endoftext|>";
  const int W = o.window_length > 0 ? o.window_length : 40;
  // the word probes: held-out words in windows, and "w0".."w999" as random tokens
  std::vector<std::vector<std::string>> natural;
  const int n_windows = std::max(1, o.natural_windows);
  const int words = static_cast<int>(natural_words.size());
  for (int i = 0; i < n_windows && words > 0; ++i) {
    std::vector<std::string> w = {bos};
    const int start = words > W ? (words - (W - 1)) * i / std::max(1, n_windows - 1) : 0;
    for (int k = start; k < std::min(words, start + W - 1); ++k) w.push_back(natural_words[k]);
    natural.push_back(std::move(w));
  }
  const int R = o.repeat_length > 0 ? o.repeat_length : std::min(50, (W - 1) / 2);
  std::uint64_t state = o.seed * 0x2545F4914F6CDD1Dull + 1;
  auto word_ids_to_tokens = [&](const std::vector<int>& ids) {
    std::vector<std::string> t;
    for (int id : ids) t.push_back(id == 1000 ? bos : "w" + std::to_string(id));
    return t;
  };

  ScanReport report;
  report.repeat_length = R;
  const auto& heads = core::constructed_heads();
  std::vector<HeadAccumulators> acc(heads.size());
  auto pattern_of = [](core::HeadKind kind, const std::vector<std::string>& tokens) {
    core::AttentionPattern ap = core::compute_pattern(kind, tokens, /*mask=*/true);
    std::vector<float> full(ap.weights.data.begin(), ap.weights.data.end());
    return full;
  };
  for (std::size_t k = 0; k < heads.size(); ++k) {
    for (const auto& tokens : natural) {
      std::vector<float> full = pattern_of(heads[k].kind, tokens);
      std::vector<bool> punct;
      for (const auto& t : tokens) punct.push_back(core::is_punctuation(t));
      score_natural(acc[k], PatternView{full.data(), static_cast<int>(tokens.size())}, punct);
    }
  }
  for (int i = 0; i < std::max(1, o.random_probes); ++i) {
    std::vector<int> rep = copies(1000, random_tokens(R, 1000, 1000, state), 2);
    std::vector<int> three = copies(1000, random_tokens(std::max(1, std::min(R, (W - 1) / 3)), 1000, 1000, state), 3);
    for (std::size_t k = 0; k < heads.size(); ++k) {
      std::vector<float> full = pattern_of(heads[k].kind, word_ids_to_tokens(rep));
      PatternView p{full.data(), static_cast<int>(rep.size())};
      acc[k].duplicate_token.add(duplicate_token_score(p, R));
      acc[k].induction.add(induction_score(p, R));
      std::vector<float> full3 = pattern_of(heads[k].kind, word_ids_to_tokens(three));
      acc[k].prefix_matching.add(prefix_matching_score(PatternView{full3.data(), static_cast<int>(three.size())}, three));
    }
  }
  for (const auto& tokens : natural) report.natural_tokens += static_cast<int>(tokens.size()) - 1;
  for (std::size_t k = 0; k < heads.size(); ++k) {
    HeadReport hr;
    hr.layer = 0;
    hr.head = static_cast<int>(k);
    hr.name = heads[k].name;
    hr.scores = finish(acc[k]);
    hr.scores.has_weights = false;
    report.heads.push_back(std::move(hr));
  }
  rank(report);
  return report;
}

std::vector<Label> label_head(const HeadScores& s) {
  std::vector<Label> labels;
  auto consider = [&](const char* name, double score, double threshold) {
    if (score >= threshold) labels.push_back({name, score, threshold});
  };
  consider("previous_token", s.previous_token.score, 0.4);
  consider("current_token", s.current_token.score, 0.4);
  consider("duplicate_token", s.duplicate_token.score, 0.3);
  // an induction head attends to the token after the earlier copy; when the weights are
  // known it must also copy (positive OV eigenvalues) to earn the label
  if (!s.has_weights || s.copying.score > 0.0) consider("induction", s.induction.score, 0.3);
  consider("prefix_matching", s.prefix_matching.score, 0.3);
  consider("punctuation", s.punctuation.score, std::max(0.4, 2.0 * s.punctuation.chance));
  // the first token: a sink parks there without reading it (its value-weighted share is
  // well below its attention share); a head that reads it is labelled first_token
  if (s.first_token.score >= 0.5) {
    const bool parks = s.has_weights && s.first_token_value_weighted.score < 0.5 * s.first_token.score;
    labels.push_back({parks ? "sink" : "first_token", s.first_token.score, 0.5});
  }
  std::stable_sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.margin() > b.margin(); });
  return labels;
}

BestHead best_head(const ScanReport& r, Scored HeadScores::*member) {
  BestHead best;
  best.score = -1e9;
  for (const HeadReport& h : r.heads)
    if ((h.scores.*member).score > best.score) best = {(h.scores.*member).score, h.layer, h.head};
  return best;
}

}  // namespace headlab::analysis
