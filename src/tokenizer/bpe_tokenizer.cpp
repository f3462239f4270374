// tokenizer/bpe_tokenizer.cpp — GPT-2's byte-level BPE (see bpe_tokenizer.h for the steps).
#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <queue>
#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_alphabet.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/unicode.h"
#include "util/file.h"
#include "util/check.h"
#include "util/json_depth.h"
#include "util/json_error.h"

namespace headlab::model {

namespace {

// The raw bytes a vocabulary string stands for; characters outside the byte alphabet (only
// in hand-made vocabularies) stand for their own UTF-8.
std::string token_to_bytes(const std::string& token) {
  std::string out;
  for (std::size_t i = 0; i < token.size();) {
    int len;
    std::int32_t cp = utf8_decode(token, i, &len);
    const int byte = cp >= 0 ? unicode_to_byte(static_cast<std::uint32_t>(cp)) : -1;
    if (byte >= 0) out.push_back(static_cast<char>(byte));
    else out.append(token, i, len);
    i += len;
  }
  return out;
}

inline std::uint64_t pair_key(int left, int right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

}  // namespace

// The ids of each pre-token seen, so a word met again is not merged again: text repeats
// its words (a corpus of 10 MB has about 60,000 distinct pieces among 2.5 million), and
// the merge loop is quadratic in a piece's length. Shared by every thread that encodes
// with this tokenizer (the server's workers call encode concurrently through a const
// method), so it locks; it is split into shards, each with its own lock, so that threads
// rarely wait on each other. Bounded: a piece longer than kMaxPieceBytes is never kept
// (such pieces hardly repeat), and a shard that grows past its share of kMaxBytes is
// emptied and refills with what comes next — a long-running server that reads ever new
// text keeps at most kMaxBytes (about 16 MB), however much it is sent.
class PieceCache {
 public:
  static constexpr std::size_t kMaxBytes = std::size_t(16) << 20;
  static constexpr std::size_t kMaxPieceBytes = 64;

  // Appends the cached ids of piece to ids; false when the piece is not cached.
  bool find(std::string_view piece, std::vector<int>& ids) {
    const Probe probe{piece, std::hash<std::string_view>{}(piece)};
    Shard& shard = shards_[probe.hash % kShards];
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.map.find(probe);
    if (it == shard.map.end()) return false;
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    return true;
  }

  void insert(std::string_view piece, std::span<const int> piece_ids) {
    if (piece.size() > kMaxPieceBytes) return;
    const std::size_t hash = std::hash<std::string_view>{}(piece);
    Shard& shard = shards_[hash % kShards];
    // the key, the ids and the hash table's node and bucket, roughly
    const std::size_t cost = piece.size() + piece_ids.size() * sizeof(int) + 96;
    std::lock_guard<std::mutex> lock(shard.mutex);
    if (shard.bytes + cost > kMaxBytes / kShards) {
      shard.map.clear();
      shard.bytes = 0;
    }
    if (shard.map.emplace(Key{std::string(piece), hash}, std::vector<int>(piece_ids.begin(), piece_ids.end())).second)
      shard.bytes += cost;
  }

 private:
  static constexpr std::size_t kShards = 16;
  // Keys carry their hash, so a lookup hashes the piece once (for the shard and the table).
  struct Key {
    std::string text;
    std::size_t hash;
  };
  struct Probe {
    std::string_view text;
    std::size_t hash;
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(const Key& k) const { return k.hash; }
    std::size_t operator()(const Probe& p) const { return p.hash; }
  };
  struct Equal {
    using is_transparent = void;
    bool operator()(const Key& a, const Key& b) const { return a.text == b.text; }
    bool operator()(const Probe& a, const Key& b) const { return a.text == b.text; }
    bool operator()(const Key& a, const Probe& b) const { return a.text == b.text; }
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<Key, std::vector<int>, Hash, Equal> map;
    std::size_t bytes = 0;
  };
  std::array<Shard, kShards> shards_;
};

// A tokenizer.json's parts, shared (read-only) by copies of the tokenizer.
struct TokenizerPipeline {
  BpeOptions bpe;
  std::optional<Normalizer> normalizer;
  std::optional<PreTokenizer> pre_tokenizer;
  AddedTokenMatcher raw_tokens;         // normalized=false: found in the input
  AddedTokenMatcher normalized_tokens;  // normalized=true: found in the normalized text
  PostProcessor post_processor;
  Decoder decoder;
  int unk_id = -1;
  std::vector<int> byte_fallback_ids;   // (256) the "<0xXX>" token of each byte, -1 if none
};

BpeTokenizer::BpeTokenizer() : cache_(std::make_unique<PieceCache>()) {}
BpeTokenizer::BpeTokenizer(const BpeTokenizer& other)
    : token_to_id_(other.token_to_id_),
      id_to_token_(other.id_to_token_),
      id_to_bytes_(other.id_to_bytes_),
      byte_to_id_(other.byte_to_id_),
      merge_of_(other.merge_of_),
      merges_(other.merges_),
      endoftext_id_(other.endoftext_id_),
      cache_(std::make_unique<PieceCache>()),
      pipeline_(other.pipeline_) {}
BpeTokenizer& BpeTokenizer::operator=(const BpeTokenizer& other) {
  if (this != &other) *this = BpeTokenizer(other);
  return *this;
}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

std::vector<std::pair<int, int>> BpeTokenizer::split_pieces(std::string_view text) { return byte_level_split(text); }

Result<BpeTokenizer> BpeTokenizer::from_tables(std::unordered_map<std::string, int> vocab,
                                               std::vector<std::pair<std::string, std::string>> merges,
                                               const std::string& what) {
  return build(std::move(vocab), std::move(merges), what, true);
}

Result<BpeTokenizer> BpeTokenizer::build(std::unordered_map<std::string, int> vocab,
                                         std::vector<std::pair<std::string, std::string>> merges,
                                         const std::string& what, bool byte_level) {
  BpeTokenizer tok;
  int max_id = -1;
  for (const auto& [token, id] : vocab) {
    if (id < 0 || id > (1 << 24)) return make_error(ErrorCode::corrupt, what + ": token \"" + token + "\" has id " + std::to_string(id) + " out of range");
    max_id = std::max(max_id, id);
  }
  tok.id_to_token_.assign(max_id + 1, std::string());
  tok.id_to_bytes_.assign(max_id + 1, std::string());
  for (const auto& [token, id] : vocab) {
    if (!tok.id_to_token_[id].empty())
      return make_error(ErrorCode::corrupt, what + ": id " + std::to_string(id) + " is given to two tokens");
    tok.id_to_token_[id] = token;
    tok.id_to_bytes_[id] = token_to_bytes(token);
  }
  // Every single byte must be a token, or some text could not be encoded.
  tok.byte_to_id_.assign(256, 0);
  for (int b = 0; b < 256 && byte_level; b++) {
    auto it = vocab.find(byte_to_unicode(static_cast<unsigned char>(b)));
    if (it == vocab.end())
      return make_error(ErrorCode::corrupt, what + ": the vocabulary lacks the token for byte " + std::to_string(b) +
                                                " (not a byte-level BPE vocabulary)");
    tok.byte_to_id_[b] = it->second;
  }
  for (std::size_t r = 0; r < merges.size(); r++) {
    const auto& [a, b] = merges[r];
    auto result = vocab.find(a + b);
    if (result == vocab.end())
      return make_error(ErrorCode::corrupt, what + ": merge " + std::to_string(r + 1) + " (\"" + a + "\" \"" + b +
                                                "\") makes a token not in the vocabulary");
    // Every symbol of a piece is a byte's token or a merge's result, so a merge of a
    // string that is not a token can never apply: it needs no entry.
    auto left = vocab.find(a), right = vocab.find(b);
    if (left == vocab.end() || right == vocab.end()) continue;
    tok.merge_of_.emplace(pair_key(left->second, right->second),
                          Merge{static_cast<int>(r), result->second});  // the first occurrence wins
  }
  tok.merges_ = std::move(merges);
  auto eot = vocab.find(std::string(kEndOfText));
  tok.endoftext_id_ = eot == vocab.end() ? -1 : eot->second;
  tok.token_to_id_ = std::move(vocab);
  return tok;
}

Result<BpeTokenizer> BpeTokenizer::from_vocab_merges(std::string_view vocab_json, std::string_view merges_txt,
                                                     const std::string& what) {
  std::unordered_map<std::string, int> vocab;
  if (auto s = json_depth_check(vocab_json, what); !s) return tl::unexpected(s.error());
  try {
    nlohmann::json j = nlohmann::json::parse(vocab_json);
    if (!j.is_object()) return make_error(ErrorCode::corrupt, what + ": vocab.json is not a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it.value().is_number_unsigned() || it.value().get<std::uint64_t>() > 0x7fffffffu)
        return make_error(ErrorCode::corrupt, what + ": vocab.json: the id of \"" + it.key() + "\" is not a token id");
      vocab[it.key()] = static_cast<int>(it.value().get<std::uint64_t>());
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::corrupt, what + ": vocab.json: " + json_error_text(e.what()));
  }
  std::vector<std::pair<std::string, std::string>> merges;
  std::size_t line_no = 0, pos = 0;
  while (pos < merges_txt.size()) {
    std::size_t nl = merges_txt.find('\n', pos);
    if (nl == std::string_view::npos) nl = merges_txt.size();
    std::string_view line = merges_txt.substr(pos, nl - pos);
    pos = nl + 1;
    line_no++;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.substr(0, 9) == "#version:")) continue;
    std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 >= line.size() || line.find(' ', sp + 1) != std::string_view::npos)
      return make_error(ErrorCode::corrupt, what + ": merges.txt line " + std::to_string(line_no) +
                                                " is not two symbols separated by one space");
    merges.emplace_back(std::string(line.substr(0, sp)), std::string(line.substr(sp + 1)));
  }
  return from_tables(std::move(vocab), std::move(merges), what);
}

Result<BpeTokenizer> BpeTokenizer::from_tokenizer_json(std::string_view text, const std::string& what) {
  auto j = tokenizer_json_read(text, what);
  if (!j) return tl::unexpected(j.error());
  auto tok = build(std::move(j->vocab), std::move(j->merges), what, j->bpe.byte_level);
  if (!tok) return tok;
  auto p = std::make_shared<TokenizerPipeline>();
  p->bpe = j->bpe;
  p->normalizer = std::move(j->normalizer);
  p->pre_tokenizer = std::move(j->pre_tokenizer);
  p->post_processor = j->post_processor;
  p->decoder = j->decoder;
  if (p->bpe.unk_token) {
    auto it = tok->token_to_id_.find(*p->bpe.unk_token);
    if (it == tok->token_to_id_.end())
      return make_error(ErrorCode::corrupt, what + ": unk_token \"" + *p->bpe.unk_token + "\" is not in the vocabulary");
    p->unk_id = it->second;
  }
  p->byte_fallback_ids.assign(256, -1);
  if (p->bpe.byte_fallback)
    for (int b = 0; b < 256; b++) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto it = tok->token_to_id_.find(name);
      if (it != tok->token_to_id_.end()) p->byte_fallback_ids[b] = it->second;
    }
  // The display bytes of every model token: the decoder's, GPT-2's alphabet when it has none.
  if (!p->bpe.byte_level)
    for (std::size_t id = 0; id < tok->id_to_token_.size(); id++)
      tok->id_to_bytes_[id] = decoder_token_bytes(p->decoder, tok->id_to_token_[id]);
  // Added tokens live outside the model's vocabulary (Llama 3's 128,000+): give them ids.
  std::vector<AddedToken> raw, normalized;
  tok->endoftext_id_ = -1;
  for (const AddedToken& a : j->added_tokens) {
    if (a.id >= tok->vocab_size()) {
      tok->id_to_token_.resize(a.id + 1);
      tok->id_to_bytes_.resize(a.id + 1);
    }
    tok->id_to_token_[a.id] = a.content;
    tok->id_to_bytes_[a.id] = a.content;
    if (a.content == kEndOfText) tok->endoftext_id_ = a.id;
    (a.normalized ? normalized : raw).push_back(a);
  }
  for (int id : p->post_processor.before)
    if (id < 0 || id >= tok->vocab_size()) return make_error(ErrorCode::corrupt, what + ": post_processor id " + std::to_string(id) + " is not a token");
  for (int id : p->post_processor.after)
    if (id < 0 || id >= tok->vocab_size()) return make_error(ErrorCode::corrupt, what + ": post_processor id " + std::to_string(id) + " is not a token");
  p->raw_tokens = AddedTokenMatcher(std::move(raw));
  p->normalized_tokens = AddedTokenMatcher(std::move(normalized));
  tok->pipeline_ = std::move(p);
  return tok;
}

Result<BpeTokenizer> BpeTokenizer::load(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path d(dir);
  if (fs::exists(d / "vocab.json", ec) && fs::exists(d / "merges.txt", ec)) {
    auto vocab = file_read((d / "vocab.json").string(), kMaxTokenizerFileBytes);
    if (!vocab) return tl::unexpected(vocab.error());
    auto merges = file_read((d / "merges.txt").string(), kMaxTokenizerFileBytes);
    if (!merges) return tl::unexpected(merges.error());
    return from_vocab_merges(*vocab, *merges, dir + "/{vocab.json,merges.txt}");
  }
  if (fs::exists(d / "tokenizer.json", ec)) {
    auto text = file_read((d / "tokenizer.json").string(), kMaxTokenizerFileBytes);
    if (!text) return tl::unexpected(text.error());
    return from_tokenizer_json(*text, (d / "tokenizer.json").string());
  }
  return make_error(ErrorCode::not_found, dir + ": no tokenizer (needs vocab.json + merges.txt, or tokenizer.json)");
}

void BpeTokenizer::bpe_piece(std::string_view piece, std::vector<int>& ids) const {
  if (cache_->find(piece, ids)) return;
  // One symbol per byte; merge the lowest-ranked adjacent pair everywhere it occurs,
  // until no pair has a rank (GPT-2's bpe()).
  std::vector<int> word(piece.size());  // (symbols) token ids
  for (std::size_t i = 0; i < piece.size(); i++) word[i] = byte_to_id_[static_cast<unsigned char>(piece[i])];
  while (word.size() > 1) {
    Merge best{std::numeric_limits<int>::max(), -1};
    std::uint64_t best_key = 0;
    for (std::size_t i = 0; i + 1 < word.size(); i++) {
      auto it = merge_of_.find(pair_key(word[i], word[i + 1]));
      if (it != merge_of_.end() && it->second.rank < best.rank) {
        best = it->second;
        best_key = it->first;
      }
    }
    if (best.result < 0) break;
    std::size_t out = 0;
    for (std::size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && pair_key(word[i], word[i + 1]) == best_key) {
        word[out++] = best.result;
        i += 2;
      } else {
        word[out++] = word[i++];
      }
    }
    word.resize(out);
  }
  cache_->insert(piece, word);
  ids.insert(ids.end(), word.begin(), word.end());
}

Status BpeTokenizer::encode_into(std::string_view text, EncodeOptions options, std::vector<int>& ids,
                                 std::vector<int>* ends) const {
  // a default-constructed or moved-from tokenizer has no tables: only load/from_* make one
  HEADLAB_CHECK(byte_to_id_.size() == 256 && cache_ != nullptr);
  if (long long bad = utf8_find_invalid(text); bad >= 0)
    return make_error(ErrorCode::invalid_argument, "the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  if (text.size() > std::size_t(std::numeric_limits<int>::max() / 2))
    return make_error(ErrorCode::too_long, "the text is larger than 1 GB");
  if (pipeline_) {
    std::vector<std::pair<int, int>> spans;
    if (Status st = encode_pipeline(text, options, ids, ends ? &spans : nullptr); !st) return st;
    if (ends)
      for (auto [b, e] : spans) ends->push_back(e);
    return {};
  }
  const bool special = options.special && endoftext_id_ >= 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t at = special ? text.find(kEndOfText, pos) : std::string_view::npos;
    const std::size_t stop = at == std::string_view::npos ? text.size() : at;
    std::string_view chunk = text.substr(pos, stop - pos);
    for (auto [b, e] : split_pieces(chunk)) {
      const std::size_t first = ids.size();
      bpe_piece(chunk.substr(b, e - b), ids);
      if (ends) {
        // the tokens of a piece tile it: each ends where its bytes end
        int end = static_cast<int>(pos) + b;
        for (std::size_t k = first; k < ids.size(); k++) {
          end += static_cast<int>(id_to_bytes_[ids[k]].size());
          ends->push_back(end);
        }
      }
    }
    if (at == std::string_view::npos) break;
    ids.push_back(endoftext_id_);
    if (ends) ends->push_back(static_cast<int>(at + kEndOfText.size()));
    pos = at + kEndOfText.size();
  }
  return {};
}

// One symbol of a piece being merged: a token id and the bytes [b, e) of the piece it covers.
struct BpeSymbol {
  int id;
  int b, e;
};

// Merges syms as Hugging Face's BPE does: the lowest-ranked adjacent pair first, the leftmost
// among equals, through a heap over a linked list, so a long piece (Llama 2 has no
// pre-tokenizer: a whole text is one piece) costs O(n log n), not O(n^2).
void BpeTokenizer::merge_symbols(std::vector<BpeSymbol>& syms) const {
  if (syms.size() < 2) return;
  struct Node {
    BpeSymbol sym;
    int prev, next;
  };
  struct Candidate {
    int rank, left, result, left_id, right_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  const int n = static_cast<int>(syms.size());
  std::vector<Node> nodes(n);
  for (int i = 0; i < n; i++) nodes[i] = {syms[i], i - 1, i + 1 < n ? i + 1 : -1};
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto consider = [&](int left) {
    if (left < 0 || nodes[left].next < 0) return;
    const int right = nodes[left].next;
    auto it = merge_of_.find(pair_key(nodes[left].sym.id, nodes[right].sym.id));
    if (it != merge_of_.end())
      heap.push({it->second.rank, left, it->second.result, nodes[left].sym.id, nodes[right].sym.id});
  };
  for (int i = 0; i + 1 < n; i++) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Node& left = nodes[c.left];
    // stale: the left symbol was merged into its neighbour, or either side has changed
    if (left.sym.id != c.left_id || left.next < 0 || nodes[left.next].sym.id != c.right_id || left.sym.e < 0) continue;
    Node& right = nodes[left.next];
    left.sym = {c.result, left.sym.b, right.sym.e};
    right.sym.e = -1;  // gone
    right.sym.id = -1;
    left.next = right.next;
    if (left.next >= 0) nodes[left.next].prev = c.left;
    consider(left.prev);
    consider(c.left);
  }
  syms.clear();
  for (int i = 0; i >= 0; i = nodes[i].next) syms.push_back(nodes[i].sym);
}

Status BpeTokenizer::encode_pipeline(std::string_view text, EncodeOptions options, std::vector<int>& ids,
                                     std::vector<std::pair<int, int>>* spans) const {
  const TokenizerPipeline& p = *pipeline_;
  const std::size_t first_id = ids.size();
  auto emit = [&](int id, int b, int e) {
    ids.push_back(id);
    if (spans) spans->emplace_back(b, e);
  };
  // The BPE model on one piece (Hugging Face's BPE::tokenize).
  auto model_piece = [&](const AlignedText& piece) -> Status {
    const std::string& s = piece.text;
    auto out = [&](const BpeSymbol& sym) { emit(sym.id, piece.begin[sym.b], piece.end[sym.e - 1]); };
    std::vector<BpeSymbol> syms;
    if (p.bpe.byte_level) {
      if (p.bpe.ignore_merges) {
        std::string spelled;
        for (unsigned char c : s) spelled += byte_to_unicode(c);
        if (auto it = token_to_id_.find(spelled); it != token_to_id_.end()) {
          out({it->second, 0, static_cast<int>(s.size())});
          return {};
        }
      }
      std::vector<int> piece_ids;
      bpe_piece(s, piece_ids);
      int at = 0;
      for (int id : piece_ids) {
        const int len = static_cast<int>(id_to_bytes_[id].size());
        out({id, at, at + len});
        at += len;
      }
      return {};
    }
    if (p.bpe.ignore_merges)
      if (auto it = token_to_id_.find(s); it != token_to_id_.end()) {
        out({it->second, 0, static_cast<int>(s.size())});
        return {};
      }
    // one symbol per character; one per byte ("<0xE2>") for a character not in the vocabulary
    for (std::size_t i = 0; i < s.size();) {
      int len = 1;
      utf8_decode(s, i, &len);
      if (len <= 0) len = 1;
      const int b = static_cast<int>(i), e = static_cast<int>(i) + len;
      if (auto it = token_to_id_.find(s.substr(i, len)); it != token_to_id_.end()) {
        syms.push_back({it->second, b, e});
      } else {
        bool all = p.bpe.byte_fallback;
        for (int k = b; k < e && all; k++) all = p.byte_fallback_ids[static_cast<unsigned char>(s[k])] >= 0;
        if (all) {
          for (int k = b; k < e; k++) syms.push_back({p.byte_fallback_ids[static_cast<unsigned char>(s[k])], k, k + 1});
        } else if (p.unk_id >= 0) {
          if (p.bpe.fuse_unk && !syms.empty() && syms.back().id == p.unk_id) syms.back().e = e;
          else syms.push_back({p.unk_id, b, e});
        } else {
          return make_error(ErrorCode::invalid_argument, "the text has a character the vocabulary lacks, and the tokenizer has no unk_token");
        }
      }
      i += len;
    }
    merge_symbols(syms);
    for (const BpeSymbol& sym : syms) out(sym);
    return {};
  };
  // A text between added tokens: normalize, find the normalized added tokens, pre-tokenize.
  auto plain = [&](std::string_view segment, int at) -> Status {
    AlignedText t = AlignedText::identity(segment, at);
    if (p.normalizer) normalizer_apply(*p.normalizer, t);
    std::vector<AddedTokenMatch> found = p.normalized_tokens.find(t.text, options.special);
    std::size_t pos = 0;
    for (std::size_t k = 0; k <= found.size(); k++) {
      const std::size_t stop = k < found.size() ? static_cast<std::size_t>(found[k].begin) : t.text.size();
      if (stop > pos) {
        std::vector<AlignedText> pieces{t.slice(pos, stop)};
        const bool at_start = pieces[0].input_begin(0) == 0;  // Metaspace's "first"
        if (p.pre_tokenizer) pieces = pre_tokenizer_apply(*p.pre_tokenizer, std::move(pieces), at_start);
        for (const AlignedText& piece : pieces)
          if (Status st = model_piece(piece); !st) return st;
      }
      if (k == found.size()) break;
      emit(found[k].id, t.input_begin(found[k].begin), found[k].end > found[k].begin ? t.end[found[k].end - 1] : t.input_begin(found[k].begin));
      pos = found[k].end;
    }
    return {};
  };
  if (options.template_tokens)
    for (int id : p.post_processor.before) emit(id, 0, 0);
  std::vector<AddedTokenMatch> found = p.raw_tokens.find(text, options.special);
  std::size_t pos = 0;
  for (std::size_t k = 0; k <= found.size(); k++) {
    const std::size_t stop = k < found.size() ? static_cast<std::size_t>(found[k].begin) : text.size();
    if (stop > pos)
      if (Status st = plain(text.substr(pos, stop - pos), static_cast<int>(pos)); !st) {
        ids.resize(first_id);
        return st;
      }
    if (k == found.size()) break;
    emit(found[k].id, found[k].begin, found[k].end);
    pos = found[k].end;
  }
  if (options.template_tokens)
    for (int id : p.post_processor.after) emit(id, static_cast<int>(text.size()), static_cast<int>(text.size()));
  return {};
}

Result<std::vector<Token>> BpeTokenizer::encode(std::string_view text, EncodeOptions options) const {
  if (pipeline_) {
    if (long long bad = utf8_find_invalid(text); bad >= 0)
      return make_error(ErrorCode::invalid_argument, "the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
    if (text.size() > std::size_t(std::numeric_limits<int>::max() / 2))
      return make_error(ErrorCode::too_long, "the text is larger than 1 GB");
    std::vector<int> ids;
    std::vector<std::pair<int, int>> spans;
    if (Status s = encode_pipeline(text, options, ids, &spans); !s) return tl::unexpected(s.error());
    std::vector<Token> out;
    out.reserve(ids.size());
    // a token shows the bytes it stands for (after normalization: "▁" shows as " "); its
    // span is where those bytes came from in the input
    for (std::size_t i = 0; i < ids.size(); i++) out.push_back({ids[i], id_to_bytes_[ids[i]], spans[i].first, spans[i].second});
    return out;
  }
  std::vector<int> ids, ends;
  if (Status s = encode_into(text, options, ids, &ends); !s) return tl::unexpected(s.error());
  std::vector<Token> out;
  out.reserve(ids.size());
  int begin = 0;
  for (std::size_t i = 0; i < ids.size(); i++) {
    out.push_back({ids[i], std::string(text.substr(begin, ends[i] - begin)), begin, ends[i]});
    begin = ends[i];
  }
  return out;
}

Result<std::vector<int>> BpeTokenizer::encode_ids(std::string_view text, EncodeOptions options) const {
  std::vector<int> ids;
  if (Status s = encode_into(text, options, ids, nullptr); !s) return tl::unexpected(s.error());
  return ids;
}

Status BpeTokenizer::encode_append(std::string_view text, std::vector<int>& ids, EncodeOptions options) const {
  const std::size_t before = ids.size();
  Status s = encode_into(text, options, ids, nullptr);
  if (!s) ids.resize(before);
  return s;
}

std::string BpeTokenizer::token_bytes(int id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return id_to_bytes_[id];
}

Result<std::string> BpeTokenizer::decode(std::span<const int> ids) const {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); i++) {
    if (ids[i] < 0 || ids[i] >= vocab_size() || id_to_token_[ids[i]].empty())
      return make_error(ErrorCode::invalid_argument, "token " + std::to_string(i) + ": id " + std::to_string(ids[i]) +
                                                         " is not in the vocabulary");
    out += id_to_bytes_[ids[i]];
  }
  if (pipeline_) decoder_finish(pipeline_->decoder, out);
  return out;
}

Status BpeTokenizer::save(const std::string& dir) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io_error, dir + ": cannot create the directory: " + ec.message());
  // {"token":id,...} in id order, written by hand: an ordered_json object looks each key
  // up linearly, which takes seconds for GPT-2's 50,257 keys
  std::string v = "{";
  for (std::size_t id = 0; id < id_to_token_.size(); id++) {
    if (id_to_token_[id].empty()) continue;
    if (v.size() > 1) v += ',';
    v += nlohmann::json(id_to_token_[id]).dump();
    v += ':';
    v += std::to_string(id);
  }
  v += '}';
  {
    std::ofstream out(fs::path(dir) / "vocab.json", std::ios::binary);
    out << v;
    if (!out) return make_error(ErrorCode::io_error, dir + "/vocab.json: write failed");
  }
  std::ofstream out(fs::path(dir) / "merges.txt", std::ios::binary);
  out << "#version: 0.2\n";
  for (const auto& [a, b] : merges_) out << a << ' ' << b << '\n';
  if (!out) return make_error(ErrorCode::io_error, dir + "/merges.txt: write failed");
  return {};
}

}  // namespace headlab::model
