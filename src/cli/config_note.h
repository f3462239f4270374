// cli/config_note.h — says by name, on stderr, which keys of a model folder's config.json
// headlab neither reads nor has reviewed as harmless (formats/hf/config_keys.cpp): a key that
// is unknown is not silently taken as one that does not change the maths.
//   config_note("models/llama");            // run, scan and serve call it after loading
#pragma once

#include <string>

namespace headlab::cli {

// One "headlab: note:" line per unknown key; nothing for a .gguf file, a folder without
// config.json or a config that does not parse (loading reports those).
void config_note(const std::string& model_path);

}  // namespace headlab::cli
