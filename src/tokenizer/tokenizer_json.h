// tokenizer/tokenizer_json.h — reads a Hugging Face tokenizer.json into the parts of the
// pipeline: normalizer -> pre-tokenizer -> BPE model -> post-processor, with the added
// tokens matched first and the decoder for display. Anything the file asks for that
// headlab does not implement is refused by name, never ignored:
//   "tokenizer.json: pre_tokenizer type 'BertPreTokenizer' is not supported".
//
//   Result<TokenizerJson> j = tokenizer_json_read(text, "models/llama3/tokenizer.json");
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "util/result.h"

namespace headlab::model {

// The BPE model's options (tokenizer.json's "model").
struct BpeOptions {
  bool byte_level = false;     // the pieces are bytes in GPT-2's alphabet (a ByteLevel pre-tokenizer)
  bool byte_fallback = false;  // a character not in the vocabulary becomes its "<0xXX>" byte tokens
  bool ignore_merges = false;  // a piece that is a token is that token, whatever the merges say
  bool fuse_unk = false;       // consecutive unknown characters make one unk token
  std::optional<std::string> unk_token;
};

struct TokenizerJson {
  std::unordered_map<std::string, int> vocab;                // the model's vocabulary
  std::vector<std::pair<std::string, std::string>> merges;   // by rank
  BpeOptions bpe;
  std::optional<Normalizer> normalizer;
  std::optional<PreTokenizer> pre_tokenizer;
  std::vector<AddedToken> added_tokens;
  PostProcessor post_processor;
  Decoder decoder;
};

// Errors: corrupt (not JSON, a missing or mistyped field, a bad regex), unsupported (a
// component type or an option not implemented, named).
Result<TokenizerJson> tokenizer_json_read(std::string_view text, const std::string& what);

}  // namespace headlab::model
