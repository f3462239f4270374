// course/lesson_models.cpp — load a lesson model by name, once.
#include "formats/model_files.h"
#include "course/lesson_models.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "analysis/scan_text.h"
#include "formats/hf/checkpoint.h"
#include "util/file.h"
#include "util/json_depth.h"

namespace headlab::course {
namespace fs = std::filesystem;

namespace {

bool plain_name(const std::string& s) {
  if (s.empty() || s.size() > 64 || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

// train_log.json's options.context (0 there means n_ctx); 0 when the folder has no log.
int trained_context_of(const fs::path& dir) {
  auto text = file_read((dir / "train_log.json").string());
  if (!text || !json_depth_check(*text, "train_log.json")) return 0;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("options") || !j["options"].is_object()) return 0;
  const auto& c = j["options"].value("context", nlohmann::json());
  return c.is_number_integer() ? c.get<int>() : 0;
}

}  // namespace

Result<std::shared_ptr<LessonModelEntry>> LessonModelShelf::get(const std::string& name) {
  if (!plain_name(name))
    return make_error(ErrorCode::invalid_argument, "A lesson model is named by its folder, like headlab-rope (letters, digits, '-', '_', '.').");
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = loaded_.find(name); it != loaded_.end()) return it->second;
  const fs::path dir = fs::path(dir_) / name;
  if (!fs::exists(dir / "config.json"))
    return make_error(ErrorCode::not_found, "The lesson model " + name + " is not in " + dir_ + " (no " +
                                                (dir / "config.json").string() + "). Train it (see models/README.md) or "
                                                "start the server with --models-dir pointing at the folder that holds it.");
  auto params = model::model_load(dir.string());
  if (!params) return tl::unexpected(params.error());
  auto tok = model::model_tokenizer_load(dir.string());
  if (!tok) return tl::unexpected(tok.error());
  auto e = std::make_shared<LessonModelEntry>();
  e->name = name;
  e->params = std::move(*params);
  e->tokenizer = std::move(*tok);
  model::ModelConfig& c = e->params.config;
  using P = model::ModelConfig::Positions;
  e->positions = c.positions == P::learned ? "learned" : c.positions == P::rotary ? "rotary" : "none";
  e->n_ctx = c.n_ctx;
  const int t = trained_context_of(dir);
  e->trained_context = t > 0 ? std::min(t, c.n_ctx) : c.n_ctx;
  // Learned positions end with wpe's rows. Rotary and no positions have no table (wpe has
  // size 0 whatever n_ctx says), so the engine may read past the trained length: that is
  // what the lesson measures.
  e->run_limit = c.positions == P::learned ? c.n_ctx : std::min(1024, std::max(c.n_ctx, 4 * e->trained_context));
  c.n_ctx = e->run_limit;
  if (auto h = analysis::heldout_text_read(dir.string())) e->heldout = std::move(*h);
  loaded_[name] = e;
  return e;
}

}  // namespace headlab::course
