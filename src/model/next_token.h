// model/next_token.h — what the logits say about the next token: the row log-softmax,
// the loss of the token that came, and the most likely tokens.
//   log p_v = x_v - log sum_j exp(x_j)      (the max is subtracted first: exp overflows)
//   loss_t  = -log p(ids[t+1] | ids[0..t])
//
//   std::vector<float> losses = next_token_losses(out.logits, ids, out.V);   // (T-1)
//   std::vector<TokenChance> best = top_next(out.logits.data() + t * V, V, 5);
// The forward's loss, the server's outcome, `headlab run` and the scanner all use these.
#pragma once

#include <span>
#include <vector>

namespace headlab::model {

// log sum_v exp(row[v]), computed in double. row: (V), V >= 1.
double row_log_sum_exp(const float* row, int V);

// -log softmax(row)[target]: the loss of `target` under one row of logits. row: (V).
double token_loss(const float* row, int V, int target);

// The loss of ids[t+1] given the logits of position t, for t = 0..T-2. logits: (T, V)
// with T = ids.size(); returns (T-1) values, none when T < 2.
std::vector<float> next_token_losses(std::span<const float> logits, std::span<const int> ids, int V);

// The mean of next_token_losses (NaN when T < 2).
double mean_next_token_loss(std::span<const float> logits, std::span<const int> ids, int V);

// The indices of the k largest values of a row, largest first (ties: the smaller index).
std::vector<int> top_k(const float* row, int n, int k);

struct TokenChance {
  int id = 0;
  float logit = 0.0f;
  float prob = 0.0f;  // softmax(row)[id]
};
// The k most likely next tokens after one row of logits (V), most likely first.
std::vector<TokenChance> top_next(const float* row, int V, int k);
// The same with the row's row_log_sum_exp already computed (a caller that also wants the row's
// loss computes it once).
std::vector<TokenChance> top_next(const float* row, int V, int k, double log_sum_exp);

}  // namespace headlab::model
