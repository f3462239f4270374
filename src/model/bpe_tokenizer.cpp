// model/bpe_tokenizer.cpp — GPT-2's byte-level BPE (see bpe_tokenizer.h for the steps).
#include "model/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/unicode.h"
#include "util/file.h"

namespace headlab::model {

namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to 256 + n, so
// every byte is a visible character and no token contains a space.
struct ByteMap {
  std::array<std::string, 256> byte_to_text;        // byte -> UTF-8 of its character
  std::unordered_map<std::uint32_t, int> cp_to_byte;  // code point -> byte
  ByteMap() {
    int n = 0;
    for (int b = 0; b < 256; b++) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      const std::uint32_t cp = printable ? b : 256 + n++;
      utf8_append(byte_to_text[b], cp);
      cp_to_byte[cp] = b;
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

// The raw bytes a vocabulary string stands for; characters outside the byte map (only in
// hand-made vocabularies) stand for their own UTF-8.
std::string token_to_bytes(const std::string& token) {
  std::string out;
  for (std::size_t i = 0; i < token.size();) {
    int len;
    std::int32_t cp = utf8_decode(token, i, &len);
    auto it = cp >= 0 ? byte_map().cp_to_byte.find(static_cast<std::uint32_t>(cp)) : byte_map().cp_to_byte.end();
    if (it != byte_map().cp_to_byte.end()) out.push_back(static_cast<char>(it->second));
    else out.append(token, i, len);
    i += len;
  }
  return out;
}

}  // namespace

std::vector<std::pair<int, int>> BpeTokenizer::split_pieces(std::string_view text) {
  // The pattern, alternatives tried in order at each position:
  //   's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
  enum Class { kLetter, kNumber, kSpace, kOther };
  std::vector<std::uint32_t> cps;
  std::vector<int> offs;  // byte offset of each code point, plus the end
  for (std::size_t i = 0; i < text.size();) {
    int len;
    std::int32_t cp = utf8_decode(text, i, &len);
    cps.push_back(cp < 0 ? 0xfffd : static_cast<std::uint32_t>(cp));
    offs.push_back(static_cast<int>(i));
    i += len;
  }
  offs.push_back(static_cast<int>(text.size()));
  const int n = static_cast<int>(cps.size());
  auto cls = [&](int i) {
    std::uint32_t c = cps[i];
    if (is_letter(c)) return kLetter;
    if (is_number(c)) return kNumber;
    if (is_whitespace(c)) return kSpace;
    return kOther;
  };
  std::vector<std::pair<int, int>> pieces;
  int i = 0;
  while (i < n) {
    int end = -1;
    // 1. contractions
    if (cps[i] == '\'' && i + 1 < n) {
      std::uint32_t a = cps[i + 1], b = i + 2 < n ? cps[i + 2] : 0;
      if (a == 's' || a == 't' || a == 'm' || a == 'd') end = i + 2;
      else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) end = i + 3;
    }
    // 2-4. an optional space, then a run of one class
    if (end < 0) {
      int j = (cps[i] == ' ' && i + 1 < n) ? i + 1 : i;
      for (Class want : {kLetter, kNumber, kOther}) {
        int start = (j > i && cls(j) == want) ? j : i;
        if (cls(start) != want) continue;
        int k = start;
        while (k < n && cls(k) == want) k++;
        end = k;
        break;
      }
    }
    // 5-6. white space: the run, minus its last character if a non-space follows
    if (end < 0) {
      int k = i;
      while (k < n && cls(k) == kSpace) k++;
      end = (k < n && k - i > 1) ? k - 1 : k;
    }
    pieces.emplace_back(offs[i], offs[end]);
    i = end;
  }
  return pieces;
}

Result<BpeTokenizer> BpeTokenizer::build(std::unordered_map<std::string, int> vocab,
                                         std::vector<std::pair<std::string, std::string>> merges,
                                         const std::string& what) {
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
  for (int b = 0; b < 256; b++)
    if (!vocab.count(byte_map().byte_to_text[b]))
      return make_error(ErrorCode::corrupt, what + ": the vocabulary lacks the token for byte " + std::to_string(b) +
                                                " (not a byte-level BPE vocabulary)");
  for (std::size_t r = 0; r < merges.size(); r++) {
    const auto& [a, b] = merges[r];
    if (!vocab.count(a + b))
      return make_error(ErrorCode::corrupt, what + ": merge " + std::to_string(r + 1) + " (\"" + a + "\" \"" + b +
                                                "\") makes a token not in the vocabulary");
    tok.merge_rank_.emplace(a + " " + b, static_cast<int>(r));  // the first occurrence wins
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
  try {
    nlohmann::json j = nlohmann::json::parse(vocab_json);
    if (!j.is_object()) return make_error(ErrorCode::corrupt, what + ": vocab.json is not a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it.value().is_number_unsigned() || it.value().get<std::uint64_t>() > 0x7fffffffu)
        return make_error(ErrorCode::corrupt, what + ": vocab.json: the id of \"" + it.key() + "\" is not a token id");
      vocab[it.key()] = static_cast<int>(it.value().get<std::uint64_t>());
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::corrupt, what + ": vocab.json: " + e.what());
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
  return build(std::move(vocab), std::move(merges), what);
}

Result<BpeTokenizer> BpeTokenizer::from_tokenizer_json(std::string_view text, const std::string& what) {
  std::unordered_map<std::string, int> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    const nlohmann::json& model = j.at("model");
    if (model.contains("type") && model["type"].get<std::string>() != "BPE")
      return make_error(ErrorCode::unsupported, what + ": model type \"" + model["type"].get<std::string>() +
                                                    "\" is not BPE");
    for (auto it = model.at("vocab").begin(); it != model.at("vocab").end(); ++it) {
      if (!it.value().is_number_unsigned() || it.value().get<std::uint64_t>() > 0x7fffffffu)
        return make_error(ErrorCode::corrupt, what + ": the id of \"" + it.key() + "\" is not a token id");
      vocab[it.key()] = static_cast<int>(it.value().get<std::uint64_t>());
    }
    for (const auto& m : model.at("merges")) {
      if (m.is_string()) {
        std::string s = m.get<std::string>();
        std::size_t sp = s.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size())
          return make_error(ErrorCode::corrupt, what + ": merge \"" + s + "\" is not two symbols");
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else {
        merges.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
      }
    }
    if (j.contains("added_tokens") && j["added_tokens"].is_array())
      for (const auto& t : j["added_tokens"]) {
        if (!t.at("id").is_number_unsigned() || t.at("id").get<std::uint64_t>() > 0x7fffffffu)
          return make_error(ErrorCode::corrupt, what + ": an added token's id is not a token id");
        vocab[t.at("content").get<std::string>()] = static_cast<int>(t.at("id").get<std::uint64_t>());
      }
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::corrupt, what + ": " + e.what());
  }
  return build(std::move(vocab), std::move(merges), what);
}

Result<BpeTokenizer> BpeTokenizer::load(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path d(dir);
  if (fs::exists(d / "vocab.json", ec) && fs::exists(d / "merges.txt", ec)) {
    auto vocab = file_read((d / "vocab.json").string());
    if (!vocab) return tl::unexpected(vocab.error());
    auto merges = file_read((d / "merges.txt").string());
    if (!merges) return tl::unexpected(merges.error());
    return from_vocab_merges(*vocab, *merges, dir + "/{vocab.json,merges.txt}");
  }
  if (fs::exists(d / "tokenizer.json", ec)) {
    auto text = file_read((d / "tokenizer.json").string());
    if (!text) return tl::unexpected(text.error());
    return from_tokenizer_json(*text, (d / "tokenizer.json").string());
  }
  return make_error(ErrorCode::not_found, dir + ": no tokenizer (needs vocab.json + merges.txt, or tokenizer.json)");
}

void BpeTokenizer::bpe_piece(std::string_view piece, int piece_begin, std::vector<Token>& out) const {
  // One symbol per byte, with its byte span; merge the lowest-ranked adjacent pair
  // everywhere it occurs, until no pair has a rank.
  struct Symbol {
    std::string text;  // byte-level unicode
    int begin, end;    // bytes in the input
  };
  std::vector<Symbol> word;
  for (std::size_t i = 0; i < piece.size(); i++) {
    const int off = piece_begin + static_cast<int>(i);
    word.push_back({byte_map().byte_to_text[static_cast<unsigned char>(piece[i])], off, off + 1});
  }
  std::string key;
  while (word.size() > 1) {
    int best = std::numeric_limits<int>::max();
    std::string first, second;
    for (std::size_t i = 0; i + 1 < word.size(); i++) {
      key = word[i].text + " " + word[i + 1].text;
      auto it = merge_rank_.find(key);
      if (it != merge_rank_.end() && it->second < best) {
        best = it->second;
        first = word[i].text;
        second = word[i + 1].text;
      }
    }
    if (best == std::numeric_limits<int>::max()) break;
    std::vector<Symbol> merged;
    for (std::size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i].text == first && word[i + 1].text == second) {
        merged.push_back({first + second, word[i].begin, word[i + 1].end});
        i += 2;
      } else {
        merged.push_back(std::move(word[i]));
        i += 1;
      }
    }
    word = std::move(merged);
  }
  for (Symbol& s : word) {
    auto it = token_to_id_.find(s.text);
    // build() guarantees every byte and every merge result is in the vocabulary
    const int id = it->second;
    out.push_back({id, id_to_bytes_[id], s.begin, s.end});
  }
}

Result<std::vector<Token>> BpeTokenizer::encode(std::string_view text) const {
  if (long long bad = utf8_find_invalid(text); bad >= 0)
    return make_error(ErrorCode::invalid_argument, "the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  if (text.size() > std::size_t(std::numeric_limits<int>::max() / 2))
    return make_error(ErrorCode::too_long, "the text is larger than 1 GB");
  std::vector<Token> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t special = endoftext_id_ >= 0 ? text.find(kEndOfText, pos) : std::string_view::npos;
    const std::size_t stop = special == std::string_view::npos ? text.size() : special;
    std::string_view chunk = text.substr(pos, stop - pos);
    for (auto [b, e] : split_pieces(chunk))
      bpe_piece(chunk.substr(b, e - b), static_cast<int>(pos) + b, out);
    if (special == std::string_view::npos) break;
    out.push_back({endoftext_id_, std::string(kEndOfText), static_cast<int>(special),
                   static_cast<int>(special + kEndOfText.size())});
    pos = special + kEndOfText.size();
  }
  return out;
}

Result<std::vector<int>> BpeTokenizer::encode_ids(std::string_view text) const {
  auto toks = encode(text);
  if (!toks) return tl::unexpected(toks.error());
  std::vector<int> ids;
  ids.reserve(toks->size());
  for (const Token& t : *toks) ids.push_back(t.id);
  return ids;
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
  return out;
}

Status BpeTokenizer::save(const std::string& dir) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io_error, dir + ": cannot create the directory: " + ec.message());
  nlohmann::ordered_json v = nlohmann::ordered_json::object();
  for (std::size_t id = 0; id < id_to_token_.size(); id++)
    if (!id_to_token_[id].empty()) v[id_to_token_[id]] = id;
  {
    std::ofstream out(fs::path(dir) / "vocab.json", std::ios::binary);
    out << v.dump();
    if (!out) return make_error(ErrorCode::io_error, dir + "/vocab.json: write failed");
  }
  std::ofstream out(fs::path(dir) / "merges.txt", std::ios::binary);
  out << "#version: 0.2\n";
  for (const auto& [a, b] : merges_) out << a << ' ' << b << '\n';
  if (!out) return make_error(ErrorCode::io_error, dir + "/merges.txt: write failed");
  return {};
}

}  // namespace headlab::model
