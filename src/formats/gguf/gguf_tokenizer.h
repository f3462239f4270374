// formats/gguf/gguf_tokenizer.h — the tokenizer a GGUF file carries in its metadata, as
// headlab's one tokenizer pipeline (tokenizer/tokenizer_json.h, tokenizer/bpe_tokenizer.h): the
// metadata is turned into the tokenizer.json Hugging Face would write for it, and that is
// read as any tokenizer.json is.
//   tokenizer.ggml.model      "gpt2": byte-level BPE (tokens, merges); "llama": SentencePiece
//                             BPE with byte fallback (tokens, scores: the merges are the
//                             pairs that make a token, by the token's score)
//   tokenizer.ggml.pre        the pre-tokenizer of a "gpt2" model: gpt-2 / default, llama-bpe
//                             (Llama 3), qwen2 (with its NFC normalizer); others refused by name
//   tokenizer.ggml.token_type 3 (control) and 4 (user-defined) tokens are added tokens
//   tokenizer.ggml.bos_token_id, add_bos_token, eos_token_id, add_eos_token: the template
//   tokenizer.ggml.add_space_prefix  a "llama" model's "▁" before the text (default true;
//                             Gemma's files say false)
//
//   Result<BpeTokenizer> tok = gguf::tokenizer_from_file(file);
// And the other way, for the writer: a byte-level BPE tokenizer's tables as metadata.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_writer.h"
#include "util/result.h"

namespace headlab::model::gguf {

// The tokenizer.json text the metadata describes. Errors: corrupt (a missing or mistyped
// tokenizer.ggml key, named), unsupported (a tokenizer model or pre-tokenizer not
// implemented, named).
Result<std::string> tokenizer_json_from_file(const File& file);
// That text read by headlab's tokenizer (BpeTokenizer::from_tokenizer_json). + its errors.
Result<BpeTokenizer> tokenizer_from_file(const File& file);
// The same from a path (file_open first).
Result<BpeTokenizer> tokenizer_load(const std::string& path);

// A byte-level BPE tokenizer as GGUF stores it: tokens in id order spelled in GPT-2's byte
// alphabet, merges "left right" by rank, and which tokens are special.
struct TokenizerTables {
  std::vector<std::string> tokens;  // (V) by id
  std::vector<std::string> merges;  // by rank
  std::vector<std::int32_t> types;  // (V) 1 normal, 3 control
};
// From a model folder: vocab.json + merges.txt, or a tokenizer.json whose model is byte-level
// BPE. Errors: not_found, corrupt (ids with gaps, a bad file), unsupported (another tokenizer).
Result<TokenizerTables> tokenizer_tables_load(const std::string& dir);
// The tokenizer.ggml.* metadata of the tables (model "gpt2", pre "gpt-2"), with BOS / EOS.
std::vector<Metadata> tokenizer_metadata(const TokenizerTables& tables, int bos_id, int eos_id);

}  // namespace headlab::model::gguf
