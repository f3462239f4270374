// formats/gguf/gguf_tokenizer.cpp — GGUF's tokenizer metadata <-> headlab's tokenizer
// pipeline (see gguf_tokenizer.h). The metadata becomes a tokenizer.json; nothing here
// tokenizes.
#include "formats/gguf/gguf_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer_json.h"
#include "tokenizer/unicode.h"
#include "util/file.h"
#include "util/json_depth.h"

namespace headlab::model::gguf {

namespace {

using json = nlohmann::json;  // not ordered_json: its objects look keys up linearly (150k tokens)

// Llama 3's and Qwen 2's split patterns (their tokenizer.json's Split regexes).
constexpr const char* kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
constexpr const char* kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

json split_then_bytes(const char* pattern) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           json::array({{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
                        byte_level(false)})}};
}

// A token's id by its text, looked up by a view (no string made per lookup).
struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIds = std::unordered_map<std::string, int, TextHash, std::equal_to<>>;

// The merges of a SentencePiece BPE vocabulary: every split of a token into two tokens,
// ranked by the merged token's score (highest first), as Hugging Face's converter does.
std::vector<std::pair<std::string_view, std::string_view>> merges_from_scores(const std::vector<std::string>& tokens,
                                                                              const std::vector<float>& scores,
                                                                              const TokenIds& ids) {
  struct Candidate {
    float score;
    int merged, left, cut;
  };
  std::vector<Candidate> all;
  for (int id = 0; id < int(tokens.size()); id++) {
    const std::string_view t = tokens[std::size_t(id)];
    for (std::size_t cut = 1; cut < t.size(); cut++) {
      auto ia = ids.find(t.substr(0, cut));
      if (ia == ids.end() || ids.find(t.substr(cut)) == ids.end()) continue;
      all.push_back({scores[std::size_t(id)], id, ia->second, int(cut)});
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Candidate& x, const Candidate& y) {
    if (x.score != y.score) return x.score > y.score;
    if (x.merged != y.merged) return x.merged < y.merged;
    return x.left < y.left;
  });
  std::vector<std::pair<std::string_view, std::string_view>> merges;
  merges.reserve(all.size());
  for (const Candidate& c : all) {
    const std::string_view t = tokens[std::size_t(c.merged)];
    merges.emplace_back(t.substr(0, std::size_t(c.cut)), t.substr(std::size_t(c.cut)));
  }
  return merges;
}

}  // namespace

Result<std::string> tokenizer_json_from_file(const File& f) {
  auto corrupt = [&](const std::string& m) { return make_error(ErrorCode::corrupt, f.path + ": " + m); };
  auto unsupported = [&](const std::string& m) { return make_error(ErrorCode::unsupported, f.path + ": " + m); };
  const Value* model = f.find("tokenizer.ggml.model");
  if (!model) return make_error(ErrorCode::not_found, f.path + ": no tokenizer (tokenizer.ggml.model is missing)");
  if (model->type != ValueType::string) return corrupt("tokenizer.ggml.model is not a string");
  const Value* tokens = f.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != ValueType::array || tokens->element_type != ValueType::string)
    return corrupt("tokenizer.ggml.tokens is missing or not an array of strings");
  const std::size_t V = tokens->strings.size();
  const Value* types = f.find("tokenizer.ggml.token_type");
  if (types && (types->type != ValueType::array || !types->elements || types->count != V))
    return corrupt("tokenizer.ggml.token_type is not an array of one integer per token");
  auto token_id = [&](const char* key) -> Result<int> {
    const Value* v = f.find(key);
    if (!v) return -1;
    const auto n = v->as_int();
    if (!n || *n < 0 || std::uint64_t(*n) >= V) return corrupt(std::string(key) + " is not the id of a token");
    return int(*n);
  };
  auto flag = [&](const char* key, bool fallback) -> Result<bool> {
    const Value* v = f.find(key);
    if (!v) return fallback;
    if (!v->as_bool()) return corrupt(std::string(key) + " is not a bool");
    return *v->as_bool();
  };
  const bool spm = model->text == "llama";
  if (!spm && model->text != "gpt2")
    return unsupported("tokenizer.ggml.model \"" + model->text + "\" is not supported (gpt2, llama)");
  auto bos = token_id("tokenizer.ggml.bos_token_id");
  auto eos = token_id("tokenizer.ggml.eos_token_id");
  auto unk = token_id("tokenizer.ggml.unknown_token_id");
  auto add_bos = flag("tokenizer.ggml.add_bos_token", spm);
  auto add_eos = flag("tokenizer.ggml.add_eos_token", false);
  // SentencePiece's "▁" before the text (llama.cpp's default for "llama"; Gemma's files say false)
  auto add_space = flag("tokenizer.ggml.add_space_prefix", spm);
  for (auto* r : {&bos, &eos, &unk})
    if (!*r) return tl::unexpected(r->error());
  if (!add_bos) return tl::unexpected(add_bos.error());
  if (!add_eos) return tl::unexpected(add_eos.error());
  if (!add_space) return tl::unexpected(add_space.error());

  json vocab = json::object();
  TokenIds ids;
  for (std::size_t i = 0; i < V; i++) {
    if (utf8_find_invalid(tokens->strings[i]) >= 0)
      return corrupt("tokenizer.ggml.tokens[" + std::to_string(i) + "] is not valid UTF-8");
    if (!ids.emplace(tokens->strings[i], int(i)).second)
      return corrupt("tokenizer.ggml.tokens holds \"" + tokens->strings[i] + "\" twice");
    vocab[tokens->strings[i]] = i;
  }
  json added = json::array();
  if (types)
    for (std::size_t i = 0; i < V; i++) {
      const auto t = types->element_int(i);
      if (!t) return corrupt("tokenizer.ggml.token_type is not an integer array");
      if (*t == 3 || *t == 4)  // control, user-defined: matched whole before the model
        added.push_back({{"id", i}, {"content", tokens->strings[i]}, {"single_word", false}, {"lstrip", false},
                         {"rstrip", false}, {"normalized", *t == 4 && spm}, {"special", *t == 3}});
    }

  json merges = json::array();
  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  if (!spm) {
    const Value* m = f.find("tokenizer.ggml.merges");
    if (!m || m->type != ValueType::array || m->element_type != ValueType::string)
      return corrupt("tokenizer.ggml.merges is missing or not an array of strings");
    for (std::size_t i = 0; i < m->strings.size(); i++) {
      if (utf8_find_invalid(m->strings[i]) >= 0)
        return corrupt("tokenizer.ggml.merges[" + std::to_string(i) + "] is not valid UTF-8");
      merges.push_back(m->strings[i]);
    }
    std::string pre = "default";
    if (const Value* p = f.find("tokenizer.ggml.pre")) {
      if (p->type != ValueType::string) return corrupt("tokenizer.ggml.pre is not a string");
      pre = p->text;
    }
    bool ignore_merges = false;
    if (pre == "gpt-2" || pre == "default") j["pre_tokenizer"] = byte_level(true);
    else if (pre == "llama-bpe" || pre == "llama3") j["pre_tokenizer"] = split_then_bytes(kLlama3Pattern), ignore_merges = true;
    else if (pre == "qwen2") j["pre_tokenizer"] = split_then_bytes(kQwen2Pattern);
    else return unsupported("tokenizer.ggml.pre \"" + pre + "\" is not supported (gpt-2, default, llama-bpe, qwen2)");
    // Qwen 2's tokenizer.json normalizes to NFC first; the others have no normalizer
    j["normalizer"] = pre == "qwen2" ? json{{"type", "NFC"}} : json(nullptr);
    j["decoder"] = byte_level(true);
    j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"fuse_unk", false},
                  {"byte_fallback", false}, {"ignore_merges", ignore_merges}, {"vocab", vocab}, {"merges", merges}};
  } else {
    const Value* s = f.find("tokenizer.ggml.scores");
    if (!s || s->type != ValueType::array || !s->elements || s->count != V)
      return corrupt("tokenizer.ggml.scores is missing or not one number per token");
    std::vector<float> scores(V);
    for (std::size_t i = 0; i < V; i++) {
      const auto x = s->element_number(i);
      if (!x) return corrupt("tokenizer.ggml.scores is not a number array");
      scores[i] = float(*x);
    }
    for (const auto& [a, b] : merges_from_scores(tokens->strings, scores, ids)) merges.push_back(json::array({a, b}));
    // the text's spaces become "▁", and a "▁" goes first when add_space_prefix (Llama 2's
    // tokenizer.json: Prepend then Replace; Gemma's: Replace alone), taken off again on decoding
    json normalizers = json::array(), decoders = json::array();
    if (*add_space) normalizers.push_back({{"type", "Prepend"}, {"prepend", "\xe2\x96\x81"}});
    normalizers.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xe2\x96\x81"}});
    decoders.push_back({{"type", "Replace"}, {"pattern", {{"String", "\xe2\x96\x81"}}}, {"content", " "}});
    decoders.push_back({{"type", "ByteFallback"}});
    decoders.push_back({{"type", "Fuse"}});
    if (*add_space) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", normalizers}};
    j["pre_tokenizer"] = nullptr;
    j["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    j["model"] = {{"type", "BPE"}, {"dropout", nullptr},
                  {"unk_token", *unk >= 0 ? json(tokens->strings[std::size_t(*unk)]) : json(nullptr)},
                  {"fuse_unk", true}, {"byte_fallback", true}, {"ignore_merges", false}, {"vocab", vocab}, {"merges", merges}};
  }
  // the template: BOS before the text and EOS after it when the file asks for them
  json single = json::array(), specials = json::object();
  if (*add_bos && *bos >= 0) {
    single.push_back({{"SpecialToken", {{"id", tokens->strings[std::size_t(*bos)]}, {"type_id", 0}}}});
    specials[tokens->strings[std::size_t(*bos)]] = {{"id", tokens->strings[std::size_t(*bos)]}, {"ids", {*bos}},
                                                    {"tokens", {tokens->strings[std::size_t(*bos)]}}};
  }
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (*add_eos && *eos >= 0) {
    single.push_back({{"SpecialToken", {{"id", tokens->strings[std::size_t(*eos)]}, {"type_id", 0}}}});
    specials[tokens->strings[std::size_t(*eos)]] = {{"id", tokens->strings[std::size_t(*eos)]}, {"ids", {*eos}},
                                                    {"tokens", {tokens->strings[std::size_t(*eos)]}}};
  }
  j["post_processor"] = (*add_bos || *add_eos) ? json{{"type", "TemplateProcessing"}, {"single", single},
                                                      {"pair", single}, {"special_tokens", specials}}
                                               : json(nullptr);
  try {
    return j.dump();
  } catch (const json::exception& e) {  // a string the checks above missed
    return corrupt(std::string("the tokenizer metadata cannot be written as JSON: ") + e.what());
  }
}

Result<BpeTokenizer> tokenizer_from_file(const File& f) {
  auto text = tokenizer_json_from_file(f);
  if (!text) return tl::unexpected(text.error());
  return BpeTokenizer::from_tokenizer_json(*text, f.path + " (tokenizer.ggml.*)");
}

Result<BpeTokenizer> tokenizer_load(const std::string& path) {
  auto f = file_open(path);
  if (!f) return tl::unexpected(f.error());
  return tokenizer_from_file(*f);
}

namespace {

// vocab.json, merges.txt: a 256k-token vocabulary is about 10 MB
Result<std::string> read_text(const std::filesystem::path& p) { return file_read(p.string(), std::uint64_t(256) << 20); }

constexpr float kNoMerge = -1e9f;  // the score of a token no merge makes (a byte, a character)

// SentencePiece scores from BPE merges: a token's score is minus the rank of the first merge
// that makes it, so merges_from_scores (the reader) and llama.cpp's tokenizer (which merges the
// pair whose token scores highest) take them in the tokenizer.json's order.
std::vector<float> scores_from_merges(const std::unordered_map<std::string, int>& vocab,
                                      const std::vector<std::pair<std::string, std::string>>& merges) {
  std::vector<float> scores(vocab.size(), kNoMerge);
  for (std::size_t r = merges.size(); r-- > 0;) {
    auto it = vocab.find(merges[r].first + merges[r].second);
    if (it != vocab.end() && std::size_t(it->second) < scores.size()) scores[std::size_t(it->second)] = -float(r);
  }
  return scores;
}

// Which GGUF tokenizer a tokenizer.json is (TokenizerTables' kinds), into t.model, t.pre and
// t.add_space_prefix; unsupported, naming what differs, when it is none of them.
Status gguf_kind(const nlohmann::json& j, const TokenizerJson& tj, TokenizerTables& t, const std::string& what) {
  const nlohmann::json& norm = j.contains("normalizer") ? j["normalizer"] : nlohmann::json();
  const nlohmann::json& pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json();
  auto type_is = [](const nlohmann::json& x, const char* type) { return x.is_object() && x.value("type", "") == type; };
  auto byte_level_is = [&](const nlohmann::json& x, bool use_regex) {
    return type_is(x, "ByteLevel") && !x.value("add_prefix_space", false) && x.value("use_regex", true) == use_regex;
  };
  auto split_then_bytes_is = [&](const char* pattern) {
    if (!type_is(pre, "Sequence") || !pre.contains("pretokenizers") || pre["pretokenizers"].size() != 2) return false;
    const nlohmann::json& a = pre["pretokenizers"][0];
    return type_is(a, "Split") && a.contains("pattern") && a["pattern"].is_object() && a["pattern"].value("Regex", "") == pattern &&
           a.value("behavior", "") == "Isolated" && !a.value("invert", false) && byte_level_is(pre["pretokenizers"][1], false);
  };
  auto replace_space_is = [&](const nlohmann::json& x) {
    return type_is(x, "Replace") && x.contains("pattern") && x["pattern"].is_object() && x["pattern"].value("String", "") == " " &&
           x.value("content", "") == "\xe2\x96\x81";
  };
  auto unsupported = [&](const std::string& why) {
    return make_error(ErrorCode::unsupported, what + ": " + why + ", so no GGUF tokenizer llama.cpp reads says the same (headlab " +
                                                  "writes gpt-2, llama-bpe and qwen2 byte-level BPE, and SentencePiece BPE with byte fallback)");
  };
  if (tj.bpe.byte_level && !tj.bpe.byte_fallback) {
    t.model = "gpt2";
    if (norm.is_null() && byte_level_is(pre, true) && !tj.bpe.ignore_merges) t.pre = "gpt-2";
    else if (norm.is_null() && split_then_bytes_is(kLlama3Pattern) && tj.bpe.ignore_merges) t.pre = "llama-bpe";
    else if (type_is(norm, "NFC") && split_then_bytes_is(kQwen2Pattern) && !tj.bpe.ignore_merges) {
      t.pre = "qwen2";
      t.notes.push_back("llama.cpp's qwen2 tokenizer skips the NFC normalization Qwen's tokenizer.json asks for: on text "
                        "not in NFC (\"e\" + a combining accent) its ids differ from headlab's and Hugging Face's");
    }
    else
      return unsupported("its normalizer (" + norm.dump().substr(0, 80) + "), pre-tokenizer (" + pre.dump().substr(0, 160) +
                         ") and ignore_merges (" + (tj.bpe.ignore_merges ? "true" : "false") + ") are not GPT-2's, Llama 3's or Qwen 2's");
    return {};
  }
  if (tj.bpe.byte_fallback && !tj.bpe.byte_level) {
    t.model = "llama";
    if (tj.bpe.ignore_merges) return unsupported("its SentencePiece model ignores merges");
    const bool prepend_then_replace = type_is(norm, "Sequence") && norm.contains("normalizers") && norm["normalizers"].size() == 2 &&
                                      type_is(norm["normalizers"][0], "Prepend") &&
                                      norm["normalizers"][0].value("prepend", "") == "\xe2\x96\x81" &&
                                      replace_space_is(norm["normalizers"][1]);
    if (prepend_then_replace) t.add_space_prefix = true;
    else if (replace_space_is(norm)) t.add_space_prefix = false;
    else return unsupported("its normalizer (" + norm.dump().substr(0, 120) + ") is not SentencePiece's \"▁\" for spaces");
    // after the normalizer no space is left: a split at spaces changes nothing (Gemma 3's)
    const bool split_at_spaces = type_is(pre, "Split") && pre.contains("pattern") && pre["pattern"].is_object() &&
                                 pre["pattern"].value("String", "") == " " && !pre.value("invert", false);
    if (!pre.is_null() && !split_at_spaces) return unsupported("its pre-tokenizer (" + pre.dump().substr(0, 120) + ") splits the text");
    return {};
  }
  return unsupported(tj.bpe.byte_level ? "its BPE is byte-level and falls back to bytes" : "its BPE is neither byte-level nor falls back to bytes");
}

}  // namespace

Result<TokenizerTables> tokenizer_tables_load(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path d(dir);
  std::unordered_map<std::string, int> vocab;
  TokenizerTables t;
  std::vector<std::pair<std::string, int>> specials;
  std::map<int, bool> added;  // tokenizer.json's added tokens: special or not
  std::string what;
  if (fs::exists(d / "vocab.json", ec) && fs::exists(d / "merges.txt", ec)) {
    what = (d / "vocab.json").string();
    auto v = read_text(d / "vocab.json");
    if (!v) return tl::unexpected(v.error());
    auto m = read_text(d / "merges.txt");
    if (!m) return tl::unexpected(m.error());
    if (auto s = json_depth_check(*v, (d / "vocab.json").string()); !s) return tl::unexpected(s.error());
    try {
      const nlohmann::json j = nlohmann::json::parse(*v);  // kept alive: items() only refers to it
      if (!j.is_object()) return make_error(ErrorCode::corrupt, what + ": not a JSON object");
      for (auto it = j.begin(); it != j.end(); ++it) vocab[it.key()] = it.value().get<int>();
    } catch (const nlohmann::json::exception& e) {
      return make_error(ErrorCode::corrupt, what + ": " + e.what());
    }
    std::istringstream lines(*m);
    std::string line;
    while (std::getline(lines, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line.rfind("#version", 0) == 0) continue;
      t.merges.push_back(line);
    }
  } else if (fs::exists(d / "tokenizer.json", ec)) {
    what = (d / "tokenizer.json").string();
    auto text = read_text(d / "tokenizer.json");
    if (!text) return tl::unexpected(text.error());
    auto j = tokenizer_json_read(*text, what);  // every part checked and read, or refused by name
    if (!j) return tl::unexpected(j.error());
    // the normalizer and pre-tokenizer as written (the vocabulary and merges are skipped: read above)
    const nlohmann::json::parser_callback_t skip_model = [](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      return !(event == nlohmann::json::parse_event_t::key && depth == 1 && (parsed == "model" || parsed == "added_tokens"));
    };
    if (Status k = gguf_kind(nlohmann::json::parse(*text, skip_model), *j, t, what); !k) return tl::unexpected(k.error());
    vocab = std::move(j->vocab);
    if (t.model == "gpt2")
      for (auto& [a, b] : j->merges) t.merges.push_back(a + " " + b);
    else
      t.scores = scores_from_merges(vocab, j->merges);
    for (const AddedToken& a : j->added_tokens) {
      if (a.lstrip || a.rstrip || a.single_word)
        return make_error(ErrorCode::unsupported, what + ": added token \"" + a.content +
                                                      "\" strips spaces or matches single words, which GGUF cannot say");
      specials.emplace_back(a.content, a.id);
      added[a.id] = a.special;
    }
    if (j->bpe.unk_token) {
      auto u = vocab.find(*j->bpe.unk_token);
      if (u != vocab.end()) t.unk_id = u->second;
    }
  } else {
    return make_error(ErrorCode::not_found, dir + ": no tokenizer (needs vocab.json + merges.txt, or tokenizer.json)");
  }
  for (auto& [s, id] : specials) vocab[s] = id;
  if (t.model == "llama" && !t.scores.empty()) t.scores.resize(vocab.size(), kNoMerge);
  t.tokens.assign(vocab.size(), std::string());
  for (auto& [s, id] : vocab) {
    if (id < 0 || std::size_t(id) >= vocab.size() || !t.tokens[std::size_t(id)].empty())
      return make_error(ErrorCode::corrupt, what + ": the token ids are not 0 .. " + std::to_string(vocab.size() - 1) +
                                                " each once (\"" + s + "\" has " + std::to_string(id) + ")");
    t.tokens[std::size_t(id)] = s;
  }
  t.types.assign(t.tokens.size(), 1);
  if (added.empty())  // vocab.json + merges.txt: GPT-2's end of text is its one special token
    for (std::size_t i = 0; i < t.tokens.size(); i++)
      if (t.tokens[i] == kEndOfText) t.types[i] = 3;
  if (t.model == "llama") {
    t.scores.resize(t.tokens.size(), kNoMerge);
    for (std::size_t i = 0; i < t.tokens.size(); i++)
      if (t.tokens[i].size() == 6 && t.tokens[i].rfind("<0x", 0) == 0 && t.tokens[i].back() == '>') t.types[i] = 6;  // byte
    if (t.unk_id >= 0) t.types[std::size_t(t.unk_id)] = 2;
  }
  for (auto& [id, special] : added) t.types[std::size_t(id)] = special ? 3 : 4;
  // llama.cpp makes a few tokens special by their spelling alone (its end-of-generation list);
  // where such a token is an ordinary one here, llama.cpp matches it whole in the text
  for (const char* eog : {"</s>", "<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|eom_id|>"}) {
    auto it = vocab.find(eog);
    if (it != vocab.end() && t.types[std::size_t(it->second)] == 1)
      t.notes.push_back(std::string("llama.cpp treats \"") + eog + "\" (id " + std::to_string(it->second) +
                        ") as a special token by its spelling, so it matches it whole where this tokenizer splits it");
  }
  return t;
}

std::vector<Metadata> tokenizer_metadata(const TokenizerTables& t, int bos_id, int eos_id, bool add_bos) {
  std::vector<Metadata> m;
  m.emplace_back("tokenizer.ggml.model", meta_string(t.model));
  if (t.model == "gpt2") m.emplace_back("tokenizer.ggml.pre", meta_string(t.pre));
  m.emplace_back("tokenizer.ggml.tokens", meta_strings(t.tokens));
  if (t.model == "llama") m.emplace_back("tokenizer.ggml.scores", meta_f32s(t.scores));
  m.emplace_back("tokenizer.ggml.token_type", meta_i32s(t.types));
  if (t.model == "gpt2") m.emplace_back("tokenizer.ggml.merges", meta_strings(t.merges));
  m.emplace_back("tokenizer.ggml.bos_token_id", meta_u32(std::uint32_t(bos_id)));
  m.emplace_back("tokenizer.ggml.eos_token_id", meta_u32(std::uint32_t(eos_id)));
  if (t.model == "llama" && t.unk_id >= 0) m.emplace_back("tokenizer.ggml.unknown_token_id", meta_u32(std::uint32_t(t.unk_id)));
  m.emplace_back("tokenizer.ggml.add_bos_token", meta_bool(add_bos));
  if (t.model == "llama") m.emplace_back("tokenizer.ggml.add_space_prefix", meta_bool(t.add_space_prefix));
  return m;
}

}  // namespace headlab::model::gguf
