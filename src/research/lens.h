// research/lens.h — the logit lens (nostalgebraist 2020): the residual stream read through
// the model's own final norm and unembedding after every layer, as TransformerLens's
// `cache.accumulated_resid(incl_mid=False, apply_ln=True)` followed by the unembedding:
//   entry l < L:  resid_pre of block l;   entry L:  resid_post of the last block ("final_post")
//   logits_l = ln_final(resid_l) @ W_U        ln_final's statistics recomputed per entry (TL >= 2.18)
//   Gemma 2:  logits_l = cap * tanh(logits_l / cap)   (the final soft-cap, applied as the model does)
// So entry L is the model's own output, and every entry is a distribution over the vocabulary.
//
//   LensRequest rq;  rq.top_k = 5;  rq.answers = {id_of_mary};
//   Result<LensResult> r = logit_lens(params, ids, rq, workspace);
//   const LensCell& c = r->cell(/*entry=*/1, /*position=*/T - 1);
//   c.top[0].id;  c.answers[0].rank;  c.kl_final;
#pragma once

#include <span>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/parameters.h"
#include "util/result.h"

namespace headlab::research {

struct LensRequest {
  int top_k = 5;             // 0..1000 tokens listed per cell
  std::vector<int> answers;  // token ids whose rank, probability and log-probability every cell reports
  bool incl_mid = false;     // TL's incl_mid: each block's resid_mid after its resid_pre (2L + 1 entries)
};

struct LensToken {
  int id = 0;
  float logit = 0.0f;  // after Gemma 2's soft-cap, as the model's
  float prob = 0.0f;
};

struct LensAnswer {
  int id = 0;
  int rank = 0;          // tokens with a larger logit (0 = the most likely; ties count in its favour)
  float logit = 0.0f;
  float prob = 0.0f;
  float logprob = 0.0f;  // natural log
};

// One entry (layer) at one position.
struct LensCell {
  std::vector<LensToken> top;       // (top_k) most likely first
  std::vector<LensAnswer> answers;  // in LensRequest::answers order
  float entropy = 0.0f;             // nats: -sum p log p
  float kl_final = 0.0f;            // nats: KL(final || this entry) = sum p_final (log p_final - log p_l)
};

struct LensResult {
  int entries = 0;                  // L + 1 (2L + 1 with incl_mid)
  int T = 0;
  std::vector<std::string> labels;  // (entries) TL's labels: "0_pre", ("0_mid",) "1_pre", ..., "final_post"
  std::vector<LensCell> cells;      // (entries, T)
  const LensCell& cell(int entry, int position) const { return cells[std::size_t(entry) * T + position]; }
};

// The multiply-adds of the lens's unembeddings at T tokens, (L + 1) T C V ((2L + 1) T C V with
// incl_mid): what a caller that bounds its work compares (the forward itself costs less).
double logit_lens_cost(const model::ModelConfig& config, int T, bool incl_mid = false);

// Runs the model once on `ids`, then reads each entry through ln_final and the unembedding
// (the forward itself from start_layer = L: the same norm, unembedding and soft-cap code).
// Errors: invalid_argument (top_k outside 0..1000, an answer id outside the vocabulary,
// incl_mid on a model without resid_mid: parallel or attention-only blocks), the forward's
// (empty input, an id outside the vocabulary, too_long).
Result<LensResult> logit_lens(const model::Parameters& params, std::span<const int> ids, const LensRequest& request,
                              model::Workspace& workspace);

}  // namespace headlab::research
