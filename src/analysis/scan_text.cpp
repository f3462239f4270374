// analysis/scan_text.cpp — tokenize, the punctuation table, probes, scan_model: the scan
// pipeline every caller shares.
#include "analysis/scan_text.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/sentence.h"
#include "model/config.h"
#include "util/file.h"

namespace headlab::analysis {
namespace fs = std::filesystem;

namespace {

bool token_is_punctuation(std::string_view bytes) {
  while (!bytes.empty() && bytes.front() == ' ') bytes.remove_prefix(1);
  return core::is_punctuation(bytes);
}

}  // namespace

std::vector<bool> punctuation_table(const model::BpeTokenizer& tokenizer, int V, int bos) {
  std::vector<bool> table(V, false);
  for (int id = 0; id < V; ++id) table[id] = id != bos && token_is_punctuation(tokenizer.token_bytes(id));
  return table;
}

Result<ScanReport> scan_ids(const model::Parameters& params, const std::vector<int>& natural_ids,
                            const std::vector<bool>& is_punct_by_id, const ScanOptions& options) {
  const model::ModelConfig& c = params.config;
  auto probes = scan_probes_build(natural_ids, is_punct_by_id, c.vocab_size, c.bos_token_id, c.n_ctx, options);
  if (!probes) return tl::unexpected(probes.error());
  return scan_model(params, *probes, options.progress);
}

Result<ScanReport> scan_text(const model::Parameters& params, const model::BpeTokenizer& tokenizer,
                             std::string_view text, const ScanOptions& options) {
  const model::ModelConfig& c = params.config;
  if (Status fits = model::config_check_tokenizer(c, tokenizer.vocab_size(), "the scan"); !fits)
    return tl::unexpected(fits.error());
  auto ids = tokenizer.encode_ids(text);
  if (!ids) return make_error(ids.error().code, "the held-out text: " + ids.error().message);
  return scan_ids(params, *ids, punctuation_table(tokenizer, c.vocab_size, c.bos_token_id), options);
}

std::vector<std::string> scan_words(std::string_view text) {
  std::vector<std::string> words;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) words.push_back(cur), cur.clear();
  };
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isspace(c)) {
      flush();
    } else if (c < 0x80 && std::ispunct(c) && ch != '\'') {
      flush();
      words.emplace_back(1, ch);
    } else {
      cur += ch;
    }
  }
  flush();
  return words;
}

ScanReport scan_text_constructed(std::string_view text, const ScanOptions& options) {
  return scan_constructed_heads(scan_words(text), options);
}

std::string heldout_path(const std::string& model_dir) {
  std::error_code ec;
  const fs::path p(model_dir);
  // a model file (GGUF): the heldout.txt beside it
  if (fs::is_regular_file(p, ec)) return (p.parent_path() / "heldout.txt").string();
  return (p / "heldout.txt").string();
}

Result<std::string> heldout_text_read(const std::string& model_dir) {
  const std::string path = heldout_path(model_dir);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return make_error(ErrorCode::not_found,
                      (fs::is_regular_file(model_dir, ec) ? "The folder of the model file " + model_dir
                                                          : "The model folder " + model_dir) +
                          " has no heldout.txt, the held-out text the scanner reads. Add one (plain English, a few "
                          "thousand words the model never trained on).");
  return file_read(path);
}

}  // namespace headlab::analysis
