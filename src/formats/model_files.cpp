// formats/model_files.cpp — a path to a model, whichever its format (model_files.h).
#include "formats/model_files.h"

#include <filesystem>

#include "formats/gguf/gguf_architecture.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_tokenizer.h"
#include "formats/hf/checkpoint.h"

namespace headlab::model {

namespace {

// A path that names nothing is said to be missing, before a loader blames the kind of thing
// it expected there ("not a directory").
Status model_path_check(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::status(path, ec).type() == std::filesystem::file_type::not_found)
    return make_error(ErrorCode::not_found, path + ": no such file or directory (a model is a Hugging Face folder "
                                                   "or a .gguf file)");
  return {};
}

}  // namespace

bool is_gguf_model(const std::string& path) {
  std::error_code ec;
  return gguf::is_gguf_path(path) && !std::filesystem::is_directory(path, ec);
}

Result<Parameters> model_load(const std::string& path, const LoadOptions& options) {
  if (Status s = model_path_check(path); !s) return tl::unexpected(s.error());
  if (is_gguf_model(path)) return gguf::parameters_load(path, options);  // llama.cpp's file
  return checkpoint_load(path, options);
}

Result<CheckpointDescription> model_describe(const std::string& path, DtypeChoice dtype) {
  if (Status s = model_path_check(path); !s) return tl::unexpected(s.error());
  if (is_gguf_model(path)) return gguf::describe_file(path, dtype);
  return checkpoint_describe(path, dtype);
}

Result<BpeTokenizer> model_tokenizer_load(const std::string& path) {
  if (is_gguf_model(path)) return gguf::tokenizer_load(path);  // its metadata's tokenizer
  return BpeTokenizer::load(path);
}

}  // namespace headlab::model
