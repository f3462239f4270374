// server/api/handlers/lesson_handlers.cpp — validate, then call the core.
#include "server/api/handlers/lesson_handlers.h"

#include "core/sentence.h"

namespace headlab::server {

Result<core::AttentionPattern> handle_weights(const WeightsRequest& request) {
  auto kind = core::head_kind_from_name(request.head);
  if (!kind) return tl::unexpected(kind.error());
  auto tokens = core::tokenize_sentence(request.sentence);
  if (!tokens) return tl::unexpected(tokens.error());
  return core::compute_pattern(*kind, std::move(*tokens), request.mask);
}

Result<core::HeadSplit> handle_head_split(const HeadSplitRequest& request) {
  return core::head_split(request.d_model, request.h);
}

}  // namespace headlab::server
