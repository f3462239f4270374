// cli/dtype_option.h — `--dtype auto|f32|bf16|f16`, the option every command that loads a
// model (run, scan, serve, info) takes, and `--compute f32|bf16` (run, scan, serve): their help
// and their parsing live here.
//   std::string dtype = "auto", compute = "f32";
//   add_dtype_option(cmd, dtype);                  // bad values: exit 2 naming the allowed ones
//   add_compute_option(cmd, compute);
//   model::LoadOptions load{.dtype = dtype_choice(dtype), .compute = compute_choice(compute)};
//   dtype_note(params, dtype, compute);            // says on stderr what was rounded
#pragma once

#include <string>

#include "model/parameters.h"

namespace CLI {
class App;
}

namespace headlab::cli {

void add_dtype_option(CLI::App* cmd, std::string& value);
// The choice of a value add_dtype_option accepted.
model::DtypeChoice dtype_choice(const std::string& value);
void add_compute_option(CLI::App* cmd, std::string& value);
model::ComputeChoice compute_choice(const std::string& value);
// Prints "headlab: note: ..." to stderr when the loader rounded the model's matrices (naming the
// conversion: F64 -> float32 under f32 and auto, wider -> bfloat16 or IEEE half), and when
// --compute bf16 rounds the products' inputs (or finds no bf16 matrix to do it for).
void dtype_note(const model::Parameters& params, const std::string& value, const std::string& compute = "f32");

}  // namespace headlab::cli
