// tokenizer/bpe_tokenizer.h — GPT-2's byte-level BPE tokenizer, exactly.
//   1. split the text with GPT-2's pattern:
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   2. map each piece's UTF-8 bytes to printable characters (bytes_to_unicode)
//   3. merge adjacent symbols, lowest merge rank first, until no merge applies
//   4. look each symbol up in the vocabulary
// "<|endoftext|>" in the text is by default the special token (id 50256 in GPT-2), never
// split; with EncodeOptions::special off it is plain text ("<|", "endoftext", "|>"), as
// GPT-2's encode with allowed_special off (tiktoken's encode_ordinary).
//
//   Result<BpeTokenizer> tok = BpeTokenizer::load("models/gpt2");  // vocab.json + merges.txt
//   Result<std::vector<Token>> toks = tok->encode("Hello world");
//   // {id 15496 "Hello" bytes [0,5)}, {id 995 " world" bytes [5,11)}
//
// Thread-safe: every const method may be called from many threads at once (the server's
// workers share one tokenizer); the per-piece cache inside locks for itself.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/result.h"

namespace headlab::model {

// GPT-2's special token: BOS and EOS, the last id of its vocabulary (50256).
inline constexpr std::string_view kEndOfText = "<|endoftext|>";

// One token of an encoded text: the work shown, so a page can draw tokens under the text.
struct Token {
  int id = 0;
  std::string text;  // the token's bytes (a piece of a multi-byte character may be partial UTF-8)
  int begin = 0;     // byte span [begin, end) of the token in the input
  int end = 0;
};

struct EncodeOptions {
  // true: "<|endoftext|>" in the text is the special token (when the vocabulary has one);
  // false: it is ordinary text and is split and merged like any other.
  bool special = true;
  // true: the post-processor's template tokens (Llama 2's "<s>", Gemma 3's "<bos>") are put
  // around the text, as Hugging Face's encode with add_special_tokens; false: the text alone.
  bool template_tokens = false;
};

class PieceCache;  // bpe_tokenizer.cpp
struct BpeSymbol;   // bpe_tokenizer.cpp: a symbol being merged
struct TokenizerPipeline;  // bpe_tokenizer.cpp: a tokenizer.json's parts

// The largest vocab.json, merges.txt or tokenizer.json read (Gemma 3's tokenizer.json, the
// largest of the families, is about 33 MB).
inline constexpr std::uint64_t kMaxTokenizerFileBytes = std::uint64_t(512) << 20;

class BpeTokenizer {
 public:
  // From a directory holding vocab.json + merges.txt, or tokenizer.json. GPT-2's files
  // (vocab.json + merges.txt, or from_tables) take GPT-2's own steps above; a tokenizer.json
  // runs its pipeline (tokenizer/tokenizer_json.h): added tokens, normalizer, pre-tokenizer, BPE
  // with its options, post-processor on request; a component not implemented is an
  // unsupported error naming it.
  // Errors: not_found (neither present), corrupt (bad JSON, a merge line without two
  // symbols, a merge whose result is not in the vocabulary), io_error.
  static Result<BpeTokenizer> load(const std::string& dir);
  static Result<BpeTokenizer> from_vocab_merges(std::string_view vocab_json, std::string_view merges_txt,
                                                const std::string& what);
  static Result<BpeTokenizer> from_tokenizer_json(std::string_view tokenizer_json, const std::string& what);
  // From the tables themselves: vocab maps each token, spelled in GPT-2's byte alphabet
  // (tokenizer/byte_alphabet.h), to its id; merges[r] is the pair of rank r. The same checks
  // as the loaders (every byte is a token, every merge's result is in the vocabulary).
  static Result<BpeTokenizer> from_tables(std::unordered_map<std::string, int> vocab,
                                          std::vector<std::pair<std::string, std::string>> merges,
                                          const std::string& what);

  // Empty: no vocabulary until assigned one of the above (encoding with it is a
  // programmer error, caught by a check).
  BpeTokenizer();
  // A copy has the same tables and a cache of its own (empty).
  BpeTokenizer(const BpeTokenizer& other);
  BpeTokenizer& operator=(const BpeTokenizer& other);
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

  // Errors: invalid_argument for invalid UTF-8 (names the byte offset); too_long above 1 GB.
  Result<std::vector<Token>> encode(std::string_view text, EncodeOptions options = {}) const;
  Result<std::vector<int>> encode_ids(std::string_view text, EncodeOptions options = {}) const;
  // Appends the ids of text to ids (a corpus, document after document); the same errors,
  // and ids is left as it was on an error.
  Status encode_append(std::string_view text, std::vector<int>& ids, EncodeOptions options = {}) const;

  // The bytes of the tokens joined (decode of an id outside the vocabulary: invalid_argument).
  Result<std::string> decode(std::span<const int> ids) const;
  std::string token_bytes(int id) const;  // "" for an unknown id

  int vocab_size() const { return static_cast<int>(id_to_token_.size()); }
  int endoftext_id() const { return endoftext_id_; }  // -1 if the vocabulary has none

  // Writes vocab.json and merges.txt into dir (the layout GPT2Tokenizer reads).
  Status save(const std::string& dir) const;

  // GPT-2's pre-tokenisation alone: the byte spans [begin, end) of the pieces of valid
  // UTF-8 `text` (no special-token handling). Exposed for tests and the lessons.
  static std::vector<std::pair<int, int>> split_pieces(std::string_view text);

 private:
  struct Merge {
    int rank = 0;    // lower merges first
    int result = 0;  // the id of the merged token
  };
  std::unordered_map<std::string, int> token_to_id_;   // byte-level-unicode string -> id
  std::vector<std::string> id_to_token_;                // id -> byte-level-unicode string
  std::vector<std::string> id_to_bytes_;                // id -> raw bytes
  std::vector<int> byte_to_id_;                         // (256) byte -> its single-byte token
  std::unordered_map<std::uint64_t, Merge> merge_of_;   // (left id << 32 | right id) -> merge
  std::vector<std::pair<std::string, std::string>> merges_;
  int endoftext_id_ = -1;
  std::unique_ptr<PieceCache> cache_;                   // piece bytes -> ids (bpe_tokenizer.cpp)
  std::shared_ptr<const TokenizerPipeline> pipeline_;   // a tokenizer.json's parts; null: GPT-2's steps

  static Result<BpeTokenizer> build(std::unordered_map<std::string, int> vocab,
                                    std::vector<std::pair<std::string, std::string>> merges,
                                    const std::string& what, bool byte_level);
  // The tokenizer.json pipeline: ids and each token's input span.
  Status encode_pipeline(std::string_view text, EncodeOptions options, std::vector<int>& ids,
                         std::vector<std::pair<int, int>>* spans) const;

  // Merges the symbols of one piece, lowest rank first (the tokenizer.json path).
  void merge_symbols(std::vector<BpeSymbol>& syms) const;
  // Appends the ids of one pre-token (through the cache).
  void bpe_piece(std::string_view piece, std::vector<int>& ids) const;
  // The ids of text; with ends, each token's end byte too (the tokens tile the text).
  Status encode_into(std::string_view text, EncodeOptions options, std::vector<int>& ids,
                     std::vector<int>* ends) const;
};

}  // namespace headlab::model
