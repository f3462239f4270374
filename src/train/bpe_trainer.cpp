// train/bpe_trainer.cpp — byte-level BPE training (see bpe_trainer.h for the steps); the
// pre-tokens, the byte alphabet and the files are the engine's (tokenizer/bpe_tokenizer.h).
// The merge loop keeps pair counts up to date incrementally: merging pair (a, b) only
// touches the pre-tokens that contain it, so each step costs what those words cost.
#include "train/bpe_trainer.h"

#include <algorithm>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "tokenizer/byte_alphabet.h"
#include "tokenizer/unicode.h"

namespace headlab::train {

// --- training -------------------------------------------------------------------------

namespace {

inline std::uint64_t pair_key(int a, int b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

struct Word {
  std::vector<int> symbols;
  std::int64_t count = 0;
};

}  // namespace

Result<BpeVocabulary> bpe_train(const std::vector<std::string>& texts, const BpeTrainOptions& options) {
  if (options.vocab_size < 257)
    return make_error(ErrorCode::invalid_argument,
                      "vocab_size must be at least 257 (256 bytes + <|endoftext|>), got " +
                          std::to_string(options.vocab_size));
  const auto& order = model::byte_order();
  std::vector<int> byte_id(256);
  for (int id = 0; id < 256; ++id) byte_id[order[id]] = id;

  // 1. count the distinct pre-tokens, split by the engine's exact rule
  std::unordered_map<std::string_view, std::int64_t> counts;
  for (const std::string& text : texts) {
    if (long long bad = model::utf8_find_invalid(text); bad >= 0)
      return make_error(ErrorCode::invalid_argument,
                        "the training text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
    const std::string_view view = text;
    for (auto [b, e] : model::BpeTokenizer::split_pieces(view)) ++counts[view.substr(b, e - b)];
  }
  if (counts.empty())
    return make_error(ErrorCode::invalid_argument, "the training text is empty: nothing to learn a tokenizer from");
  std::vector<std::pair<std::string_view, std::int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());  // a fixed order, whatever the hash map did
  std::vector<Word> words;
  words.reserve(sorted.size());
  for (const auto& [piece, count] : sorted) {
    Word w;
    w.count = count;
    for (unsigned char c : piece) w.symbols.push_back(byte_id[c]);
    words.push_back(std::move(w));
  }

  BpeVocabulary vocab;
  std::unordered_map<std::string, int> id_of;  // token bytes -> id
  for (int id = 0; id < 256; ++id) {
    vocab.tokens.emplace_back(1, static_cast<char>(order[id]));
    id_of[vocab.tokens.back()] = id;
  }

  // 2. pair counts, where each pair occurs, and a max-heap of (count, pair) with stale
  //    entries skipped when popped
  std::unordered_map<std::uint64_t, std::int64_t> pair_count;
  std::unordered_map<std::uint64_t, std::vector<int>> where;
  for (int w = 0; w < static_cast<int>(words.size()); ++w) {
    const auto& s = words[w].symbols;
    for (std::size_t k = 0; k + 1 < s.size(); ++k) {
      std::uint64_t key = pair_key(s[k], s[k + 1]);
      pair_count[key] += words[w].count;
      where[key].push_back(w);
    }
  }
  // (count, ~key): equal counts pop the smaller pair key first
  std::priority_queue<std::pair<std::int64_t, std::uint64_t>> heap;
  for (const auto& [key, count] : pair_count) heap.push({count, ~key});

  std::vector<int> visited(words.size(), -1);
  std::vector<std::uint64_t> changed;
  const int n_tokens = options.vocab_size - 1;  // <|endoftext|> comes last
  while (static_cast<int>(vocab.tokens.size()) < n_tokens && !heap.empty()) {
    auto [count, inv_key] = heap.top();
    heap.pop();
    const std::uint64_t key = ~inv_key;
    auto it = pair_count.find(key);
    if (it == pair_count.end() || it->second != count) continue;  // stale entry
    if (count < options.min_frequency) break;
    const int a = static_cast<int>(key >> 32);
    const int b = static_cast<int>(key & 0xFFFFFFFFu);
    const int rank = static_cast<int>(vocab.merges.size());
    std::string spelled = vocab.tokens[a] + vocab.tokens[b];
    auto [existing, is_new] = id_of.emplace(spelled, static_cast<int>(vocab.tokens.size()));
    const int new_id = existing->second;
    if (is_new) vocab.tokens.push_back(std::move(spelled));
    vocab.merges.push_back({a, b, new_id});

    changed.clear();
    std::vector<int> holders = std::move(where[key]);
    where.erase(key);
    for (int w : holders) {
      if (visited[w] == rank) continue;
      visited[w] = rank;
      Word& word = words[w];
      auto& s = word.symbols;
      bool has = false;
      for (std::size_t k = 0; k + 1 < s.size(); ++k)
        if (s[k] == a && s[k + 1] == b) has = true;
      if (!has) continue;
      for (std::size_t k = 0; k + 1 < s.size(); ++k) {
        std::uint64_t p = pair_key(s[k], s[k + 1]);
        pair_count[p] -= word.count;
        changed.push_back(p);
      }
      std::vector<int> merged;
      merged.reserve(s.size());
      for (std::size_t k = 0; k < s.size(); ++k) {
        if (k + 1 < s.size() && s[k] == a && s[k + 1] == b) {
          merged.push_back(new_id);
          ++k;
        } else {
          merged.push_back(s[k]);
        }
      }
      s = std::move(merged);
      for (std::size_t k = 0; k + 1 < s.size(); ++k) {
        std::uint64_t p = pair_key(s[k], s[k + 1]);
        pair_count[p] += word.count;
        where[p].push_back(w);
        changed.push_back(p);
      }
    }
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    for (std::uint64_t p : changed) {
      auto pc = pair_count.find(p);
      if (pc == pair_count.end()) continue;
      if (pc->second <= 0) {
        pair_count.erase(pc);
        continue;
      }
      heap.push({pc->second, ~p});
    }
  }

  // 3. <|endoftext|> last
  vocab.tokens.emplace_back(model::kEndOfText);
  return vocab;
}

Result<model::BpeTokenizer> bpe_tokenizer(const BpeVocabulary& vocab) {
  // spelled in GPT-2's byte alphabet, as vocab.json and merges.txt spell tokens
  auto spell = [](const std::string& bytes) {
    std::string s;
    for (unsigned char c : bytes) s += model::byte_to_unicode(c);
    return s;
  };
  std::unordered_map<std::string, int> ids;
  const int eot = vocab.end_of_text_id();
  for (int id = 0; id < static_cast<int>(vocab.tokens.size()); ++id)
    ids.emplace(id == eot ? std::string(model::kEndOfText) : spell(vocab.tokens[id]), id);
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(vocab.merges.size());
  for (const auto& m : vocab.merges) merges.emplace_back(spell(vocab.tokens[m.left]), spell(vocab.tokens[m.right]));
  return model::BpeTokenizer::from_tables(std::move(ids), std::move(merges), "the learned tokenizer");
}

Status bpe_save(const BpeVocabulary& vocab, const std::string& dir) {
  auto tok = bpe_tokenizer(vocab);
  if (!tok) return tl::unexpected(tok.error());
  return tok->save(dir);
}

}  // namespace headlab::train
