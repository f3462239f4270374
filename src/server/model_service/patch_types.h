// server/model_service/patch_types.h — the typed request and answer of POST /api/model/patch
// (docs/api.md); `headlab patch` fills the same answer, so both print the same JSON.
#pragma once

#include <optional>
#include <vector>

#include "research/attribution_patching.h"
#include "research/patching.h"
#include "research/prompts.h"
#include "server/model_service/model_types.h"
#include "tokenizer/bpe_tokenizer.h"

namespace headlab::server {

struct ModelPatchRequest {
  // one pair ("clean", "corrupted", "answer", "wrong") or a batch ("prompts": [{…}, …])
  std::vector<research::PromptPair> prompts;
  // or one pair as ids ("clean_ids", "corrupted_ids", used as given: no BOS added); the answer
  // and wrong token are then prompts[0]'s
  std::vector<int> clean_ids, corrupted_ids;
  std::optional<bool> bos;  // omitted: the family's rule (ModelConfig::default_prepend_bos)
  research::PatchWhat what = research::PatchWhat::resid_pre;
  research::PatchMetric metric = research::PatchMetric::logit_diff;
  bool noising = false;
  std::vector<int> layers;     // empty: every layer
  std::vector<int> positions;  // empty: every position
  std::optional<research::LossPositions> loss_positions;  // "loss_positions": the loss metric's [from, to)
  std::vector<SteerSpec> steer;  // added in every run of the sweep, as in intervene
  // "method": activation (one patched run per index) or attribution (research/attribution_patching.h)
  research::PatchMethod method = research::PatchMethod::activation;
};

struct ModelPatchResult {
  research::PatchResult result;
  std::vector<model::Token> tokens;            // the first pair's clean prompt (the pos axis' labels)
  std::vector<model::Token> corrupted_tokens;  // the first pair's corrupted prompt
  int pairs = 0;
  research::PatchMethod method = research::PatchMethod::activation;  // said in the JSON when attribution
};

}  // namespace headlab::server
