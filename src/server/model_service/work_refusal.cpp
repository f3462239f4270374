// server/model_service/work_refusal.cpp — a sweep's 413 with its narrowings (see work_refusal.h).
#include "server/model_service/work_refusal.h"

#include <nlohmann/json.hpp>

namespace headlab::server {

Error work_refusal(std::string message, double cost, double limit, const std::vector<research::PatchNarrowing>& narrowings) {
  nlohmann::ordered_json offers = nlohmann::ordered_json::array();
  for (const research::PatchNarrowing& n : narrowings) {
    nlohmann::ordered_json o = {{"label", n.label}};
    if (n.pairs > 0) o["pairs"] = n.pairs;
    if (!n.layers.empty()) o["layers"] = n.layers;
    if (!n.positions.empty()) o["positions"] = n.positions;
    if (n.what) o["what"] = research::patch_what_name(*n.what);
    if (!n.senders.empty()) {
      o["senders"] = nlohmann::ordered_json::array();
      for (const research::HeadIndex& h : n.senders) o["senders"].push_back(std::to_string(h.layer) + "." + std::to_string(h.head));
    }
    o["cost"] = n.multiply_adds;
    offers.push_back(std::move(o));
  }
  nlohmann::ordered_json details = {{"cost", cost}, {"limit", limit}, {"narrowings", std::move(offers)}};
  Error e{ErrorCode::too_long, std::move(message)};
  e.details_json = details.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return e;
}

}  // namespace headlab::server
