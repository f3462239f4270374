// core/constructed_heads.cpp — the five scoring rules and what we say about each head.
#include "core/constructed_heads.h"

#include "core/sentence.h"

namespace headlab::core {

const std::vector<HeadInfo>& constructed_heads() {
  static const std::vector<HeadInfo> heads = {
      {HeadKind::previous, "previous", "Previous token",
       "score 5 on the token just before the query (the first token scores itself); 0 elsewhere",
       "Each token looks at the token right before it, which tells the next layer what came "
       "one step earlier.",
       {{"Elhage et al. 2021", "A Mathematical Framework for Transformer Circuits",
         "https://transformer-circuits.pub/2021/framework/index.html"}}},
      {HeadKind::first, "first", "First token",
       "score 5 on position 0; 0 elsewhere",
       "Every token parks its attention on the first position, a resting place when nothing "
       "else is worth reading.",
       {{"Xiao et al. 2023", "Efficient Streaming Language Models with Attention Sinks",
         "https://arxiv.org/abs/2309.17453"}}},
      {HeadKind::same_word, "same-word", "Same word",
       "score 5 on every other occurrence of the query's own word; 0 elsewhere",
       "Each token looks for other copies of itself, like the duplicate-token heads found in "
       "trained models.",
       {{"Wang et al. 2022", "Interpretability in the Wild: a Circuit for Indirect Object "
                             "Identification in GPT-2 small",
         "https://arxiv.org/abs/2211.00593"}}},
      {HeadKind::induction, "induction", "Induction",
       "score 5 on any key whose previous token equals the query token; 2 on position 0; 0 "
       "elsewhere",
       "Each token finds an earlier copy of itself and looks at the token that followed that "
       "copy, which is the guess that the pattern will repeat.",
       {{"Elhage et al. 2021", "A Mathematical Framework for Transformer Circuits",
         "https://transformer-circuits.pub/2021/framework/index.html"},
        {"Olsson et al. 2022", "In-context Learning and Induction Heads",
         "https://transformer-circuits.pub/2022/in-context-learning-and-induction-heads/index.html"}}},
      {HeadKind::punctuation, "punctuation", "Punctuation",
       "score 5 on punctuation marks; 2 on position 0; 0 elsewhere",
       "Every token looks at the punctuation marks, the way some BERT heads attend to "
       "periods and commas.",
       {{"Clark et al. 2019", "What Does BERT Look At? An Analysis of BERT's Attention",
         "https://arxiv.org/abs/1906.04341"}}},
  };
  return heads;
}

const HeadInfo& head_info(HeadKind kind) {
  for (const HeadInfo& h : constructed_heads())
    if (h.kind == kind) return h;
  HEADLAB_CHECK(false);
  return constructed_heads().front();
}

std::string head_names_list() {
  std::string out;
  for (const HeadInfo& h : constructed_heads()) {
    if (!out.empty()) out += ", ";
    out += h.name;
  }
  return out;
}

Result<HeadKind> head_kind_from_name(std::string_view name) {
  for (const HeadInfo& h : constructed_heads())
    if (h.name == name) return h.kind;
  return make_error(ErrorCode::invalid_argument,
                    "Unknown head '" + std::string(name) + "'. Choose one of: " + head_names_list() + ".");
}

Matrix constructed_head_scores(HeadKind kind, const std::vector<std::string>& tokens) {
  const int T = static_cast<int>(tokens.size());
  Matrix s(T, T);
  for (int i = 0; i < T; ++i) {
    for (int j = 0; j < T; ++j) {
      double score = 0.0;
      switch (kind) {
        case HeadKind::previous:
          score = (j == i - 1 || (i == 0 && j == 0)) ? 5.0 : 0.0;
          break;
        case HeadKind::first:
          score = j == 0 ? 5.0 : 0.0;
          break;
        case HeadKind::same_word:
          score = (j != i && tokens[j] == tokens[i]) ? 5.0 : 0.0;
          break;
        case HeadKind::induction:
          if (j >= 1 && j - 1 != i && tokens[j - 1] == tokens[i]) score = 5.0;
          else if (j == 0) score = 2.0;
          break;
        case HeadKind::punctuation:
          if (is_punctuation(tokens[j])) score = 5.0;
          else if (j == 0) score = 2.0;
          break;
      }
      s.at(i, j) = score;
    }
  }
  return s;
}

std::string constructed_head_clause(HeadKind kind, const std::vector<std::string>& tokens, int i, int j) {
  const int T = static_cast<int>(tokens.size());
  HEADLAB_CHECK(i >= 0 && i < T && j >= 0 && j < T);
  auto q = [](const std::string& w) { return "\u201c" + w + "\u201d"; };
  switch (kind) {
    case HeadKind::previous:
      if (i == 0 && j == 0) return "the first token has no token before it, so it scores itself";
      if (j == i - 1) return "the token just before " + q(tokens[i]);
      return "not the token just before " + q(tokens[i]);
    case HeadKind::first:
      return j == 0 ? "position 0" : "not position 0";
    case HeadKind::same_word:
      if (j == i) return "the query itself does not count";
      if (tokens[j] == tokens[i]) return "another " + q(tokens[i]);
      return "a different word from " + q(tokens[i]);
    case HeadKind::induction:
      if (j >= 1 && j - 1 != i && tokens[j - 1] == tokens[i])
        return "comes right after an earlier " + q(tokens[i]);
      if (j == 0) return "position 0, the fallback";
      if (j >= 1 && j - 1 == i) return "comes after the query itself";
      return j >= 1 ? "comes after " + q(tokens[j - 1]) + ", not " + q(tokens[i]) : "no token before it";
    case HeadKind::punctuation:
      if (is_punctuation(tokens[j])) return "a punctuation mark";
      if (j == 0) return "position 0, the fallback";
      return "not a punctuation mark";
  }
  return "";
}

}  // namespace headlab::core
