// Fuzzes config.json parsing: any bytes give a ModelConfig that passes config_validate,
// or an Error; never a crash or a config with impossible sizes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "formats/hf/config_json.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace headlab::model;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto c = config_parse(text, "fuzz/config.json");
  if (!c) return 0;
  if (!config_validate(*c)) std::abort();
  if (c->n_layer <= 0 || c->n_head <= 0 || c->n_embd % c->n_head != 0) std::abort();
  return 0;
}
