// cli/dtype_option.h — `--dtype auto|f32|bf16|f16`, the option every command that loads a
// model (run, scan, serve, info) takes, and `--compute f32|bf16` (run, scan, serve): their help
// and their parsing live here.
//   std::string dtype = "auto", compute = "f32";
//   add_dtype_option(cmd, dtype);                  // bad values: exit 2 naming the allowed ones
//   add_compute_option(cmd, compute);
//   model::LoadOptions load{.dtype = dtype_choice(dtype), .compute = compute_choice(compute)};
//   add_cache_option(cmd, no_cache);               // --no-cache
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
// with_auto (serve): "auto" is also accepted, and is the default: bf16 where the CPU's AVX512_BF16
// dot products outrun its float32 ones and the model keeps bf16 matrices, else f32
// (compute_auto_choice).
void add_compute_option(CLI::App* cmd, std::string& value, bool with_auto = false);
model::ComputeChoice compute_choice(const std::string& value);
// "auto": bf16 when this CPU runs the AVX512_BF16 kernel and its bf16 dot products outrun its
// float32 ones (bf16_speedup > 1: model::cpu_bf16_speedup(), measured by the caller), else f32;
// the other values as compute_choice.
model::ComputeChoice compute_auto_choice(const std::string& value, double bf16_speedup);
// --no-cache (run, scan, serve): the weights are read from the model's files every time instead
// of being kept packed in a cache file beside the model and mapped (formats/weights_cache.h).
void add_cache_option(CLI::App* cmd, bool& no_cache);
// Prints "headlab: note: ..." to stderr when the loader rounded the model's matrices (naming the
// conversion: F64 -> float32 under f32 and auto, wider -> bfloat16 or IEEE half), and when
// --compute bf16 rounds the products' inputs (or finds no bf16 matrix to do it for), and each of
// the loader's notes (params.notes: the weights cache written, rebuilt or not usable).
void dtype_note(const model::Parameters& params, const std::string& value, const std::string& compute = "f32");

}  // namespace headlab::cli
