// train/bpe_trainer.h — learns a byte-level BPE tokenizer (GPT-2's kind) from text.
//   1. split the text into pre-tokens with GPT-2's rule (" the", "'s", " 1990", "\n\n")
//   2. start from the 256 bytes; repeat: merge the most frequent adjacent pair of
//      symbols inside the pre-tokens into a new symbol, until the vocabulary is full
//   3. append <|endoftext|> (BOS and EOS) as the last id
// The result is written as GPT-2's vocab.json + merges.txt, which the engine loads.
//
//   BpeTrainOptions o; o.vocab_size = 4096;
//   Result<BpeVocabulary> v = bpe_train({corpus_text}, o);
//   Status s = bpe_save(*v, "models/headlab-tiny");   // vocab.json, merges.txt
//
// Deterministic: ties between pairs of equal count go to the pair with the smaller ids.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/result.h"

namespace headlab::train {

inline constexpr std::string_view kEndOfText = "<|endoftext|>";

// GPT-2's printable stand-in for each byte (bytes_to_unicode in encoder.py), as UTF-8:
// byte 'a' -> "a", byte ' ' -> "Ġ", byte '\n' -> "Ċ".
const std::string& byte_to_unicode(unsigned char byte);
// The 256 bytes in GPT-2's id order: ids 0..255 of its vocab.json ('!' is id 0).
const std::vector<unsigned char>& byte_id_order();

// GPT-2's pre-tokenisation rule:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// ASCII is classified exactly; outside ASCII, Unicode white space and the common
// punctuation blocks are told apart from letters, and digits only in ASCII and the
// superscripts/fractions of Latin-1 (enough for English corpora; the engine's tokenizer
// holds the exact tables and is the one used at run time).
std::vector<std::string_view> pretokenize(std::string_view text);

struct BpeTrainOptions {
  int vocab_size = 4096;  // total, including the 256 bytes and <|endoftext|>
  int min_frequency = 2;  // stop early when the best pair is seen fewer times
};

struct BpeVocabulary {
  // tokens[id] = the token's bytes; ids 0..255 are the bytes in byte_id_order(), then
  // one id per merge in order, then <|endoftext|> last.
  std::vector<std::string> tokens;
  // merges[r] = the merge of rank r: left + right -> result. Usually result = the next
  // new id; when two merges spell the same bytes ("ab"+"c", "a"+"bc") the second
  // reuses the first's id, as GPT-2's string-keyed vocab.json requires.
  struct Merge {
    int left = 0, right = 0, result = 0;
  };
  std::vector<Merge> merges;
  int end_of_text_id() const { return static_cast<int>(tokens.size()) - 1; }
};

// Errors: invalid_argument when vocab_size < 257 or the texts hold no pre-token.
Result<BpeVocabulary> bpe_train(const std::vector<std::string>& texts, const BpeTrainOptions& options);

// Writes dir/vocab.json ({"token": id}, GPT-2's byte-to-unicode spelling, in id order) and
// dir/merges.txt ("#version: 0.2" then "left right" per rank). Creates dir.
// Errors: io_error naming the file.
Status bpe_save(const BpeVocabulary& vocab, const std::string& dir);

// Reads dir/vocab.json + dir/merges.txt (GPT-2's files, as bpe_save writes them).
// Errors: not_found (a file is missing), corrupt (bad JSON, a token that is not spelled in
// GPT-2's byte alphabet, a merge line without two known tokens or whose result is not in
// the vocabulary), each naming the file.
Result<BpeVocabulary> bpe_load(const std::string& dir);

// Encodes text with the merges by rank (GPT-2's bpe()): the reference encoder the
// tokenizer-training tests use and the trainer's fast path over a big corpus (it caches
// each distinct pre-token). Does not recognise <|endoftext|> inside text.
class BpeEncoder {
 public:
  explicit BpeEncoder(const BpeVocabulary& vocab);
  std::vector<int> encode(std::string_view text);
  void encode_append(std::string_view text, std::vector<int>& out);

 private:
  const std::vector<int>& encode_word(std::string_view word);
  std::vector<int> byte_to_id_;                       // (256)
  std::unordered_map<std::uint64_t, int> rank_;       // (left << 32 | right) -> merge rank
  std::vector<int> result_;                           // merge rank -> id it makes
  std::unordered_map<std::string, std::vector<int>> cache_;  // pre-token -> ids
};

}  // namespace headlab::train
