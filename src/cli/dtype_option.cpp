// cli/dtype_option.cpp — the --dtype option (see dtype_option.h).
#include "cli/dtype_option.h"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "model/ops/matmul_packed.h"  // matmul_packed_kernel_supported
#include "model/ops/matmul_quant_q8.h"

namespace headlab::cli {

void add_dtype_option(CLI::App* cmd, std::string& value) {
  cmd->add_option("--dtype", value,
                  "The type the model's matrices are kept in: auto (the checkpoint's own: BF16 and F16 stay 16-bit, "
                  "half the memory of f32), f32 (widened), bf16 or f16 (rounded from a wider checkpoint). The "
                  "arithmetic is float32 in every case")
      ->check(CLI::IsMember({"auto", "f32", "bf16", "f16"}))
      ->capture_default_str();
}

model::DtypeChoice dtype_choice(const std::string& value) {
  auto c = model::dtype_choice_parse(value);
  return c ? *c : model::DtypeChoice::keep;  // add_dtype_option's check let only the four through
}

void add_compute_option(CLI::App* cmd, std::string& value, bool with_auto) {
  const std::string auto_help =
      with_auto ? " auto (the default of serve): bf16 where the CPU has AVX512_BF16, its bf16 dot products ran faster "
                  "than its float32 ones in a quick measurement at start, and the model keeps bfloat16 matrices (a "
                  "class's requests answered sooner; said at start), else f32."
                : "";
  auto* option = cmd->add_option("--compute", value,
                  "What the products with bfloat16 matrices multiply: f32 (the inputs as they are, the reference's "
                  "numbers) or bf16 (the inputs rounded to bfloat16 too, as PyTorch's and llama.cpp's bfloat16 runs "
                  "do; the products and sums stay float32). On a CPU whose AVX512_BF16 dot products are fast (AMD's "
                  "Zen 4: about twice float32's) bf16 is about twice as fast on long inputs, and on one with AMX "
                  "(recent Intel Xeons) its tile products are many times faster; on an AVX512_BF16 CPU without "
                  "AMX and with slow dot products (measured: half float32's) it is slower. The logits move a "
                  "little (about 0.02 on "
                  "Qwen2.5-0.5B's shape, where they spread "
                  "over about 0.6). Needs bf16 matrices: a BF16 checkpoint, or --dtype bf16. q8: the products with "
                  "a GGUF's quantized matrices (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K blocks, kept under --dtype auto) round "
                  "their inputs to 8 bits per block and multiply integers, as llama.cpp does (faster on short "
                  "inputs; the numbers move by the inputs' rounding, about 1% of a product)." + auto_help);
  if (with_auto)
    option->check(CLI::IsMember({"auto", "f32", "bf16", "q8"}));
  else
    option->check(CLI::IsMember({"f32", "bf16", "q8"}));
  option->capture_default_str();
}

void add_cache_option(CLI::App* cmd, bool& no_cache) {
  cmd->add_flag("--no-cache", no_cache,
                "Read the weights from the model's files on every load. Without it, the first load keeps them "
                "packed in a file beside the model (headlab-weights.<dtype>.cache, the size of the weights in "
                "memory) and later loads map that file: seconds instead of tens of seconds for a 1 B model. The "
                "cache is rebuilt when a model file changes (size, time or header)");
}

model::ComputeChoice compute_auto_choice(const std::string& value, double bf16_speedup) {
  if (value != "auto") return compute_choice(value);
  return model::matmul_packed_kernel_supported(model::PackedKernel::avx512bf16) && bf16_speedup > 1.0
             ? model::ComputeChoice::bf16
             : model::ComputeChoice::f32;
}

model::ComputeChoice compute_choice(const std::string& value) {
  auto c = model::compute_choice_parse(value);
  return c ? *c : model::ComputeChoice::f32;  // add_compute_option's check let only these through
}

void dtype_note(const model::Parameters& params, const std::string& value, const std::string& compute) {
  for (const std::string& note : params.notes) std::fprintf(stderr, "headlab: note: %s\n", note.c_str());
  // Under f32 and auto (model/weight_type.h) the only matrices a loader rounds are F64 ones;
  // under bf16 and f16 every wider one.
  if (params.rounded && (value == "bf16" || value == "f16"))
    std::fprintf(stderr, "headlab: note: --dtype %s rounds the checkpoint's wider matrices to %s, to nearest, ties to even\n",
                 value.c_str(), value == "bf16" ? "bfloat16 (8 significant bits)" : "IEEE half (11 significant bits)");
  else if (params.rounded)
    std::fprintf(stderr, "headlab: note: --dtype %s rounds the checkpoint's F64 matrices to float32 (24 significant "
                 "bits), to nearest, ties to even\n", value.c_str());
  if (compute == "q8" && model::parameters_quantizes_inputs(params))
    std::fprintf(stderr, "headlab: note: --compute q8 rounds the inputs of the products with quantized blocks to 8 bits "
                         "(%s); --compute f32 multiplies them as they are\n",
                 std::string(model::matmul_q8_kernel_name(model::matmul_q8_kernel())).c_str());
  if (compute != "bf16") return;
  if (model::parameters_rounds_inputs(params))
    std::fprintf(stderr, "headlab: note: --compute bf16 rounds the inputs of the products with bfloat16 matrices to "
                         "bfloat16 (float32 sums); --compute f32 gives the reference's numbers\n");
  else
    std::fprintf(stderr, "headlab: note: --compute bf16 changes nothing here: the model keeps no bfloat16 matrix "
                         "(load it with --dtype bf16 to round them)\n");
}

}  // namespace headlab::cli
