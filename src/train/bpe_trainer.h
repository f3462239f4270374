// train/bpe_trainer.h — learns a byte-level BPE tokenizer (GPT-2's kind) from text.
//   1. split the text into pre-tokens with the engine's exact GPT-2 rule
//      (model::BpeTokenizer::split_pieces: " the", "'s", " 1990", "\n\n")
//   2. start from the 256 bytes; repeat: merge the most frequent adjacent pair of
//      symbols inside the pre-tokens into a new symbol, until the vocabulary is full
//   3. append <|endoftext|> (BOS and EOS) as the last id
// Only the learning lives here: what was learned becomes a model::BpeTokenizer
// (bpe_tokenizer), which encodes text and writes GPT-2's vocab.json + merges.txt.
//
//   BpeTrainOptions o; o.vocab_size = 4096;
//   Result<BpeVocabulary> v = bpe_train({corpus_text}, o);
//   Status s = bpe_save(*v, "models/headlab-tiny");   // vocab.json, merges.txt
//
// Deterministic: ties between pairs of equal count go to the pair with the smaller ids.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"
#include "util/result.h"

namespace headlab::train {

struct BpeTrainOptions {
  int vocab_size = 4096;  // total, including the 256 bytes and <|endoftext|>
  int min_frequency = 2;  // stop early when the best pair is seen fewer times
};

struct BpeVocabulary {
  // tokens[id] = the token's bytes; ids 0..255 are the bytes in model::byte_order(), then
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

// Errors: invalid_argument when vocab_size < 257, a text is not valid UTF-8, or the texts
// hold no pre-token.
Result<BpeVocabulary> bpe_train(const std::vector<std::string>& texts, const BpeTrainOptions& options);

// The engine's tokenizer for what bpe_train learned (tokens spelled in GPT-2's byte
// alphabet, the merges in rank order). Errors: corrupt for a vocabulary bpe_train did not
// make (a byte missing, a merge whose result is not a token).
Result<model::BpeTokenizer> bpe_tokenizer(const BpeVocabulary& vocab);

// bpe_tokenizer(vocab)->save(dir): dir/vocab.json ({"token": id} in id order) and
// dir/merges.txt ("#version: 0.2" then "left right" per rank). Creates dir.
// Errors: those of bpe_tokenizer; io_error naming the file.
Status bpe_save(const BpeVocabulary& vocab, const std::string& dir);

}  // namespace headlab::train
