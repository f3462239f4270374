// analysis/head_scores.h — published measures of what one attention head does, each
// computed from the head's (T, T) pattern on a probe input, next to its chance level
// (what a head attending uniformly to keys 0..q would score):
//   previous_token   mean_q p[q][q-1]                 natural text, q >= 2 (q-1 is not BOS)
//   current_token    mean_q p[q][q]                   natural text, q >= 1
//   first_token      mean_q p[q][0]                   natural text, q >= 1 (the sink)
//   duplicate_token  mean_q p[q][q-R]                 BOS + R random tokens + the same R again,
//   induction        mean_q p[q][q-R+1]               queries of the second copy only (the
//                                                     conditional form: each has a target)
//   prefix_matching  mean_q sum_{k: tok[k-1] = tok[q], k-1 < q} p[q][k]   (Olsson et al.
//                    2022) on three copies, so a query can have two earlier matches
//   entropy          mean_q H(p[q]) / log(q+1)        natural text; 1 = uniform, 0 = one key
//   punctuation      mean_q sum_{k punctuation} p[q][k]   natural text
// Two measures need the weights, not just the pattern (model/head_circuits in scanner.h):
// the OV copying score and the value-weighted first-token share.
//
//   PatternView p{pattern.data(), T};
//   double s = induction_score(p, /*R=*/50);
#pragma once

#include <string>
#include <vector>

namespace headlab::analysis {

// One head's pattern on one probe: row q holds keys 0..T-1, zeros above the diagonal.
struct PatternView {
  const float* p = nullptr;  // (T, T) row-major
  int T = 0;
  float at(int q, int k) const { return p[static_cast<long long>(q) * T + k]; }
};

// A score and what a uniform head would get on the same probe.
struct Scored {
  double score = 0.0;
  double chance = 0.0;
};

Scored previous_token_score(PatternView p);
Scored current_token_score(PatternView p);
Scored first_token_score(PatternView p);
// repeated probe: position 0 is BOS, positions 1..R the random tokens, R+1..2R the copy
Scored duplicate_token_score(PatternView p, int R);
Scored induction_score(PatternView p, int R);
// tokens (T): the probe's ids (any repetition structure)
Scored prefix_matching_score(PatternView p, const std::vector<int>& tokens);
// normalised entropy; chance is 1 (uniform)
Scored entropy_score(PatternView p);
// is_punct (T): whether each key is a punctuation token
Scored punctuation_score(PatternView p, const std::vector<bool>& is_punct);

// The copying score of an OV circuit from its eigenvalues (Elhage et al. 2021):
//   sum_i Re(lambda_i) / sum_i |lambda_i|  in [-1, 1]; positive: the head copies tokens.
// eig_re, eig_im: the eigenvalues.
double copying_score_from_eigenvalues(const std::vector<double>& eig_re, const std::vector<double>& eig_im);

// Eigenvalues of a real n x n matrix (row-major), by Hessenberg reduction and the shifted
// QR algorithm (Francis double shift). False if it did not converge.
bool eigenvalues(std::vector<double> a, int n, std::vector<double>& re, std::vector<double>& im);

}  // namespace headlab::analysis
