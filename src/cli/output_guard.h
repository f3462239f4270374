// cli/output_guard.h — no subcommand writes over one of its own inputs. Before any subcommand
// runs, every file it would write (--out, --gguf, --save-svg) is compared with every path the
// command line names: a file, each file directly inside a model's folder (--model, --tokenizer:
// config.json, weights, tokenizer), and the FILE of a COLON:SEPARATED:FILE value (--steer
// L:COEF:FILE); a text (--text, --clean, ...) is never read as a path. The
// same file (device and inode, so a symlink or a path spelled another way is caught) is a
// usage error, exit 2, and nothing is written: `headlab export --model m --gguf m/model.safetensors`
// used to replace the weights it had just read. Two outputs naming one file are refused too.
//
//   app.parse_complete_callback([&app] { guard_outputs(app); });   // throws CLI::ValidationError
#pragma once

namespace CLI {
class App;
}

namespace headlab::cli {

// Checks the subcommands `app` parsed (and theirs); throws CLI::ValidationError naming the
// option, the output and the input it would overwrite. train and train-tokenizer write into a
// folder (--out) and are left out.
void guard_outputs(const CLI::App& app);

}  // namespace headlab::cli
