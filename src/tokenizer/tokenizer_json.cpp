// tokenizer/tokenizer_json.cpp — the reader of tokenizer/tokenizer_json.h.
#include "tokenizer/tokenizer_json.h"
#include "util/json_depth.h"
#include "util/json_error.h"

#include <nlohmann/json.hpp>

namespace headlab::model {

namespace {

using json = nlohmann::json;

// A refusal or a corruption, carried out of the recursive readers by exception and turned
// into an Error at the one entry point.
struct Refusal {
  ErrorCode code;
  std::string message;
};
[[noreturn]] void refuse(const std::string& m) { throw Refusal{ErrorCode::unsupported, m}; }
[[noreturn]] void corrupt(const std::string& m) { throw Refusal{ErrorCode::corrupt, m}; }

std::string type_of(const json& j, const char* part) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) corrupt(std::string(part) + " has no type");
  return j["type"].get<std::string>();
}

bool flag(const json& j, const char* key, bool fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  return j[key].get<bool>();
}

Regex compile(const std::string& pattern, const char* part) {
  auto re = Regex::compile(pattern);
  if (!re) corrupt(std::string(part) + ": " + re.error().message);
  return std::move(*re);
}

// {"String": s} or {"Regex": r}: the literal, or the compiled regex.
void read_pattern(const json& p, const char* part, std::string& literal, std::optional<Regex>& regex) {
  if (p.contains("String")) literal = p["String"].get<std::string>();
  else if (p.contains("Regex")) regex = compile(p["Regex"].get<std::string>(), part);
  else corrupt(std::string(part) + ": pattern is neither String nor Regex");
}

Normalizer read_normalizer(const json& j) {
  const std::string type = type_of(j, "normalizer");
  Normalizer n;
  using K = Normalizer::Kind;
  if (type == "NFC") n.kind = K::nfc;
  else if (type == "NFD") n.kind = K::nfd;
  else if (type == "NFKC") n.kind = K::nfkc;
  else if (type == "NFKD") n.kind = K::nfkd;
  else if (type == "Lowercase") n.kind = K::lowercase;
  else if (type == "Strip") {
    n.kind = K::strip;
    n.strip_left = flag(j, "strip_left", false);
    n.strip_right = flag(j, "strip_right", false);
  } else if (type == "Prepend") {
    n.kind = K::prepend;
    n.prepend = j.at("prepend").get<std::string>();
  } else if (type == "Replace") {
    n.kind = K::replace;
    read_pattern(j.at("pattern"), "normalizer Replace", n.pattern, n.regex);
    n.content = j.at("content").get<std::string>();
  } else if (type == "Sequence") {
    n.kind = K::sequence;
    for (const json& s : j.at("normalizers")) n.steps.push_back(read_normalizer(s));
  } else {
    refuse("normalizer type '" + type + "' is not supported");
  }
  return n;
}

SplitBehavior read_behavior(const json& j, const char* part) {
  const std::string b = j.at("behavior").get<std::string>();
  if (b == "Removed") return SplitBehavior::removed;
  if (b == "Isolated") return SplitBehavior::isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (b == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (b == "Contiguous") return SplitBehavior::contiguous;
  refuse(std::string(part) + " behavior '" + b + "' is not supported");
}

PreTokenizer read_pre_tokenizer(const json& j, bool& byte_level) {
  const std::string type = type_of(j, "pre_tokenizer");
  PreTokenizer p;
  using K = PreTokenizer::Kind;
  if (type == "ByteLevel") {
    p.kind = K::byte_level;
    p.add_prefix_space = flag(j, "add_prefix_space", true);
    p.use_regex = flag(j, "use_regex", true);
    byte_level = true;
  } else if (type == "Split") {
    p.kind = K::split;
    read_pattern(j.at("pattern"), "pre_tokenizer Split", p.pattern, p.regex);
    p.behavior = read_behavior(j, "pre_tokenizer Split");
    p.invert = flag(j, "invert", false);
  } else if (type == "Digits") {
    p.kind = K::digits;
    p.individual_digits = flag(j, "individual_digits", false);
  } else if (type == "Metaspace") {
    p.kind = K::metaspace;
    if (j.contains("replacement")) p.replacement = j["replacement"].get<std::string>();
    std::string scheme = "always";
    if (j.contains("prepend_scheme")) scheme = j["prepend_scheme"].get<std::string>();
    else if (j.contains("add_prefix_space") && !flag(j, "add_prefix_space", true)) scheme = "never";
    if (scheme == "always") p.prepend_scheme = PreTokenizer::Prepend::always;
    else if (scheme == "first") p.prepend_scheme = PreTokenizer::Prepend::first;
    else if (scheme == "never") p.prepend_scheme = PreTokenizer::Prepend::never;
    else refuse("pre_tokenizer Metaspace prepend_scheme '" + scheme + "' is not supported");
    p.metaspace_split = flag(j, "split", true);
  } else if (type == "Whitespace") {
    p.kind = K::whitespace;
    p.regex = compile("\\w+|[^\\w\\s]+", "pre_tokenizer Whitespace");
  } else if (type == "WhitespaceSplit") {
    p.kind = K::whitespace_split;
  } else if (type == "Punctuation") {
    p.kind = K::punctuation;
    p.behavior = j.contains("behavior") ? read_behavior(j, "pre_tokenizer Punctuation") : SplitBehavior::isolated;
  } else if (type == "Sequence") {
    p.kind = K::sequence;
    for (const json& s : j.at("pretokenizers")) p.steps.push_back(read_pre_tokenizer(s, byte_level));
  } else {
    refuse("pre_tokenizer type '" + type + "' is not supported");
  }
  return p;
}

Decoder read_decoder(const json& j) {
  const std::string type = type_of(j, "decoder");
  Decoder d;
  using K = Decoder::Kind;
  if (type == "ByteLevel") d.kind = K::byte_level;
  else if (type == "ByteFallback") d.kind = K::byte_fallback;
  else if (type == "Fuse") d.kind = K::fuse;
  else if (type == "Strip") {
    d.kind = K::strip;
    d.content = j.at("content").get<std::string>();
    d.strip_start = j.at("start").get<int>();
    d.strip_stop = j.at("stop").get<int>();
  } else if (type == "Replace") {
    d.kind = K::replace;
    std::optional<Regex> regex;
    read_pattern(j.at("pattern"), "decoder Replace", d.pattern, regex);
    if (regex) refuse("decoder Replace with a Regex pattern is not supported");
    d.content = j.at("content").get<std::string>();
  } else if (type == "Metaspace") {
    d.kind = K::metaspace;
    if (j.contains("replacement")) d.replacement = j["replacement"].get<std::string>();
    std::string scheme = j.contains("prepend_scheme") ? j["prepend_scheme"].get<std::string>() : "always";
    d.metaspace_prepends = scheme != "never" && flag(j, "add_prefix_space", true);
  } else if (type == "Sequence") {
    d.kind = K::sequence;
    for (const json& s : j.at("decoders")) d.steps.push_back(read_decoder(s));
  } else {
    refuse("decoder type '" + type + "' is not supported");
  }
  return d;
}

PostProcessor read_post_processor(const json& j) {
  const std::string type = type_of(j, "post_processor");
  PostProcessor p;
  if (type == "ByteLevel") return p;  // offsets only; no tokens
  if (type == "Sequence") {
    for (const json& s : j.at("processors")) {
      PostProcessor q = read_post_processor(s);
      p.before.insert(p.before.end(), q.before.begin(), q.before.end());
      p.after.insert(p.after.end(), q.after.begin(), q.after.end());
    }
    return p;
  }
  if (type != "TemplateProcessing") refuse("post_processor type '" + type + "' is not supported");
  const json& specials = j.at("special_tokens");
  bool seen_text = false;
  for (const json& item : j.at("single")) {
    if (item.contains("Sequence")) {
      seen_text = true;
    } else if (item.contains("SpecialToken")) {
      const std::string name = item["SpecialToken"].at("id").get<std::string>();
      if (!specials.contains(name)) corrupt("post_processor: special token '" + name + "' is not in special_tokens");
      for (const json& id : specials[name].at("ids")) (seen_text ? p.after : p.before).push_back(id.get<int>());
    } else {
      corrupt("post_processor: a template item is neither Sequence nor SpecialToken");
    }
  }
  return p;
}

int token_id(const json& v, const std::string& what) {
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > (1u << 24)) corrupt("the id of \"" + what + "\" is not a token id");
  return static_cast<int>(v.get<std::uint64_t>());
}

TokenizerJson read(const json& j) {
  TokenizerJson t;
  if (!j.is_object()) corrupt("not a JSON object");
  for (const char* key : {"truncation", "padding"})
    if (j.contains(key) && !j[key].is_null()) refuse(std::string(key) + " is not supported");
  const json& model = j.at("model");
  const std::string type = model.contains("type") ? model["type"].get<std::string>() : "BPE";
  if (type != "BPE") refuse("model type '" + type + "' is not supported");
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"].get<double>() != 0.0)
    refuse("model BPE dropout is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && !model[key].is_null() && !model[key].get<std::string>().empty())
      refuse(std::string("model BPE ") + key + " is not supported");
  t.bpe.byte_fallback = flag(model, "byte_fallback", false);
  t.bpe.ignore_merges = flag(model, "ignore_merges", false);
  t.bpe.fuse_unk = flag(model, "fuse_unk", false);
  if (model.contains("unk_token") && !model["unk_token"].is_null()) t.bpe.unk_token = model["unk_token"].get<std::string>();
  const json& vocab = model.at("vocab");
  if (!vocab.is_object()) corrupt("model vocab is not an object");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) t.vocab[it.key()] = token_id(it.value(), it.key());
  for (const json& m : model.at("merges")) {
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const std::size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos)
        corrupt("merge \"" + s + "\" is not two symbols");
      t.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2) {
      t.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      corrupt("a merge is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  if (j.contains("normalizer") && !j["normalizer"].is_null()) t.normalizer = read_normalizer(j["normalizer"]);
  if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null())
    t.pre_tokenizer = read_pre_tokenizer(j["pre_tokenizer"], t.bpe.byte_level);
  if (j.contains("post_processor") && !j["post_processor"].is_null()) t.post_processor = read_post_processor(j["post_processor"]);
  if (j.contains("decoder") && !j["decoder"].is_null()) t.decoder = read_decoder(j["decoder"]);
  if (t.decoder.kind == Decoder::Kind::byte_level) t.bpe.byte_level = true;
  if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
    for (const json& a : j.at("added_tokens")) {
      AddedToken tok;
      tok.content = a.at("content").get<std::string>();
      tok.id = token_id(a.at("id"), tok.content);
      tok.special = flag(a, "special", false);
      tok.lstrip = flag(a, "lstrip", false);
      tok.rstrip = flag(a, "rstrip", false);
      tok.normalized = flag(a, "normalized", !tok.special);
      tok.single_word = flag(a, "single_word", false);
      if (tok.content.empty()) corrupt("an added token is empty");
      t.added_tokens.push_back(std::move(tok));
    }
  }
  return t;
}

}  // namespace

Result<TokenizerJson> tokenizer_json_read(std::string_view text, const std::string& what) {
  if (auto s = json_depth_check(text, what); !s) return tl::unexpected(s.error());
  try {
    return read(json::parse(text));
  } catch (const Refusal& r) {
    return make_error(r.code, what + ": " + r.message);
  } catch (const json::exception& e) {
    return make_error(ErrorCode::corrupt, what + ": " + json_error_text(e.what()));
  }
}

}  // namespace headlab::model
