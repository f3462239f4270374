// cli/dtype_option.cpp — the --dtype option (see dtype_option.h).
#include "cli/dtype_option.h"

#include <CLI/CLI.hpp>

#include <cstdio>

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

void dtype_note(const model::Parameters& params, const std::string& value) {
  if (params.rounded)
    std::fprintf(stderr, "headlab: note: --dtype %s rounds the checkpoint's wider matrices to %s, to nearest, ties to even\n",
                 value.c_str(), value == "bf16" ? "bfloat16 (8 significant bits)" : "IEEE half (11 significant bits)");
}

}  // namespace headlab::cli
