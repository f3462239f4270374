// research/prompts.cpp — a batch of prompts from a file (see prompts.h).
#include "research/prompts.h"

#include <nlohmann/json.hpp>

#include "util/json_depth.h"

namespace headlab::research {

Result<std::vector<PromptPair>> parse_prompts(std::string_view text, std::size_t max_prompts) {
  auto bad = [](int line, const std::string& why) {
    return make_error(ErrorCode::invalid_argument, "prompts, line " + std::to_string(line) + ": " + why);
  };
  std::vector<PromptPair> out;
  int line_no = 0;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    line_no++;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) {
      if (end == text.size()) break;
      continue;
    }
    PromptPair p;
    p.line = line_no;
    if (line[first] == '{') {
      if (json_too_deep_at(line, 8) != std::string_view::npos) return bad(line_no, "the JSON is nested too deeply");
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object())
        return bad(line_no, "not a JSON object (a line that starts with '{' is read as JSON)");
      for (auto it = j.begin(); it != j.end(); ++it) {
        std::string* field = it.key() == "clean"       ? &p.clean
                             : it.key() == "corrupted" ? &p.corrupted
                             : it.key() == "answer"    ? &p.answer
                             : it.key() == "wrong"     ? &p.wrong
                                                       : nullptr;
        if (!field) return bad(line_no, "unknown key \"" + it.key() + "\" (the keys are clean, corrupted, answer, wrong)");
        if (!it->is_string()) return bad(line_no, "\"" + it.key() + "\" must be a string");
        *field = it->get<std::string>();
      }
      if (p.clean.empty()) return bad(line_no, "no \"clean\" prompt");
    } else {
      p.clean = std::string(line);
    }
    if (out.size() == max_prompts)
      return bad(line_no, "more than " + std::to_string(max_prompts) + " prompts; split the file");
    out.push_back(std::move(p));
    if (end == text.size()) break;
  }
  if (out.empty()) return make_error(ErrorCode::invalid_argument, "prompts: the file holds no prompt");
  return out;
}

}  // namespace headlab::research
