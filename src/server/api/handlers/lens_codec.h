// server/api/handlers/lens_codec.h — JSON for the lens, attribution and composition routes
// (docs/api.md) and for `headlab lens|attribute|compose --format json` (the same bytes). A
// measure's answer is {"what", "axes", "values", ...}: values nested in the axes' order.
// Strict decoding like the main codec: unknown fields, wrong types and out-of-range values are
// invalid_argument errors that name the field. Floats unrounded; token texts with invalid
// UTF-8 replaced.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "server/api/handlers/lens_handlers.h"
#include "tokenizer/bpe_tokenizer.h"
#include "util/result.h"

namespace headlab::server {

Result<research::LensTextRequest> decode_lens_request(std::string_view body);
Result<AttributeRequest> decode_attribute_request(std::string_view body);
Result<ComposeRequest> decode_compose_request(std::string_view body);
Result<ComposeRequest> decode_compose_query(const std::map<std::string, std::string>& query);
// A request as the JSON decode_compose_request reads (GET's query answered as its POST).
std::string encode_compose_request(const ComposeRequest& request);
// "1.2" -> {1, 2}; nothing for anything else.
std::optional<std::pair<int, int>> parse_head_name(std::string_view text);

// tokenizer: for the tokens' texts (null: texts are empty).
std::string encode_lens(const research::LensTextAnswer& a, const model::BpeTokenizer* tokenizer);
std::string encode_attribution(const research::AttributionTextAnswer& a, const model::BpeTokenizer* tokenizer);
std::string encode_attribution_batch(const research::AttributionBatchAnswer& a, const model::BpeTokenizer* tokenizer);
std::string encode_attribute(const AttributeAnswer& a, const model::BpeTokenizer* tokenizer);  // one or the batch
std::string encode_compose(const ComposeAnswer& a, const model::BpeTokenizer* tokenizer);

}  // namespace headlab::server
