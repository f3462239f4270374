// tokenizer/regex.cpp — Oniguruma behind tokenizer/regex.h.
#include "tokenizer/regex.h"

#include <mutex>

#include <oniguruma.h>

namespace headlab::model {

Result<Regex> Regex::compile(const std::string& pattern) {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
  OnigRegex re = nullptr;
  OnigErrorInfo info;
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  int rc = onig_new(&re, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
  if (rc != ONIG_NORMAL) {
    OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(msg, rc, &info);
    return make_error(ErrorCode::invalid_argument,
                      "regex \"" + pattern + "\": " + reinterpret_cast<const char*>(msg));
  }
  Regex r;
  r.regex_ = std::shared_ptr<void>(re, [](void* x) { onig_free(static_cast<OnigRegex>(x)); });
  return r;
}

std::vector<std::pair<int, int>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<int, int>> out;
  auto* re = static_cast<OnigRegex>(regex_.get());
  const auto* s = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = s + text.size();
  OnigRegion* region = onig_region_new();
  std::size_t pos = 0;
  while (pos <= text.size()) {
    int at = onig_search(re, s, end, s + pos, end, region, ONIG_OPTION_NONE);
    if (at < 0) break;
    const int b = region->beg[0], e = region->end[0];
    out.emplace_back(b, e);
    if (e > b) {
      pos = static_cast<std::size_t>(e);
    } else {
      // an empty match: step over one UTF-8 character
      if (static_cast<std::size_t>(e) >= text.size()) break;
      pos = static_cast<std::size_t>(e) + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xc0) == 0x80) pos++;
    }
  }
  onig_region_free(region, 1);
  return out;
}

}  // namespace headlab::model
