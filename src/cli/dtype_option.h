// cli/dtype_option.h — `--dtype auto|f32|bf16|f16`, the one option every command that loads a
// model (run, scan, serve, info) takes: its help and its parsing live here.
//   std::string dtype = "auto";
//   add_dtype_option(cmd, dtype);                  // bad values: exit 2 naming the allowed ones
//   model::LoadOptions load{.dtype = dtype_choice(dtype)};
//   dtype_note(params);                            // says on stderr when the weights were rounded
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
// Prints "headlab: note: ..." to stderr when the loader rounded the model's matrices.
void dtype_note(const model::Parameters& params, const std::string& value);

}  // namespace headlab::cli
