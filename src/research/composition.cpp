// research/composition.cpp — composition scores and a head's OV/QK circuits (see
// composition.h). The (C, C) products are never formed: each weight W (C, HS) enters through
// its Gram factor R (W^T W = R^T R), and each (V, V) circuit is streamed in row blocks.
#include "research/composition.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>

#include "model/blas.h"
#include "model/head_range.h"

namespace headlab::research {

std::string_view composition_kind_name(CompositionKind k) {
  switch (k) {
    case CompositionKind::q: return "q";
    case CompositionKind::k: return "k";
    case CompositionKind::v: return "v";
  }
  return "";
}

const std::vector<float>& CompositionScores::of(CompositionKind kind) const {
  return kind == CompositionKind::q ? q : kind == CompositionKind::k ? k : v;
}

namespace {

using model::ParameterTensors;

// Every head of layer `l` in TL's orientation (see HeadWeights), raw or folded.
std::vector<HeadWeights> layer_heads(const model::Parameters& p, int l, bool fold_ln) {
  const model::ModelConfig& c = p.config;
  const int C = c.n_embd, NH = c.n_head, HS = c.head_size(), D = c.q_width(), QKV = c.qkv_width(), NKV = c.kv_heads();
  std::vector<float> qkv(std::size_t(QKV) * C), proj(std::size_t(C) * D);
  model::parameters_read_rows(p, &ParameterTensors::qkvw, l, 0, QKV, qkv.data());     // (QKV, C)
  model::parameters_read_rows(p, &ParameterTensors::attprojw, l, 0, C, proj.data());  // (C, D)
  const bool ln = c.norm == model::ModelConfig::Norm::layernorm;
  std::vector<HeadWeights> heads(static_cast<std::size_t>(NH));
  for (int h = 0; h < NH; h++) {
    HeadWeights& w = heads[std::size_t(h)];
    w.C = C, w.HS = HS;
    const int kvh = c.kv_head_of(h);
    // (C, HS) from the rows [row0, row0 + HS) of qkvw (QKV, C): transposed
    auto reading = [&](std::vector<float>& W, int row0) {
      W.resize(std::size_t(C) * HS);
      for (int j = 0; j < HS; j++)
        for (int i = 0; i < C; i++) W[std::size_t(i) * HS + j] = qkv[std::size_t(row0 + j) * C + i];
      if (!fold_ln) return;
      for (int i = 0; i < C; i++) {  // ln_1's weight into the rows it scales
        const float g = p.t.ln1w[std::size_t(l) * C + i] + (c.norm_plus_one ? 1.0f : 0.0f);
        for (int j = 0; j < HS; j++) W[std::size_t(i) * HS + j] *= g;
      }
      if (!ln) return;
      for (int j = 0; j < HS; j++) {  // centred over C: LayerNorm removes the mean anyway
        double mean = 0;
        for (int i = 0; i < C; i++) mean += W[std::size_t(i) * HS + j];
        mean /= C;
        for (int i = 0; i < C; i++) W[std::size_t(i) * HS + j] -= static_cast<float>(mean);
      }
    };
    reading(w.W_Q, h * HS);
    reading(w.W_K, D + kvh * HS);
    reading(w.W_V, D + NKV * HS + kvh * HS);
    w.W_O.resize(std::size_t(HS) * C);  // (HS, C) from columns h*HS.. of attprojw (C, D)
    for (int j = 0; j < HS; j++) {
      double mean = 0;
      for (int i = 0; i < C; i++) mean += w.W_O[std::size_t(j) * C + i] = proj[std::size_t(i) * D + h * HS + j];
      mean /= C;
      if (fold_ln && ln)  // centre the writing weights: what the next LayerNorm would remove
        for (int i = 0; i < C; i++) w.W_O[std::size_t(j) * C + i] -= static_cast<float>(mean);
    }
  }
  return heads;
}

// R (n, n) with R^T R = W^T W, for W (rows, n) row-major: the R of W = QR (Householder, LAPACK's
// dgeqrf: W^T W = R^T Q^T Q R, for a W of any rank, without forming W^T W or an eigensolve).
// Upper-triangular; with rows < n its last n - rows rows are zero. transposed: W is given as
// (n, rows) (R^T R = W W^T).
std::vector<double> gram_factor(const float* W, int rows, int n, bool transposed) {
  // A (rows, n) column-major: W^T's row-major layout, so the transposed case is a plain copy
  std::vector<double> A(std::size_t(rows) * n);
  if (transposed)
    for (std::size_t i = 0; i < A.size(); i++) A[i] = W[i];
  else
    for (int i = 0; i < rows; i++)
      for (int a = 0; a < n; a++) A[std::size_t(a) * rows + i] = W[std::size_t(i) * n + a];
  const int k = std::min(rows, n);
  std::vector<double> tau(static_cast<std::size_t>(std::max(1, k)));
  const int info = model::lapack_dgeqrf(rows, n, A.data(), rows, tau.data());
  std::vector<double> R(std::size_t(n) * n, 0.0);
  if (info != 0) return R;  // only for an illegal argument; a zero factor scores 0
  for (int a = 0; a < k; a++)
    for (int b = a; b < n; b++) R[std::size_t(a) * n + b] = A[std::size_t(b) * rows + a];
  return R;
}

// out (n, cols) = R (n, n) @ X (n, cols), R upper-triangular
void left_multiply(float* out, const std::vector<double>& R, const float* X, int n, int cols) {
  std::vector<double> B(X, X + std::size_t(n) * cols);
  model::blas_dtrmm_upper(true, false, n, cols, R.data(), n, B.data(), cols);
  for (std::size_t i = 0; i < B.size(); i++) out[i] = static_cast<float>(B[i]);
}
// out (rows, n) = X (rows, n) @ R^T, written into columns [col0, col0 + n) of a row of `ld`
void right_multiply_t(float* out, int ld, int col0, const float* X, const std::vector<double>& R, int rows, int n) {
  std::vector<double> B(X, X + std::size_t(rows) * n);
  model::blas_dtrmm_upper(false, true, rows, n, R.data(), n, B.data(), n);
  for (int i = 0; i < rows; i++)
    for (int a = 0; a < n; a++) out[std::size_t(i) * ld + col0 + a] = static_cast<float>(B[std::size_t(i) * n + a]);
}

double frobenius(const float* X, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; i++) s += double(X[i]) * X[i];
  return std::sqrt(s);
}

// A sender's left factor R_V W_O (HS, C): ||OV X||_F = ||R_V W_O X||_F for any X.
void sender_factor(float* out, const HeadWeights& w) {
  left_multiply(out, gram_factor(w.W_V.data(), w.C, w.HS, false), w.W_O.data(), w.HS, w.C);
}
// A receiver's right factor (C, HS) for each kind: Q  W_Q R_K^T,  K  W_K R_Q^T,  V  W_V R_O^T.
void receiver_factor(float* out, int ld, int col0, const HeadWeights& w, CompositionKind kind) {
  const int C = w.C, HS = w.HS;
  switch (kind) {
    case CompositionKind::q:
      right_multiply_t(out, ld, col0, w.W_Q.data(), gram_factor(w.W_K.data(), C, HS, false), C, HS);
      break;
    case CompositionKind::k:
      right_multiply_t(out, ld, col0, w.W_K.data(), gram_factor(w.W_Q.data(), C, HS, false), C, HS);
      break;
    case CompositionKind::v:
      right_multiply_t(out, ld, col0, w.W_V.data(), gram_factor(w.W_O.data(), C, HS, true), C, HS);
      break;
  }
}

// splitmix64 and Box-Muller (both of a pair's outputs): a seeded Gaussian stream, the same on
// every platform.
struct Gaussian {
  std::uint64_t state;
  double spare = 0;
  bool has_spare = false;
  double operator()() {
    if (has_spare) return has_spare = false, spare;
    auto next = [&] {
      std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      return double((z ^ (z >> 31)) >> 11) * (1.0 / 9007199254740992.0);
    };
    const double u = 1.0 - next(), v = next();
    const double r = std::sqrt(-2.0 * std::log(u)), theta = 6.283185307179586 * v;
    spare = r * std::sin(theta), has_spare = true;
    return r * std::cos(theta);
  }
};

}  // namespace

HeadWeights head_weights(const model::Parameters& params, int layer, int head, bool fold_ln) {
  return std::move(layer_heads(params, layer, fold_ln)[std::size_t(head)]);
}

namespace {

// The unit is a multiply-add of OpenBLAS's sgemm; the pace of the rest in that unit (measured
// on the shapes of tests/research/composition_test.cpp's cost test; see composition_cost).
constexpr double kDouble = 2;       // a multiply-add of dgemm, dtrmm or dgeqrf: half sgemm's pace
constexpr double kPlainStep = 4;    // a step of a plain loop over doubles (copies, norms, sums)
constexpr double kGaussian = 300;   // a Gaussian draw (splitmix64, a log, a square root, a sine)
constexpr double kScanStep = 16;    // a step of top_pairs' scan (two compares, a rare heap push)

// A (rows, n) QR (Householder: k^2 (max - k/3), k = min(rows, n)) and the triangular product with
// the other weight (n^2 rows / 2), with the copies to and from double.
double factor_cost(double rows, double n) {
  const double k = std::min(rows, n);
  return kDouble * (k * k * (std::max(rows, n) - k / 3) + n * n * rows / 2) + kPlainStep * 4 * rows * n;
}
// layer_heads: a layer's qkvw and attprojw read, each head's four (C, HS) transposed (and folded)
double layer_read_cost(const model::ModelConfig& c, bool fold_ln) {
  return kPlainStep * (double(c.qkv_width() + c.q_width()) * c.n_embd +
                       double(c.n_head) * 4 * c.n_embd * c.head_size() * (fold_ln ? 3 : 1));
}
// an (HS, HS) nonsymmetric eigensolve without vectors (Hessenberg reduction and QR iterations)
double eigen_cost(double HS) { return 10 * HS * HS * HS; }

}  // namespace

CompositionCost composition_cost(const model::ModelConfig& c, const CompositionOptions& o) {
  const double L = c.n_layer, NH = c.n_head, C = c.n_embd, HS = c.head_size();
  const double pairs = L * (L - 1) / 2 * NH * NH;
  CompositionCost w;
  w.weights = (2 * L - 1) * layer_read_cost(c, o.fold_ln);  // as senders, then as receivers
  // senders: a factor and its norm; receivers: three factors and their norms
  w.factors = L * NH * (factor_cost(C, HS) + kPlainStep * C * HS) + (L - 1) * NH * 3 * (factor_cost(C, HS) + kPlainStep * C * HS);
  w.products = 3 * pairs * (C * HS * HS + kPlainStep * HS * HS);
  const double sample = 4 * C * HS * kGaussian + 2 * factor_cost(C, HS) + C * HS * HS + kPlainStep * (2 * C * HS + HS * HS);
  w.baseline = std::max(1, o.baseline_samples) * sample;
  return w;
}

Result<CompositionScores> composition_scores(const model::Parameters& params, const CompositionOptions& o) {
  const model::ModelConfig& c = params.config;
  if (o.baseline_samples < 1 || o.baseline_samples > 10000)
    return make_error(ErrorCode::invalid_argument,
                      "baseline_samples must be in 1..10000, got " + std::to_string(o.baseline_samples));
  const int L = c.n_layer, NH = c.n_head, C = c.n_embd, HS = c.head_size();
  const std::size_t block = std::size_t(HS) * C;  // one head's factor
  CompositionScores s;
  s.L = L, s.NH = NH, s.fold_ln = o.fold_ln;
  const std::size_t n = std::size_t(L) * NH * L * NH;
  s.q.assign(n, 0.0f), s.k.assign(n, 0.0f), s.v.assign(n, 0.0f);

  // 1. every head's weights, its sender factor (HS, C) and that factor's norm ||OV||_F
  //    (one layer's weights at a time, read again as receivers: every layer's at once is four
  //    times P's memory)
  std::vector<float> P(std::size_t(L) * NH * block);  // (L, NH*HS, C)
  std::vector<double> ov_norm(std::size_t(L) * NH);
  for (int l = 0; l < L; l++) {
    const std::vector<HeadWeights> heads = layer_heads(params, l, o.fold_ln);
    for (int h = 0; h < NH; h++) {
      float* Ph = P.data() + (std::size_t(l) * NH + h) * block;
      sender_factor(Ph, heads[std::size_t(h)]);
      ov_norm[std::size_t(l) * NH + h] = frobenius(Ph, block);
    }
  }
  // 2. per receiver layer and kind: its heads' right factors (C, NH*HS), then one product
  //    with every earlier layer's senders: Y (NH*HS, NH*HS), a (HS, HS) block per pair
  const int W = NH * HS;
  std::vector<float> Rx(std::size_t(C) * W), Y(std::size_t(W) * W);
  std::vector<double> right_norm(static_cast<std::size_t>(NH));
  for (int l2 = 1; l2 < L; l2++) {
    const std::vector<HeadWeights> heads = layer_heads(params, l2, o.fold_ln);
    for (CompositionKind kind : {CompositionKind::q, CompositionKind::k, CompositionKind::v}) {
      for (int h2 = 0; h2 < NH; h2++) {
        receiver_factor(Rx.data(), W, h2 * HS, heads[std::size_t(h2)], kind);
        double ss = 0;
        for (int i = 0; i < C; i++)
          for (int j = 0; j < HS; j++) ss += double(Rx[std::size_t(i) * W + h2 * HS + j]) * Rx[std::size_t(i) * W + h2 * HS + j];
        right_norm[std::size_t(h2)] = std::sqrt(ss);
      }
      std::vector<float>& out = kind == CompositionKind::q ? s.q : kind == CompositionKind::k ? s.k : s.v;
      for (int l1 = 0; l1 < l2; l1++) {
        model::blas_sgemm(false, false, W, W, C, 1.0f, P.data() + std::size_t(l1) * NH * block, C, Rx.data(), W, 0.0f,
                          Y.data(), W);
        for (int h1 = 0; h1 < NH; h1++)
          for (int h2 = 0; h2 < NH; h2++) {
            double ss = 0;
            for (int i = 0; i < HS; i++)
              for (int j = 0; j < HS; j++) {
                const double y = Y[std::size_t(h1 * HS + i) * W + h2 * HS + j];
                ss += y * y;
              }
            const double den = ov_norm[std::size_t(l1) * NH + h1] * right_norm[std::size_t(h2)];
            out[((std::size_t(l1) * NH + h1) * L + l2) * NH + h2] = den > 0 ? static_cast<float>(std::sqrt(ss) / den) : 0.0f;
          }
      }
    }
    if (o.progress) o.progress(l2, L - 1);
  }

  // 3. the random baseline: Gaussian W_V, W_O (sender) and W_Q, W_K (receiver) of these shapes
  Gaussian g{o.seed};
  HeadWeights a, b;
  a.C = b.C = C, a.HS = b.HS = HS;
  auto fill = [&](std::vector<float>& v, std::size_t n) {
    v.resize(n);
    for (float& x : v) x = static_cast<float>(g());
  };
  std::vector<float> Pa(block), Rb(block), Yab(std::size_t(HS) * HS);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < o.baseline_samples; i++) {
    fill(a.W_V, block), fill(a.W_O, block), fill(b.W_Q, block), fill(b.W_K, block);
    sender_factor(Pa.data(), a);
    receiver_factor(Rb.data(), HS, 0, b, CompositionKind::q);
    model::blas_sgemm(false, false, HS, HS, C, 1.0f, Pa.data(), C, Rb.data(), HS, 0.0f, Yab.data(), HS);
    const double score = frobenius(Yab.data(), Yab.size()) / (frobenius(Pa.data(), block) * frobenius(Rb.data(), block));
    sum += score, sum2 += score * score;
  }
  const double mean = sum / o.baseline_samples;
  s.baseline_mean = static_cast<float>(mean);
  s.baseline_std = static_cast<float>(std::sqrt(std::max(0.0, sum2 / o.baseline_samples - mean * mean)));
  s.baseline_samples = o.baseline_samples;
  return s;
}

// ---- circuits -------------------------------------------------------------------------------

double head_circuits_cost(const model::ModelConfig& c) {
  const double V = c.vocab_size, C = c.n_embd, HS = c.head_size();
  return layer_read_cost(c, true) + 4 * V * C * HS + kPlainStep * 3 * V * C  // the vocabulary factors
         + 2 * V * V * HS + kScanStep * 2 * V * V + kPlainStep * V * HS   // the two circuits' top pairs
         + kPlainStep * V * HS * HS + eigen_cost(HS);                     // the OV eigenvalues
}

double copying_score_cost(const model::ModelConfig& c) {
  const double V = c.vocab_size, C = c.n_embd, HS = c.head_size();
  return layer_read_cost(c, true) + 2 * V * C * HS + kPlainStep * 3 * V * C + kPlainStep * V * HS * HS + eigen_cost(HS);
}

namespace {

// The k largest entries of X = A (V, HS) @ B (HS, V), streamed in row blocks; also how many
// rows have their largest entry on the diagonal.
void top_pairs(const float* A, const float* B, int V, int HS, int k, std::vector<TokenPair>& top, int* self_top1,
               const std::function<void(int)>& rows_done) {
  auto worse = [](const TokenPair& x, const TokenPair& y) { return x.value > y.value; };
  std::priority_queue<TokenPair, std::vector<TokenPair>, decltype(worse)> heap(worse);  // the smallest kept on top
  const int nb = 256;
  std::vector<float> Y(std::size_t(nb) * V);
  int self = 0;
  float floor = -std::numeric_limits<float>::infinity();  // the smallest kept, once k are kept
  for (int r0 = 0; r0 < V; r0 += nb) {
    const int n = std::min(nb, V - r0);
    model::blas_sgemm(false, false, n, V, HS, 1.0f, A + std::size_t(r0) * HS, HS, B, V, 0.0f, Y.data(), V);
    for (int i = 0; i < n; i++) {
      const float* row = Y.data() + std::size_t(i) * V;
      int best = 0;
      for (int j = 0; j < V; j++) {
        if (row[j] > row[best]) best = j;
        if (row[j] <= floor) continue;
        if (int(heap.size()) == k) heap.pop();
        heap.push({r0 + i, j, row[j]});
        if (int(heap.size()) == k) floor = heap.top().value;
      }
      if (best == r0 + i) self++;
    }
    if (rows_done) rows_done(r0 + n);
  }
  top.clear();
  while (!heap.empty()) top.push_back(heap.top()), heap.pop();
  std::reverse(top.begin(), top.end());
  if (self_top1) *self_top1 = self;
}

}  // namespace

namespace {

// A head's four vocabulary factors, streamed over the vocabulary in row blocks:
//   EV = W_E W_V, EQ = W_E W_Q, EK = W_E W_K (V, HS);  OU = W_O W_U (HS, V)
// (EQ and EK only when asked: the copying score needs EV and OU alone.)
struct VocabFactors {
  std::vector<float> EV, EQ, EK, OU;
};
VocabFactors vocab_factors(const model::Parameters& params, const HeadWeights& w, bool fold_ln, bool qk) {
  const model::ModelConfig& c = params.config;
  const int V = c.vocab_size, C = c.n_embd, HS = c.head_size();
  const bool ln = c.norm == model::ModelConfig::Norm::layernorm;
  VocabFactors f;
  f.EV.resize(std::size_t(V) * HS);
  if (qk) f.EQ.resize(f.EV.size()), f.EK.resize(f.EV.size());
  f.OU.resize(std::size_t(HS) * V);
  const int nb = 256;
  std::vector<float> rows(std::size_t(nb) * C);
  for (int r0 = 0; r0 < V; r0 += nb) {
    const int n = std::min(nb, V - r0);
    model::parameters_read_rows(params, &model::ParameterTensors::wte, 0, r0, n, rows.data());  // (n, C)
    if (fold_ln && ln)  // centred embeddings (center_writing_weights)
      for (int i = 0; i < n; i++) {
        double mean = 0;
        for (int j = 0; j < C; j++) mean += rows[std::size_t(i) * C + j];
        mean /= C;
        for (int j = 0; j < C; j++) rows[std::size_t(i) * C + j] -= static_cast<float>(mean);
      }
    model::blas_sgemm(false, false, n, HS, C, 1.0f, rows.data(), C, w.W_V.data(), HS, 0.0f, f.EV.data() + std::size_t(r0) * HS, HS);
    if (qk) {
      model::blas_sgemm(false, false, n, HS, C, 1.0f, rows.data(), C, w.W_Q.data(), HS, 0.0f, f.EQ.data() + std::size_t(r0) * HS, HS);
      model::blas_sgemm(false, false, n, HS, C, 1.0f, rows.data(), C, w.W_K.data(), HS, 0.0f, f.EK.data() + std::size_t(r0) * HS, HS);
    }
    model::parameters_read_rows(params, model::parameters_unembedding_tensor(c), 0, r0, n, rows.data());  // W_U^T (n, C)
    if (fold_ln)  // ln_final's weight into W_U
      for (int i = 0; i < n; i++)
        for (int j = 0; j < C; j++) rows[std::size_t(i) * C + j] *= params.t.lnfw[j] + (c.norm_plus_one ? 1.0f : 0.0f);
    model::blas_sgemm(false, true, HS, n, C, 1.0f, w.W_O.data(), C, rows.data(), C, 0.0f, f.OU.data() + r0, V);
  }
  return f;
}

// The OV circuit's nonzero eigenvalues, those of OU @ EV (HS, HS), largest |lambda| first, and
// the copying score sum(Re lambda) / sum(|lambda|).
Status ov_eigenvalues(const VocabFactors& f, int V, int HS, std::vector<std::complex<double>>& out, double& copying) {
  std::vector<double> M(std::size_t(HS) * HS, 0.0);
  for (int i = 0; i < HS; i++)
    for (int v = 0; v < V; v++) {
      const double ou = f.OU[std::size_t(i) * V + v];
      const float* ev = f.EV.data() + std::size_t(v) * HS;
      for (int j = 0; j < HS; j++) M[std::size_t(i) * HS + j] += ou * ev[j];
    }
  std::vector<double> wr(static_cast<std::size_t>(HS)), wi(static_cast<std::size_t>(HS));
  const int info = model::lapack_dgeev_values(HS, M.data(), HS, wr.data(), wi.data());
  if (info != 0)
    return make_error(ErrorCode::internal, "LAPACK's dgeev did not converge on an OV circuit (info " + std::to_string(info) + ")");
  double sum = 0, abs_sum = 0;
  out.clear();
  for (int i = 0; i < HS; i++) {
    out.emplace_back(wr[std::size_t(i)], wi[std::size_t(i)]);
    sum += wr[std::size_t(i)];
    abs_sum += std::hypot(wr[std::size_t(i)], wi[std::size_t(i)]);
  }
  std::sort(out.begin(), out.end(),
            [](const std::complex<double>& x, const std::complex<double>& y) { return std::abs(x) > std::abs(y); });
  copying = abs_sum > 0 ? sum / abs_sum : 0.0;
  return {};
}

}  // namespace

Result<double> copying_score(const model::Parameters& params, int layer, int head, bool fold_ln) {
  const model::ModelConfig& c = params.config;
  if (Status st = model::check_layer_head(c, layer, head); !st) return tl::unexpected(st.error());
  const VocabFactors f = vocab_factors(params, head_weights(params, layer, head, fold_ln), fold_ln, false);
  std::vector<std::complex<double>> eig;
  double copying = 0;
  if (Status st = ov_eigenvalues(f, c.vocab_size, c.head_size(), eig, copying); !st) return tl::unexpected(st.error());
  return copying;
}

Result<HeadCircuits> head_circuits(const model::Parameters& params, int layer, int head, const CircuitOptions& o) {
  const model::ModelConfig& c = params.config;
  if (Status st = model::check_layer_head(c, layer, head); !st) return tl::unexpected(st.error());
  if (o.top < 1 || o.top > 1000)
    return make_error(ErrorCode::invalid_argument, "top must be in 1..1000, got " + std::to_string(o.top));
  const int V = c.vocab_size, HS = c.head_size();
  const VocabFactors f = vocab_factors(params, head_weights(params, layer, head, o.fold_ln), o.fold_ln, true);

  HeadCircuits r;
  r.layer = layer, r.head = head, r.fold_ln = o.fold_ln;
  // the top pairs of OV = EV @ OU and QK = EQ @ EK^T
  int self = 0;
  auto rows = [&](int offset) {
    return [&o, offset, V](int done) {
      if (o.progress) o.progress(offset + done, 2 * V);
    };
  };
  top_pairs(f.EV.data(), f.OU.data(), V, HS, o.top, r.ov_top, &self, rows(0));
  r.ov_self_top1 = static_cast<float>(double(self) / V);
  std::vector<float> KE(std::size_t(HS) * V);  // EK^T (HS, V)
  for (int v = 0; v < V; v++)
    for (int j = 0; j < HS; j++) KE[std::size_t(j) * V + v] = f.EK[std::size_t(v) * HS + j];
  top_pairs(f.EQ.data(), KE.data(), V, HS, o.top, r.qk_top, nullptr, rows(V));
  if (Status st = ov_eigenvalues(f, V, HS, r.ov_eigenvalues, r.copying_score); !st) {
    st.error().message += " (head " + std::to_string(layer) + "." + std::to_string(head) + ")";
    return tl::unexpected(st.error());
  }
  return r;
}

}  // namespace headlab::research
