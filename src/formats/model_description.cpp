// formats/model_description.cpp — the memory a model of a config takes and where a tensor of
// its files goes (model_description.h).
#include "formats/model_description.h"

#include <algorithm>

#include "model/packed_weights.h"

namespace headlab::model {

std::uint64_t checkpoint_memory_bytes(const ModelConfig& c, const MatrixTypes& types) {
  // the float32 vectors, and each matrix packed in its type (packed_weights.h)
  const auto sizes = parameters_sizes(c);
  std::uint64_t bytes = 0;
  for (int i = 0; i < kNumParameterTensors; i++) {
    if (!parameters_is_matrix(i)) {
      bytes += 4 * std::uint64_t(sizes[std::size_t(i)]);
    } else if (sizes[std::size_t(i)] > 0) {
      const auto [rows, cols] = parameters_matrix_shape(c, i);
      const std::uint64_t layers = sizes[std::size_t(i)] / (std::uint64_t(rows) * std::uint64_t(cols));
      bytes += layers * ((packed_bytes(types[std::size_t(i)], rows, cols) + 63) / 64 * 64);
    }
  }
  return bytes;
}

std::string checkpoint_types_text(const ModelConfig& c, const MatrixTypes& types) {
  const auto sizes = parameters_sizes(c);
  std::string kinds;
  bool all_f32 = true;
  for (WeightType t : {WeightType::bf16, WeightType::f16, WeightType::f32}) {
    bool used = false;
    for (int i = 0; i < kNumParameterTensors; i++)
      used = used || (parameters_is_matrix(i) && sizes[std::size_t(i)] > 0 && types[std::size_t(i)] == t);
    if (!used) continue;
    if (t != WeightType::f32) all_f32 = false;
    kinds += (kinds.empty() ? "" : " and ") + std::string(weight_type_name(t));
  }
  if (all_f32) return " as float32";
  return "; its matrices as " + kinds + ", the rest as float32";
}

void tensor_mapping_place(TensorMapping& m, const ModelConfig& config, int index, std::int64_t offset,
                          const MatrixTypes& types) {
  m.target = std::string(parameters_name(index));
  // the per-layer tensors hold L equal slices
  const std::string_view target = m.target;
  const bool whole_model = target == "wte" || target == "wpe" || target == "lnfw" || target == "lnfb" || target == "lm_head";
  const std::int64_t per_layer = std::int64_t(parameters_sizes(config)[std::size_t(index)]) / std::max(1, config.n_layer);
  if (!whole_model && per_layer > 0) {
    m.layer = static_cast<int>(offset / per_layer);
    m.offset = offset % per_layer;
  } else {
    m.offset = offset;
  }
  m.memory = parameters_is_matrix(index) ? std::string(weight_type_name(types[std::size_t(index)])) : "f32";
}

}  // namespace headlab::model
