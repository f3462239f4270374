// model/head_range.h — the one check that a layer or a head names one the model has, worded
// the same for the CLI, the server and the forward's interventions:
//   "layer 5 does not exist: the model has layers 0 to 3"
//   "head 9 does not exist: each layer has heads 0 to 3"
//
//   if (Status s = check_layer_head(config, layer, head); !s) return s;
#pragma once

#include "model/config.h"
#include "util/result.h"

namespace headlab::model {

// invalid_argument unless 0 <= layer < n_layer.
Status check_layer(const ModelConfig& c, int layer);
// invalid_argument unless 0 <= head < n_head, or head == -1 ("every head") when every_head_ok.
Status check_head(const ModelConfig& c, int head, bool every_head_ok = false);
// check_layer, then check_head.
Status check_layer_head(const ModelConfig& c, int layer, int head, bool every_head_ok = false);

}  // namespace headlab::model
