// cli/output_guard.cpp — see output_guard.h.
#include "cli/output_guard.h"

#include <CLI/CLI.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace headlab::cli {

namespace {

namespace fs = std::filesystem;

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};

// The file `path` names, when it is an existing regular file (a symlink followed).
bool file_id(const std::string& path, FileId& id) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  id = {st.st_dev, st.st_ino};
  return true;
}

bool is_output(const std::string& subcommand, const std::string& option) {
  if (subcommand == "train" || subcommand == "train-tokenizer") return false;  // --out is a folder
  return option == "--out" || option == "--gguf" || option == "--save-svg";
}

struct Input {
  std::string option, path;  // the option that named it, and the file
  FileId id;
};

// Options whose values are never paths (a text could name a folder by chance: --text .).
bool never_a_path(const std::string& option) {
  return option == "--text" || option == "--ids" || option == "--clean" || option == "--corrupted" || option == "--answer" ||
         option == "--wrong" || option == "--format";
}

// Every file the values of `opt` name: the value itself, the part after its last ':' (a
// --steer L:COEF:FILE), and for a model (--model, --tokenizer) the files directly inside its folder.
void inputs_of(const std::string& option, const std::string& value, std::vector<Input>& out) {
  if (never_a_path(option)) return;
  std::vector<std::string> paths = {value};
  if (auto colon = value.rfind(':'); colon != std::string::npos) paths.push_back(value.substr(colon + 1));
  for (const std::string& p : paths) {
    FileId id;
    if (file_id(p, id)) {
      out.push_back({option, p, id});
      continue;
    }
    std::error_code ec;
    if (p.empty() || (option != "--model" && option != "--tokenizer") || !fs::is_directory(p, ec)) continue;
    for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec))
      if (file_id(it->path().string(), id)) out.push_back({option, it->path().string(), id});
  }
}

void guard_one(const CLI::App& sub) {
  const std::string name = sub.get_name();
  struct Output {
    std::string option, path;
  };
  std::vector<Output> outputs;
  std::vector<Input> inputs;
  for (const CLI::Option* opt : sub.get_options()) {
    const std::string option = opt->get_name();
    // what was typed, else the default the command will use (run's model folder)
    std::vector<std::string> values = opt->results();
    if (values.empty() && !opt->get_default_str().empty()) values.push_back(opt->get_default_str());
    for (const std::string& value : values) {
      if (is_output(name, option)) {
        if (value == "-")  // not standard output: it would be a file named "-"
          throw CLI::ValidationError(option + " -: headlab writes to the screen when " + option +
                                     " is left out (or redirect it); '-' would be a file named -");
        if (!value.empty()) outputs.push_back({option, value});
      } else {
        inputs_of(option, value, inputs);
      }
    }
  }
  for (std::size_t i = 0; i < outputs.size(); i++) {
    const Output& o = outputs[i];
    FileId id;
    if (file_id(o.path, id))
      for (const Input& in : inputs)
        if (in.id == id)
          throw CLI::ValidationError(o.option + " " + o.path + " is " +
                                     (in.path == o.path ? "the file " : in.path + ", a file ") + "that " + in.option +
                                     " reads: writing it would destroy that input. Write to another path");
    for (std::size_t j = 0; j < i; j++) {
      std::error_code e1, e2;
      const fs::path a = fs::weakly_canonical(o.path, e1), b = fs::weakly_canonical(outputs[j].path, e2);
      if (!e1 && !e2 && a == b)
        throw CLI::ValidationError(outputs[j].option + " and " + o.option + " both write " + o.path +
                                   ": the second would replace the first. Give each its own path");
    }
  }
  for (const CLI::App* s : sub.get_subcommands()) guard_one(*s);
}

}  // namespace

void guard_outputs(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) guard_one(*sub);
}

}  // namespace headlab::cli
