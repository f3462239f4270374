// server/api/handlers/path_patch_handlers.cpp — POST /api/model/path-patch (see path_patch_handlers.h).
#include "server/api/handlers/path_patch_handlers.h"

#include <chrono>
#include <cstdio>

#include "research/patch_input.h"
#include "research/patch_narrowing.h"
#include "server/model_service/work_refusal.h"

namespace headlab::server {

Result<ModelPathPatchResult> handle_model_path_patch(ModelService& m, const ModelPathPatchRequest& req) {
  const model::ModelConfig& c = m.parameters().config;
  analysis::RunInputOptions io;
  io.bos = req.input.bos;
  io.max_tokens = m.info().max_tokens;
  io.limit_name = "this server's limit";
  io.truncate_hint = "shorten the prompts";
  const ModelPatchRequest& in_req = req.input;
  auto in = in_req.clean_ids.empty() && in_req.corrupted_ids.empty()
                ? research::patch_input_from_prompts(m.tokenizer(), c, in_req.prompts, io, in_req.metric)
                : research::patch_input_from_ids(&m.tokenizer(), c, in_req.clean_ids, in_req.corrupted_ids,
                                                 in_req.prompts.front().answer, in_req.prompts.front().wrong, io,
                                                 in_req.metric);
  if (!in) return tl::unexpected(in.error());
  research::PathPatchRequest rq;
  rq.senders = req.senders;
  rq.receivers = req.receivers;
  rq.metric = in_req.metric;
  rq.loss_positions = in_req.loss_positions;
  rq.noising = req.noising;
  auto cost = research::path_patch_cost(c, in->pairs, rq);
  if (!cost) return tl::unexpected(cost.error());
  const double limit = m.options().max_patch_multiply_adds;
  if (cost->multiply_adds > limit) {
    // the first senders that fit, priced by the same cost function (research/patch_narrowing.h)
    auto narrowing = research::path_sender_narrowing(c, in->pairs, rq, limit);
    if (!narrowing) return tl::unexpected(narrowing.error());
    std::vector<research::PatchNarrowing> offers;
    if (*narrowing) offers.push_back(std::move(**narrowing));
    char buf[160];
    std::snprintf(buf, sizeof buf, "about %.1e multiply-adds (%zu forwards), more than this server's limit (%.1e)",
                  cost->multiply_adds, cost->forwards, limit);
    return tl::unexpected(work_refusal(std::string("This path patching is ") + buf +
                                           ". Narrow it: fewer senders (\"senders\": [\"0.1\", \"3.*\"]), fewer prompt pairs or "
                                           "shorter prompts; `headlab patch --path` on your own machine has no limit.",
                                       cost->multiply_adds, limit, offers));
  }
  // A sweep still running when its request has given up (the pool's deadline) stops there.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(m.options().pool.timeout_ms);
  rq.keep_going = [deadline] { return std::chrono::steady_clock::now() < deadline; };
  const ModelService* svc = &m;
  // By value: a job that outlives a timed-out request must not read this frame.
  auto result = m.in_turn<research::PathPatchResult>([svc, pairs = in->pairs, rq]() {
    model::Workspace ws;
    return research::path_patch(svc->parameters(), pairs, rq, ws);
  });
  if (!result) return tl::unexpected(result.error());
  return ModelPathPatchResult{std::move(*result), std::move(in->clean.front().tokens),
                              std::move(in->corrupted.front().tokens), static_cast<int>(in->pairs.size()),
                              req.senders.empty()};
}

}  // namespace headlab::server
