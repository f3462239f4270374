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
// And the other way, for the writer (headlab export --gguf): a folder's tokenizer as metadata.
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

// A tokenizer as GGUF stores it, the inverse of tokenizer_json_from_file:
//   model "gpt2":  byte-level BPE: tokens in GPT-2's byte alphabet, merges "left right" by rank,
//                  and the pre-tokenizer by name: gpt-2 (GPT-2's ByteLevel regex), llama-bpe
//                  (Llama 3's Split regex, merges ignored for whole tokens), qwen2 (Qwen 2/3's
//                  regex after NFC)
//   model "llama": SentencePiece BPE with byte fallback (Llama 2, Gemma 2/3): scores that rank
//                  each token by the first merge that makes it (-rank), "<0xXX>" byte tokens,
//                  add_space_prefix for a "▁" put before the text (Llama 2; not Gemma)
// Any other tokenizer.json (another normalizer, pre-tokenizer or model option, an added token
// that strips spaces) is refused by name: llama.cpp would tokenize it differently. What llama.cpp
// itself does otherwise for a written kind (qwen2 without Qwen's NFC; "</s>" and similar texts it
// makes special by their spelling) is said in `notes`.
struct TokenizerTables {
  std::string model = "gpt2";       // tokenizer.ggml.model
  std::string pre = "gpt-2";        // tokenizer.ggml.pre (model gpt2)
  std::vector<std::string> tokens;  // (V) by id
  std::vector<std::string> merges;  // by rank (model gpt2)
  std::vector<float> scores;        // (V) (model llama)
  std::vector<std::int32_t> types;  // (V) 1 normal, 2 unknown, 3 control, 4 user-defined, 6 byte
  int unk_id = -1;                  // model llama: the unknown token
  bool add_space_prefix = false;    // model llama
  // Where llama.cpp reading these tables is known to tokenize otherwise than the folder's own
  // tokenizer (headlab reads the file as the folder): one sentence each, for the user.
  std::vector<std::string> notes;
};
// From a model folder: vocab.json + merges.txt (GPT-2's), or a tokenizer.json of one of the
// kinds above. Errors: not_found, corrupt (ids with gaps, a bad file), unsupported (another
// tokenizer, its part named).
Result<TokenizerTables> tokenizer_tables_load(const std::string& dir);
// The tokenizer.ggml.* metadata of the tables, with BOS / EOS and whether llama.cpp puts BOS first.
std::vector<Metadata> tokenizer_metadata(const TokenizerTables& tables, int bos_id, int eos_id, bool add_bos = false);

}  // namespace headlab::model::gguf
