// tokenizer/aligned_text.h — a text being tokenized, with where each of its bytes came from.
// Normalizers and pre-tokenizers rewrite the text (NFC, "▁" for " ", a prefix space); each
// byte keeps the byte span [begin, end) of the input it stands for, so every token can show
// its span in the caller's text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace headlab::model {

struct AlignedText {
  std::string text;
  std::vector<int> begin;  // (text.size()) input span of each byte
  std::vector<int> end;    // (text.size())

  // text as it is in the input, starting at input offset `at`.
  static AlignedText identity(std::string_view text, int at) {
    AlignedText a;
    a.text = std::string(text);
    a.begin.resize(text.size());
    a.end.resize(text.size());
    for (std::size_t i = 0; i < text.size(); i++) {
      a.begin[i] = at + static_cast<int>(i);
      a.end[i] = at + static_cast<int>(i) + 1;
    }
    return a;
  }
  // the bytes [b, e) with their spans
  AlignedText slice(std::size_t b, std::size_t e) const {
    AlignedText a;
    a.text = text.substr(b, e - b);
    a.begin.assign(begin.begin() + b, begin.begin() + e);
    a.end.assign(end.begin() + b, end.begin() + e);
    return a;
  }
  // appends bytes that all stand for the input span [b, e)
  void append(std::string_view bytes, int b, int e) {
    text.append(bytes);
    begin.insert(begin.end(), bytes.size(), b);
    end.insert(end.end(), bytes.size(), e);
  }
  void append(const AlignedText& other) {
    text += other.text;
    begin.insert(begin.end(), other.begin.begin(), other.begin.end());
    end.insert(end.end(), other.end.begin(), other.end.end());
  }
  // the input offset where byte i starts, or where the text ends (for an empty insertion)
  int input_begin(std::size_t i) const { return i < begin.size() ? begin[i] : (end.empty() ? 0 : end.back()); }
};

}  // namespace headlab::model
