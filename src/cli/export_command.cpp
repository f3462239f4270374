// cli/export_command.cpp — `headlab export --gguf OUT --model DIR`: a model folder (one headlab
// trained, or any Hugging Face folder of a family llama.cpp runs) as one GGUF file for
// llama.cpp and ollama, its matrices in F32 or F16 (formats/gguf/gguf_export.h).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "formats/hf/checkpoint.h"
#include "formats/gguf/gguf_architecture.h"
#include "formats/gguf/gguf_export.h"
#include "formats/gguf/gguf_file.h"
#include "formats/model_files.h"

namespace headlab::cli {
namespace {

struct ExportOptions {
  std::string model;
  std::string gguf;
  std::string dtype = "f32";
};

int run_export(const ExportOptions& o) {
  // before the load: a GGUF's weights would be read in full only to find no tokenizer folder
  if (model::gguf::is_gguf_path(o.model))
    return print_error(o.model + " is a GGUF file already: export writes one from a Hugging Face or headlab model folder "
                                 "(config.json, model.safetensors, the tokenizer). headlab runs the GGUF as it is (--model " +
                           o.model + "); to change its matrices' type, use llama.cpp's llama-quantize", 2);
  auto params = model::model_load(o.model);
  if (!params) return print_error(params.error().message);
  auto tables = model::gguf::tokenizer_tables_load(o.model);
  if (!tables) return print_error(tables.error().message);
  for (const std::string& note : tables->notes) std::cerr << "note: " << note << "\n";
  const auto type = o.dtype == "f16" ? model::gguf::TensorType::f16
                    : o.dtype == "bf16" ? model::gguf::TensorType::bf16 : model::gguf::TensorType::f32;
  const std::string name = std::filesystem::path(o.model).filename().string();
  if (Status s = model::gguf::export_model(o.gguf, *params, *tables, type, name.empty() ? "headlab" : name); !s)
    return print_error(s.error().message);
  std::cout << "wrote " << o.gguf << " (" << model::gguf::architecture_of(params->config) << ", " << params->config.n_layer
            << " layers, " << o.dtype << ")\n";
  return 0;
}

}  // namespace

void add_export_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Write a model as a GGUF file that llama.cpp and ollama run.\n"
      "The file has llama.cpp's architecture of the model's family: gpt2, gptneox, llama (Mistral\n"
      "too), qwen2, qwen3, gemma2 or gemma3. A setting that architecture cannot say is refused by\n"
      "name rather than written wrong (a Qwen 3 or Mistral sliding window that hides keys, a\n"
      "Gemma 2 query_pre_attn_scalar other than the head size, an untied Gemma 2, ...).\n"
      "Example:\n"
      "  headlab export --gguf tiny.gguf --model runs/tiny            # F32\n"
      "  headlab export --gguf tiny-f16.gguf --model runs/tiny --dtype f16");
  cmd->add_option("--model", opts->model, "Model directory (config.json, model.safetensors, tokenizer)")->required();
  cmd->add_option("--gguf", opts->gguf, "The GGUF file to write")->required();
  cmd->add_option("--dtype", opts->dtype, "f32, f16 or bf16: the matrices' type (norms and biases stay f32)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
  cmd->callback([opts, &exit_code] { exit_code = run_export(*opts); });
}

}  // namespace headlab::cli
