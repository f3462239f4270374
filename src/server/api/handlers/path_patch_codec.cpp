// server/api/handlers/path_patch_codec.cpp — path patching's JSON both ways (see path_patch_codec.h).
#include "server/api/handlers/path_patch_codec.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "server/api/json_fields.h"
#include "server/api/patch_codec.h"

namespace headlab::server {
namespace {

using nlohmann::json;

Error bad(const std::string& message) { return Error{ErrorCode::invalid_argument, message}; }

constexpr std::string_view kExample =
    R"({"clean": "When Mary and John went to the store, John gave a drink to", "corrupted": "When Mary and John went to the store, Mary gave a drink to", "answer": " Mary", "wrong": " John", "senders": "all", "receivers": "final"})";

// A float32 as the shortest decimal that reads back to it; NaN (no sender there) as null.
nlohmann::ordered_json shortest(float v) {
  if (std::isnan(v)) return nullptr;
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf - 1, v);
  *end = '\0';
  return std::strtod(buf, nullptr);
}

// "senders" / "receivers": a string ("all", "0.1,1.2") or a list of strings, joined by commas.
Result<std::string> read_list_text(const json& j, const char* name, const char* fallback) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::string(fallback);
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array() && it->empty())
    return tl::unexpected(bad(std::string("Field '") + name + "' is an empty list: name at least one, like " +
                              (std::string(name) == "senders" ? "[\"0.1\"], or leave it out for \"all\"."
                                                              : "[\"1.2:k\"], or leave it out for \"final\".")));
  if (it->is_array() && it->size() <= 10000) {
    std::string text;
    for (const json& v : *it) {
      if (!v.is_string()) break;
      text += (text.empty() ? "" : ",") + v.get<std::string>();
    }
    if (!text.empty()) return text;
  }
  return tl::unexpected(bad(std::string("Field '") + name + "' must be a string or a list of strings, like " +
                            (std::string(name) == "senders" ? "\"all\" or [\"0.1\", \"1.*\"]." : "\"final\" or [\"1.2:k\", \"1.3:q\"].")));
}

}  // namespace

Result<ModelPathPatchRequest> decode_model_path_patch_request(std::string_view body) {
  auto j = parse_json_object(body, kExample);
  if (!j) return tl::unexpected(j.error());
  HEADLAB_TRY(only_fields(*j, {"clean", "corrupted", "clean_ids", "corrupted_ids", "answer", "wrong", "prompts", "bos",
                               "metric", "loss_positions", "noising", "senders", "receivers"}));
  ModelPathPatchRequest r;
  HEADLAB_TRY(read_field(*j, "noising", r.noising, false));
  auto receivers_text = read_list_text(*j, "receivers", "final");
  if (!receivers_text) return tl::unexpected(receivers_text.error());
  auto receivers = research::parse_path_receivers(*receivers_text);
  if (!receivers) return tl::unexpected(bad("Field 'receivers': " + receivers.error().message + "."));
  r.receivers = std::move(*receivers);
  auto senders_text = read_list_text(*j, "senders", "all");
  if (!senders_text) return tl::unexpected(senders_text.error());
  auto senders = research::parse_path_senders(*senders_text);
  if (!senders) return tl::unexpected(bad("Field 'senders': " + senders.error().message + "."));
  r.senders = std::move(*senders);
  // the pairs, "bos", "metric" and "loss_positions": POST /api/model/patch's own reader
  json rest = *j;
  for (const char* mine : {"noising", "senders", "receivers"}) rest.erase(mine);
  auto input = decode_model_patch_request(rest.dump());
  if (!input) return tl::unexpected(input.error());
  r.input = std::move(*input);
  return r;
}

std::string encode_model_path_patch(const ModelPathPatchResult& m) {
  const research::PathPatchResult& r = m.result;
  nlohmann::ordered_json values = nlohmann::ordered_json::array();
  for (std::size_t li = 0; li < r.layers.size(); li++) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    for (int h = 0; h < r.heads; h++) row.push_back(shortest(r.values[r.offset(static_cast<int>(li), h)]));
    values.push_back(row);
  }
  nlohmann::ordered_json senders = "all", receivers = "final";
  if (!m.senders_all) {
    senders = nlohmann::ordered_json::array();
    for (const auto& s : r.senders) senders.push_back(std::to_string(s.layer) + "." + std::to_string(s.head));
  }
  if (!r.receivers.empty()) {
    receivers = nlohmann::ordered_json::array();
    for (const auto& x : r.receivers) receivers.push_back(research::path_receiver_name(x));
  }
  nlohmann::ordered_json j = {
      {"kind", "path_patch"},
      {"metric", std::string(research::patch_metric_name(r.metric))},
      {"direction", r.noising ? "noising" : "denoising"},
      {"senders", senders},
      {"receivers", receivers},
      {"axes", {"layer", "head"}},
      {"values", values},
      {"layers", r.layers},
      {"heads", r.heads},
      {"clean", shortest(r.clean)},
      {"corrupted", shortest(r.corrupted)},
      {"tokens", encode_patch_tokens(m.tokens)},
      {"corrupted_tokens", encode_patch_tokens(m.corrupted_tokens)},
      {"pairs", m.pairs},
      {"cost", {{"forwards", r.cost.forwards}, {"block_tokens", r.cost.block_tokens}, {"multiply_adds", r.cost.multiply_adds}}},
      {"skipped", r.skipped}};
  if (r.loss_positions) {  // the loss metric's positions [from, to), as asked (to null: to the end)
    nlohmann::ordered_json to = nullptr;
    if (r.loss_positions->to >= 0) to = r.loss_positions->to;
    j["loss_positions"] = {{"from", r.loss_positions->from}, {"to", to}};
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace headlab::server
