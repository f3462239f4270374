// Fuzzes the API's request decoding and the handlers behind it: any body gives a typed
// request or an Error, and every Error renders as the JSON envelope.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/http/errors.h"
#include "server/api/handlers/lesson_handlers.h"
#include "server/api/json_codec.h"
#include "server/api/model_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace headlab::server;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto weights = decode_weights_request(body);
  if (weights) {
    auto p = handle_weights(*weights);
    if (p) (void)encode_weights(*p);
    else (void)error_response(p.error());
  } else if (error_response(weights.error()).body.empty()) {
    std::abort();
  }
  if (auto c = decode_progress_check_request(body); !c) (void)error_response(c.error());
  if (auto r = decode_progress_reset_request(body); !r) (void)error_response(r.error());
  // The model routes' bodies (text, heads, views, window; ablations, blocks, replacements).
  if (auto m = decode_model_run_request(body); !m) (void)error_response(m.error());
  if (auto m = decode_model_intervene_request(body); !m) (void)error_response(m.error());
  // Query strings: the same bytes as a parameter value.
  std::map<std::string, std::string> q = {{"d_model", std::string(body.substr(0, 32))}, {"h", "8"}};
  if (auto s = decode_head_split_query(q); s) {
    if (auto split = handle_head_split(*s); split) (void)encode_head_split(*split);
  }
  return 0;
}
