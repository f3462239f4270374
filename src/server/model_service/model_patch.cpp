// server/model_service/model_patch.cpp — POST /api/model/patch: the prompts as the model's
// tokens, the sweep's cost checked against the server's limit before anything runs (a refusal
// carries the narrower sweeps that fit: work_refusal.h), then the sweep in the inference pool's
// turns (research/patching.h, the pipeline `headlab patch` runs).
#include <chrono>
#include <cstdio>

#include "research/patch_input.h"
#include "research/attribution_patching.h"
#include "research/patch_narrowing.h"
#include "research/patching.h"
#include "server/model_service/model_service.h"
#include "server/model_service/work_refusal.h"

namespace headlab::server {
namespace {

std::string with_commas(std::size_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(std::size_t(i), ",");
  return s;
}

std::string scientific(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}

}  // namespace

Result<ModelPatchResult> ModelService::patch(const ModelPatchRequest& req) {
  const model::ModelConfig& c = params_.config;
  analysis::RunInputOptions io;
  io.bos = req.bos;
  io.max_tokens = info_.max_tokens;
  io.limit_name = "this server's limit";
  io.truncate_hint = "shorten the prompts";
  auto in = req.clean_ids.empty() && req.corrupted_ids.empty()
                ? research::patch_input_from_prompts(*tokenizer_, c, req.prompts, io, req.metric)
                : research::patch_input_from_ids(&*tokenizer_, c, req.clean_ids, req.corrupted_ids,
                                                 req.prompts.front().answer, req.prompts.front().wrong, io, req.metric);
  if (!in) return tl::unexpected(in.error());
  research::PatchRequest rq;
  rq.what = req.what;
  rq.metric = req.metric;
  rq.noising = req.noising;
  rq.layers = req.layers;
  rq.positions = req.positions;
  rq.loss_positions = req.loss_positions;
  auto steering = prepare_steering(req.steer, req.bos);
  if (!steering) return tl::unexpected(steering.error());
  rq.steering = steering->steering;  // checked with the request; ActAdd's rows come in the turn
  const bool attribution = req.method == research::PatchMethod::attribution;
  auto cost = attribution ? research::attribution_patch_cost(c, in->pairs, rq) : research::patch_cost(c, in->pairs, rq);
  if (!cost) return tl::unexpected(cost.error());
  const double limit = options_.max_patch_multiply_adds;
  if (cost->multiply_adds > limit) {
    // the narrower sweeps that fit, priced by the same cost function (research/patch_narrowing.h)
    auto narrowings = research::patch_narrowings(c, in->pairs, rq, req.method, limit);
    if (!narrowings) return tl::unexpected(narrowings.error());
    return tl::unexpected(work_refusal(
        "This sweep is " + with_commas(cost->forwards) + " forwards over " + std::to_string(in->pairs.size()) +
            (in->pairs.size() == 1 ? " prompt pair" : " prompt pairs") + ": " + with_commas(cost->block_tokens) +
            " block-tokens, about " + scientific(cost->multiply_adds) + " multiply-adds, more than this server's limit (" +
            scientific(limit) +
            "). Narrow it: fewer layers (\"layers\": [3, 4, 5]), fewer positions (\"positions\": [10, 11, 12]), fewer "
            "prompt pairs, or a sweep over heads at all positions instead of by position (z_all_pos, not z_by_pos); "
            "`headlab patch` on your own machine has no limit.",
        cost->multiply_adds, limit, *narrowings));
  }
  // A sweep still running when its request has given up (the pool's deadline) stops there,
  // freeing the worker for the next client.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.pool.timeout_ms);
  rq.keep_going = [deadline] { return std::chrono::steady_clock::now() < deadline; };
  // By value: a job that outlives a timed-out request must not read this frame.
  auto result = pool_->run<research::PatchResult>(
      [this, pairs = in->pairs, rq, attribution, steering = std::move(*steering)](model::Workspace& ws) mutable -> Result<research::PatchResult> {
        auto s = resolve_steering(std::move(steering), ws);
        if (!s) return tl::unexpected(s.error());
        rq.steering = std::move(*s);
        return attribution ? research::attribution_patch(params_, pairs, rq, ws) : research::patch(params_, pairs, rq, ws);
      });
  if (!result) return tl::unexpected(result.error());
  return ModelPatchResult{std::move(*result), std::move(in->clean.front().tokens),
                          std::move(in->corrupted.front().tokens), static_cast<int>(in->pairs.size()), req.method};
}

}  // namespace headlab::server
