// tokenizer/post_processor.h — a tokenizer.json's post-processor for one text: the special
// tokens its template puts around the text (TemplateProcessing's "single": Llama 2's and
// Gemma 3's "<s>"/"<bos>" first). ByteLevel's post-processor adds none. Applied only when the
// caller asks (EncodeOptions::template_tokens).
#pragma once

#include <vector>

namespace headlab::model {

struct PostProcessor {
  std::vector<int> before;  // ids put before the text's tokens
  std::vector<int> after;   // ids put after them
};

}  // namespace headlab::model
