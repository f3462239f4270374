// formats/gguf/gguf_export.h — a headlab model as a GGUF file llama.cpp (and ollama) runs:
// the architecture's metadata, the tokenizer's, and every weight under llama.cpp's name.
// Matrices are written as F32, F16 or BF16; vectors (norms, biases) stay F32, as llama.cpp's
// converter writes them.
//
//   auto tables = gguf::tokenizer_tables_load("runs/tiny");
//   Status s = gguf::export_model("tiny.gguf", params, *tables, gguf::TensorType::f16);
#pragma once

#include <string>

#include "formats/gguf/gguf_tokenizer.h"
#include "formats/gguf/gguf_types.h"
#include "model/parameters.h"
#include "util/result.h"

namespace headlab::model::gguf {

// Errors: unsupported (a config llama.cpp cannot run, named; a dtype other than F32, F16,
// BF16), invalid_argument (a tokenizer of another size than the vocabulary), io_error.
Status export_model(const std::string& path, const Parameters& params, const TokenizerTables& tokenizer,
                    TensorType dtype, const std::string& name = "headlab");

}  // namespace headlab::model::gguf
