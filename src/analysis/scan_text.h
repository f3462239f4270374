// analysis/scan_text.h — the one scan pipeline, written once for `headlab scan`,
// GET /api/model/scan and the trainer's evaluation:
//   held-out text --model::BpeTokenizer--> ids --punctuation table, probes--> scan_model
// The result is values (ScanReport); the CLI and the server's codec format it.
//
//   auto dir = std::string("models/headlab-tiny");
//   Result<std::string> text = heldout_text_read(dir);        // dir/heldout.txt
//   Result<model::BpeTokenizer> tok = model::BpeTokenizer::load(dir);
//   Result<ScanReport> r = scan_text(params, *tok, *text, ScanOptions{});
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/scanner.h"
#include "tokenizer/bpe_tokenizer.h"
#include "model/parameters.h"
#include "util/result.h"

namespace headlab::analysis {

// The punctuation table (V): true for a token whose bytes, leading spaces dropped, are one
// punctuation mark (core::is_punctuation: "," " ." "?!" ...). BOS is never punctuation.
// token_bytes(id) gives the bytes of id ("" for an id the tokenizer does not know).
std::vector<bool> punctuation_table(const model::BpeTokenizer& tokenizer, int V, int bos);

// The scan of natural text that is already ids (no BOS; the trainer has them):
// the probes of scan_probes_build, then scan_model.
// is_punct_by_id (V): from punctuation_table.
// Errors: invalid_argument when the text is shorter than one window or the model's context
// is too short; the engine's forward errors.
Result<ScanReport> scan_ids(const model::Parameters& params, const std::vector<int>& natural_ids,
                            const std::vector<bool>& is_punct_by_id, const ScanOptions& options);

// The whole job on natural text: tokenize with the model's tokenizer, the punctuation
// table, the probes, scan_model.
// Errors: corrupt when the tokenizer has more tokens than the model's vocabulary;
// invalid_argument for text that is not UTF-8 (naming the byte) and those of scan_ids.
Result<ScanReport> scan_text(const model::Parameters& params, const model::BpeTokenizer& tokenizer,
                             std::string_view text, const ScanOptions& options);

// The five constructed heads of the first lesson on the words of `text` (words and
// punctuation marks as separate tokens).
ScanReport scan_text_constructed(std::string_view text, const ScanOptions& options);
std::vector<std::string> scan_words(std::string_view text);

// The held-out text of a model folder: model_dir/heldout.txt (beside the file for a model
// file, a GGUF).
std::string heldout_path(const std::string& model_dir);
// Errors: not_found (the folder has no heldout.txt, with what to do about it), io_error.
Result<std::string> heldout_text_read(const std::string& model_dir);

}  // namespace headlab::analysis
