// server/api/handlers/lens_handlers.h — the routes that read a model's computation and weights
// (docs/api.md, "Logit lens, attribution and composition") as plain functions from a typed
// request to a Result: POST /api/model/lens, POST /api/model/attribute, GET or POST
// /api/model/compose. Each runs research/ (text_measures.h, composition.h) in the inference
// pool's turns, within this server's token limit. No HTTP, no JSON here.
#pragma once

#include <optional>
#include <string>

#include "research/composition.h"
#include "research/text_measures.h"
#include "server/model_service/model_service.h"
#include "util/result.h"

namespace headlab::server {

// The most multiply-adds a circuit request may cost (research::head_circuits_cost, 2 V^2 HS and
// the vocabulary factors; every head's copying score likewise): GPT-2 small's 3.2e11 is
// refused with its cost and the CLI named; the built-in model's 1.1e9 is not.
inline constexpr double kMaxCircuitWork = 2e10;
// The lens's unembeddings ((L + 1) T C V) and the composition scores (research::composition_cost:
// the factors, the products, the random baseline) past this are refused with their cost: GPT-2
// small's lens of 256 tokens (1.3e11) and its scores (1e11 with 64 baseline samples) fit.
inline constexpr double kMaxMeasureWork = 2e11;

// POST /api/model/lens: {"text" | "ids", "bos", "truncate", "answers": [" Mary"], "top_k"}
Result<research::LensTextAnswer> handle_model_lens(ModelService& model, research::LensTextRequest request);
// POST /api/model/attribute: {"text" | "ids", "bos", "truncate", "answer", "wrong", "position"},
// or a batch: {"prompts": [{"text", "answer", "wrong"}], "bos", "truncate", "answer", "wrong"}.
inline constexpr std::size_t kMaxAttributePrompts = 64;
struct AttributeRequest {
  research::AttributionTextRequest one;
  std::optional<research::AttributionBatchRequest> batch;  // set: the batch, `one` unused
};
struct AttributeAnswer {
  std::optional<research::AttributionTextAnswer> one;
  std::optional<research::AttributionBatchAnswer> batch;
};
Result<AttributeAnswer> handle_model_attribute(ModelService& model, AttributeRequest request);

// GET /api/model/compose?kind=k&fold_ln=true&threshold=0.15&circuit=1.2&top=10&copying=true, or POST
// the same fields as JSON ({"kind", "fold_ln", "threshold", "circuit": "1.2", "top", "copying",
// "baseline_samples"}).
struct ComposeRequest {
  std::string kind = "all";                // q, k, v or all
  bool fold_ln = false;
  std::optional<double> threshold;         // list the edges scoring at least this
  std::optional<std::pair<int, int>> circuit;  // a head's OV and QK circuits too
  bool copying = false;                    // every head's copying score too ((L, NH), 2 V C HS each)
  int top = 10;
  int baseline_samples = 64;
};
struct ComposeAnswer {
  ComposeRequest request;
  research::CompositionScores scores;
  std::optional<research::HeadCircuits> circuits;
  std::vector<double> copying;  // (L, NH) when asked
};
// Every head's copying score into a.copying (what `copying` asks). Errors: copying_score's.
Status compose_copying(const model::Parameters& params, ComposeAnswer& a);
// Errors: invalid_argument (a head that does not exist, top or baseline_samples out of range),
// too_long (a circuit or every head's copying score over kMaxCircuitWork, the scores over
// kMaxMeasureWork: the message gives the cost, how to narrow it and the CLI command).
Result<ComposeAnswer> handle_model_compose(ModelService& model, const ComposeRequest& request);

}  // namespace headlab::server
