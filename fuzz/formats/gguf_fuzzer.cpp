// fuzz/formats/gguf_fuzzer.cpp — libFuzzer target: any bytes as a GGUF file. The reader must return
// a value (a file or an error), never crash, hang or over-allocate; a file it accepts has each
// small tensor dequantized, its weights loaded and its tokenizer built, none of which may crash.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/gguf/gguf_architecture.h"
#include "formats/gguf/gguf_dequantize.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace headlab::model::gguf;
  auto file = file_parse(data, size, "fuzz.gguf");
  if (!file) return 0;
  std::vector<float> out;
  for (const TensorInfo& t : file->tensors) {
    if (t.elements() > (1 << 20)) continue;  // the reader checked the bytes exist; keep the fuzzer fast
    out.resize(std::size_t(t.elements()));
    dequantize(t.type, file->tensor_data(t), t.elements(), out.data());
  }
  (void)config_from_file(*file);
  if (const Value* n = file->find("tokenizer.ggml.tokens"); n && n->strings.size() <= 4096) (void)tokenizer_from_file(*file);
  // parameters_from_file allocates what the metadata and the (checked) tensor shapes say: keep it small
  auto config = config_from_file(*file);
  if (config && headlab::model::parameters_count(*config) <= (1u << 20)) (void)parameters_from_file(*file);
  return 0;
}
