// cli/config_note.cpp — see config_note.h.
#include "cli/config_note.h"

#include <cstdio>
#include <filesystem>

#include "formats/hf/config_json.h"
#include "util/file.h"

namespace headlab::cli {

void config_note(const std::string& model_path) {
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::path(model_path) / "config.json";
  if (!std::filesystem::is_directory(model_path, ec) || !std::filesystem::is_regular_file(file, ec)) return;
  auto text = file_read(file.string(), std::uint64_t(16) << 20);
  if (!text) return;
  auto config = model::config_parse(*text, file.string());
  if (!config) return;
  auto uses = model::config_key_uses(*text, *config);
  if (!uses) return;
  for (const auto& u : *uses)
    if (!u.known)
      std::fprintf(stderr,
                   "headlab: note: %s: key '%s' (= %s) is unknown to headlab and was not read; if it changes the "
                   "model's maths, the numbers are wrong (`headlab info --model %s` lists every key)\n",
                   file.string().c_str(), u.key.c_str(), u.value.c_str(), model_path.c_str());
}

}  // namespace headlab::cli
