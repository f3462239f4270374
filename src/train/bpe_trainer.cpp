// train/bpe_trainer.cpp — byte-level BPE training (see bpe_trainer.h for the steps).
// The merge loop keeps pair counts up to date incrementally: merging pair (a, b) only
// touches the pre-tokens that contain it, so each step costs what those words cost.
#include "train/bpe_trainer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <queue>
#include <tuple>

#include <nlohmann/json.hpp>

namespace headlab::train {
namespace {

// --- bytes <-> GPT-2's printable characters -----------------------------------------

std::string utf8_of(unsigned cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xE0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

struct ByteTables {
  std::vector<unsigned char> order;  // (256) byte of id i
  std::vector<std::string> unicode;  // (256) printable stand-in of byte b
  ByteTables() : unicode(256) {
    // bytes_to_unicode(): the printable Latin-1 bytes stand for themselves, in this order,
    // then every other byte b maps to U+0100 + n, n counting up.
    std::vector<bool> printable(256, false);
    for (int b = '!'; b <= '~'; ++b) printable[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
    for (int b = 0; b < 256; ++b)
      if (printable[b]) {
        order.push_back(static_cast<unsigned char>(b));
        unicode[b] = utf8_of(b);
      }
    int n = 0;
    for (int b = 0; b < 256; ++b)
      if (!printable[b]) {
        order.push_back(static_cast<unsigned char>(b));
        unicode[b] = utf8_of(256 + n++);
      }
  }
};

const ByteTables& byte_tables() {
  static const ByteTables tables;
  return tables;
}

// --- pre-tokenisation -----------------------------------------------------------------

// Decodes the code point at text[i]; `len` gets its byte length. Invalid UTF-8 is one
// byte that classifies as "other".
unsigned decode_at(std::string_view text, std::size_t i, int& len) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned c = byte(i);
  len = 1;
  if (c < 0x80) return c;
  int extra = c >= 0xF0 && c < 0xF8 ? 3 : c >= 0xE0 ? 2 : c >= 0xC2 && c < 0xE0 ? 1 : 0;
  if (extra == 0 || i + extra >= text.size()) return 0xFFFFFFFFu;
  unsigned cp = c & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k) {
    unsigned cc = byte(i + k);
    if ((cc & 0xC0) != 0x80) return 0xFFFFFFFFu;
    cp = (cp << 6) | (cc & 0x3F);
  }
  len = 1 + extra;
  return cp;
}

bool is_space_cp(unsigned cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || (cp >= 0x1C && cp <= 0x1F) || cp == 0x85 ||
         cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_number_cp(unsigned cp) {
  return (cp >= '0' && cp <= '9') || cp == 0xB2 || cp == 0xB3 || cp == 0xB9 ||
         (cp >= 0xBC && cp <= 0xBE) || (cp >= 0x0660 && cp <= 0x0669) ||
         (cp >= 0xFF10 && cp <= 0xFF19);
}

bool is_letter_cp(unsigned cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  if (cp == 0xFFFFFFFFu || is_space_cp(cp) || is_number_cp(cp)) return false;
  if (cp < 0xC0) return cp == 0xAA || cp == 0xB5 || cp == 0xBA;
  if (cp == 0xD7 || cp == 0xF7) return false;
  if (cp >= 0x0300 && cp <= 0x036F) return false;  // combining marks (\p{M})
  if (cp >= 0x2000 && cp <= 0x2BFF) return false;  // punctuation, currency, symbols, arrows
  if (cp >= 0x3000 && cp <= 0x303F) return false;  // CJK punctuation
  if (cp >= 0xFE00 && cp <= 0xFE6F) return false;  // variation selectors, small forms
  if (cp >= 0xFF00 && cp <= 0xFF20) return false;  // full-width punctuation
  if (cp >= 0x1F000 && cp <= 0x1FAFF) return false;  // emoji and pictographs
  if (cp >= 0xE000 && cp <= 0xF8FF) return false;  // private use
  return true;
}

enum class CharClass { letter, number, space, other };

CharClass classify(unsigned cp) {
  if (is_space_cp(cp)) return CharClass::space;
  if (is_letter_cp(cp)) return CharClass::letter;
  if (is_number_cp(cp)) return CharClass::number;
  return CharClass::other;
}

}  // namespace

const std::string& byte_to_unicode(unsigned char byte) { return byte_tables().unicode[byte]; }
const std::vector<unsigned char>& byte_id_order() { return byte_tables().order; }

std::vector<std::string_view> pretokenize(std::string_view text) {
  std::vector<std::string_view> out;
  const std::size_t n = text.size();
  std::size_t i = 0;
  int len = 0;
  // The end of a run of code points of class `cls` that starts at `j`.
  auto run_end = [&](std::size_t j, CharClass cls) {
    while (j < n) {
      int l = 0;
      unsigned cp = decode_at(text, j, l);
      if (classify(cp) != cls) break;
      j += l;
    }
    return j;
  };
  while (i < n) {
    unsigned cp = decode_at(text, i, len);
    // 's|'t|'re|'ve|'m|'ll|'d
    if (cp == '\'' && i + 1 < n) {
      char a = text[i + 1];
      char b = i + 2 < n ? text[i + 2] : '\0';
      int m = 0;
      if (a == 's' || a == 't' || a == 'm' || a == 'd') m = 2;
      else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) m = 3;
      if (m > 0) {
        out.push_back(text.substr(i, m));
        i += m;
        continue;
      }
    }
    // ` ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+`: an optional single space, then a run.
    std::size_t j = i;
    CharClass cls = classify(cp);
    if (cp == ' ' && i + 1 < n) {
      int l2 = 0;
      unsigned next = decode_at(text, i + 1, l2);
      CharClass next_cls = classify(next);
      if (next_cls != CharClass::space) {
        j = i + 1;
        cls = next_cls;
      }
    }
    if (cls != CharClass::space) {
      std::size_t end = run_end(j, cls);
      out.push_back(text.substr(i, end - i));
      i = end;
      continue;
    }
    // `\s+(?!\S)|\s+`: a run of white space; when a non-space follows, the run's last
    // code point is left to start the next pre-token (" the").
    std::size_t end = run_end(i, CharClass::space);
    if (end < n) {
      std::size_t last = i;  // start of the run's last code point
      for (std::size_t k = i; k < end; k += len) {
        decode_at(text, k, len);
        last = k;
      }
      if (last > i) end = last;
    }
    out.push_back(text.substr(i, end - i));
    i = end;
  }
  return out;
}

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
  const ByteTables& tables = byte_tables();
  std::vector<int> byte_id(256);
  for (int id = 0; id < 256; ++id) byte_id[tables.order[id]] = id;

  // 1. count the distinct pre-tokens
  std::unordered_map<std::string_view, std::int64_t> counts;
  for (const std::string& text : texts)
    for (std::string_view piece : pretokenize(text)) ++counts[piece];
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
    vocab.tokens.emplace_back(1, static_cast<char>(tables.order[id]));
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
  vocab.tokens.emplace_back(kEndOfText);
  return vocab;
}

Status bpe_save(const BpeVocabulary& vocab, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io_error, "cannot create directory " + dir + ": " + ec.message());
  auto spell = [](const std::string& bytes) {
    std::string s;
    for (unsigned char c : bytes) s += byte_to_unicode(c);
    return s;
  };
  nlohmann::ordered_json v = nlohmann::ordered_json::object();
  const int eot = vocab.end_of_text_id();
  for (int id = 0; id < static_cast<int>(vocab.tokens.size()); ++id)
    v[id == eot ? std::string(kEndOfText) : spell(vocab.tokens[id])] = id;
  const std::string vocab_path = dir + "/vocab.json";
  {
    std::ofstream f(vocab_path, std::ios::binary);
    f << v.dump();
    if (!f) return make_error(ErrorCode::io_error, "cannot write " + vocab_path);
  }
  const std::string merges_path = dir + "/merges.txt";
  std::ofstream f(merges_path, std::ios::binary);
  f << "#version: 0.2\n";
  for (const auto& m : vocab.merges) f << spell(vocab.tokens[m.left]) << ' ' << spell(vocab.tokens[m.right]) << '\n';
  if (!f) return make_error(ErrorCode::io_error, "cannot write " + merges_path);
  return {};
}

Result<BpeVocabulary> bpe_load(const std::string& dir) {
  const std::string vocab_path = dir + "/vocab.json", merges_path = dir + "/merges.txt";
  for (const std::string& p : {vocab_path, merges_path})
    if (!std::filesystem::exists(p)) return make_error(ErrorCode::not_found, "no tokenizer file " + p);
  std::ifstream vf(vocab_path, std::ios::binary);
  nlohmann::json vocab_json = nlohmann::json::parse(vf, nullptr, /*allow_exceptions=*/false);
  if (!vocab_json.is_object())
    return make_error(ErrorCode::corrupt, vocab_path + " is not a JSON object of token -> id");
  // GPT-2's printable spelling -> byte
  std::unordered_map<std::string, unsigned char> unspell_char;
  for (int b = 0; b < 256; ++b) unspell_char[byte_to_unicode(static_cast<unsigned char>(b))] = static_cast<unsigned char>(b);
  auto unspell = [&](const std::string& s, std::string& bytes) {
    bytes.clear();
    for (std::size_t i = 0; i < s.size();) {
      int len = 0;
      decode_at(s, i, len);
      auto it = unspell_char.find(s.substr(i, len));
      if (it == unspell_char.end()) return false;
      bytes += static_cast<char>(it->second);
      i += len;
    }
    return true;
  };
  BpeVocabulary v;
  v.tokens.resize(vocab_json.size());
  std::unordered_map<std::string, int> id_of_spelling;
  int eot = -1;
  for (auto it = vocab_json.begin(); it != vocab_json.end(); ++it) {
    if (!it.value().is_number_integer())
      return make_error(ErrorCode::corrupt, vocab_path + ": the id of '" + it.key() + "' is not an integer");
    const std::int64_t id64 = it.value().get<std::int64_t>();
    if (id64 < 0 || id64 >= static_cast<std::int64_t>(v.tokens.size()))
      return make_error(ErrorCode::corrupt, vocab_path + ": id " + std::to_string(id64) + " is outside 0.." +
                                                std::to_string(v.tokens.size() - 1));
    const int id = static_cast<int>(id64);
    if (it.key() == kEndOfText) {
      eot = id;
      v.tokens[id] = std::string(kEndOfText);
      continue;
    }
    if (!unspell(it.key(), v.tokens[id]))
      return make_error(ErrorCode::corrupt, vocab_path + ": token '" + it.key() + "' is not in GPT-2's byte alphabet");
    id_of_spelling[it.key()] = id;
  }
  if (eot != static_cast<int>(v.tokens.size()) - 1)
    return make_error(ErrorCode::corrupt, vocab_path + ": <|endoftext|> must be the last id");
  std::ifstream mf(merges_path, std::ios::binary);
  std::string line;
  int line_no = 0;
  while (std::getline(mf, line)) {
    ++line_no;
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const auto space = line.find(' ');
    if (space == std::string::npos)
      return make_error(ErrorCode::corrupt, merges_path + ":" + std::to_string(line_no) + ": not two tokens");
    const std::string a = line.substr(0, space), b = line.substr(space + 1);
    auto ia = id_of_spelling.find(a), ib = id_of_spelling.find(b), ir = id_of_spelling.find(a + b);
    if (ia == id_of_spelling.end() || ib == id_of_spelling.end() || ir == id_of_spelling.end())
      return make_error(ErrorCode::corrupt, merges_path + ":" + std::to_string(line_no) + ": '" + line +
                                                "' names a token that is not in vocab.json");
    v.merges.push_back({ia->second, ib->second, ir->second});
  }
  return v;
}

// --- encoding with the merges ---------------------------------------------------------

BpeEncoder::BpeEncoder(const BpeVocabulary& vocab) : byte_to_id_(256, 0) {
  // the single-byte tokens (ids 0..255 in a vocabulary bpe_train made; anywhere in a loaded one)
  for (int id = 0; id < static_cast<int>(vocab.tokens.size()); ++id)
    if (vocab.tokens[id].size() == 1 && id != vocab.end_of_text_id())
      byte_to_id_[static_cast<unsigned char>(vocab.tokens[id][0])] = id;
  for (int r = 0; r < static_cast<int>(vocab.merges.size()); ++r) {
    rank_[pair_key(vocab.merges[r].left, vocab.merges[r].right)] = r;
    result_.push_back(vocab.merges[r].result);
  }
}

const std::vector<int>& BpeEncoder::encode_word(std::string_view word) {
  auto hit = cache_.find(std::string(word));
  if (hit != cache_.end()) return hit->second;
  std::vector<int> s;
  for (unsigned char c : word) s.push_back(byte_to_id_[c]);
  // GPT-2's bpe(): merge the lowest-ranked adjacent pair everywhere, until none is left.
  while (s.size() > 1) {
    int best_rank = -1;
    for (std::size_t k = 0; k + 1 < s.size(); ++k) {
      auto r = rank_.find(pair_key(s[k], s[k + 1]));
      if (r != rank_.end() && (best_rank < 0 || r->second < best_rank)) best_rank = r->second;
    }
    if (best_rank < 0) break;
    const int new_id = result_[best_rank];
    std::vector<int> merged;
    merged.reserve(s.size());
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (k + 1 < s.size()) {
        auto r = rank_.find(pair_key(s[k], s[k + 1]));
        if (r != rank_.end() && r->second == best_rank) {
          merged.push_back(new_id);
          ++k;
          continue;
        }
      }
      merged.push_back(s[k]);
    }
    s = std::move(merged);
  }
  return cache_.emplace(std::string(word), std::move(s)).first->second;
}

void BpeEncoder::encode_append(std::string_view text, std::vector<int>& out) {
  for (std::string_view piece : pretokenize(text)) {
    const std::vector<int>& ids = encode_word(piece);
    out.insert(out.end(), ids.begin(), ids.end());
  }
}

std::vector<int> BpeEncoder::encode(std::string_view text) {
  std::vector<int> out;
  encode_append(text, out);
  return out;
}

}  // namespace headlab::train
