// testing/random_model.h — a small random-weight, attention-only model folder in the
// Hugging Face layout, with the built-in model's real tokenizer, made once per process.
#pragma once

#include <filesystem>
#include <string>

#include "formats/model_files.h"
#include "tokenizer/bpe_tokenizer.h"
#include "formats/hf/checkpoint.h"
#include "testing/test_server.h"

namespace headlab::testing {

struct RandomModelShape {
  int n_layer = 2, n_head = 4, n_embd = 32, n_ctx = 64;
  unsigned seed = 7;
};

// Writes config.json, model.safetensors, vocab.json and merges.txt into a fresh folder
// named `name` under the test's temporary directory, and returns its path.
inline std::string make_random_model_dir(const std::string& name, const RandomModelShape& shape) {
  namespace fs = std::filesystem;
  std::string dir = fs::path(temp_path("x")).parent_path() / name;
  fs::create_directories(dir);
  const fs::path tok = fs::path(HEADLAB_SOURCE_DIR) / "models/headlab-tiny";
  fs::copy_file(tok / "vocab.json", fs::path(dir) / "vocab.json", fs::copy_options::overwrite_existing);
  fs::copy_file(tok / "merges.txt", fs::path(dir) / "merges.txt", fs::copy_options::overwrite_existing);
  auto tokenizer = model::model_tokenizer_load(dir);
  if (!tokenizer) throw std::runtime_error(tokenizer.error().message);
  model::ModelConfig c;
  c.n_layer = shape.n_layer;
  c.n_head = shape.n_head;
  c.n_embd = shape.n_embd;
  c.n_ctx = shape.n_ctx;
  c.vocab_size = tokenizer->vocab_size();
  c.mlp = false;
  c.bos_token_id = c.eos_token_id = tokenizer->endoftext_id() >= 0 ? tokenizer->endoftext_id() : 0;
  model::Parameters p = model::parameters_allocate(c);
  model::parameters_init_random(p, shape.seed);
  if (auto s = model::checkpoint_save(dir, p); !s) throw std::runtime_error(s.error().message);
  return dir;
}

}  // namespace headlab::testing
