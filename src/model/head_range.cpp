// model/head_range.cpp — layer and head range checks with one wording.
#include "model/head_range.h"

#include <string>

namespace headlab::model {

Status check_layer(const ModelConfig& c, int layer) {
  if (layer >= 0 && layer < c.n_layer) return {};
  return make_error(ErrorCode::invalid_argument, "layer " + std::to_string(layer) +
                                                     " does not exist: the model has layers 0 to " +
                                                     std::to_string(c.n_layer - 1));
}

Status check_head(const ModelConfig& c, int head, bool every_head_ok) {
  if ((head >= 0 && head < c.n_head) || (every_head_ok && head == -1)) return {};
  return make_error(ErrorCode::invalid_argument, "head " + std::to_string(head) +
                                                     " does not exist: each layer has heads 0 to " +
                                                     std::to_string(c.n_head - 1) +
                                                     (every_head_ok ? " (or -1 for every head)" : ""));
}

Status check_layer_head(const ModelConfig& c, int layer, int head, bool every_head_ok) {
  if (Status s = check_layer(c, layer); !s) return s;
  return check_head(c, head, every_head_ok);
}

}  // namespace headlab::model
