// tests/testing/model_fixtures.h — the PyTorch reference fixtures (tools/reference/make_model_fixtures.py)
// as the engine tests read them.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/hf/checkpoint.h"
#include "util/file.h"

namespace headlab::testing {

inline std::string fixture_dir(const std::string& name) {
  return std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/model/" + name;
}

inline nlohmann::json read_json_file(const std::string& path) {
  auto text = file_read(path);
  if (!text) throw std::runtime_error(text.error().message);
  return nlohmann::json::parse(*text);
}

// The fixture's weights from one of its files (model.safetensors, model.f16.safetensors, ...),
// kept as `options` say (default: the matrices packed in the file's precision).
inline model::Parameters load_fixture(const std::string& name, const std::string& file,
                                      const model::LoadOptions& options = {}) {
  auto config = model::config_load(fixture_dir(name) + "/config.json");
  if (!config) throw std::runtime_error(config.error().message);
  auto st = model::safetensors_read(fixture_dir(name) + "/" + file);
  if (!st) throw std::runtime_error(st.error().message);
  auto p = model::checkpoint_from_safetensors(*config, *st, options);
  if (!p) throw std::runtime_error(p.error().message);
  return std::move(*p);
}

}  // namespace headlab::testing
