// fuzz/formats/safetensors_fuzzer.cpp — libFuzzer target: any bytes as a model.safetensors.
// The reader must return a value (a file or an error), never crash, hang or over-allocate;
// a file it accepts is then loaded into a tiny model's weights, which must not crash either.
#include <cstddef>
#include <cstdint>

#include "formats/hf/checkpoint.h"
#include "formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace headlab::model;
  auto file = safetensors_parse(data, size, "fuzz.safetensors");
  if (!file) return 0;
  for (const SafetensorsTensor& t : file->tensors) {
    if (t.numel() > (1 << 20)) continue;  // the reader checked the bytes exist; keep the fuzzer fast
    std::vector<float> out(static_cast<std::size_t>(t.numel()) + 1);
    (void)safetensors_to_f32(*file, t, out.data());
  }
  ModelConfig c;
  c.n_layer = 1;
  c.n_head = 1;
  c.n_embd = 2;
  c.n_ctx = 2;
  c.vocab_size = 3;
  c.bos_token_id = c.eos_token_id = 2;
  (void)checkpoint_from_safetensors(c, *file);
  return 0;
}
