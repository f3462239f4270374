// model/packed_weights.cpp — packing a model's matrices once (see packed_weights.h).
#include "model/packed_weights.h"

#include <memory>

#include "model/ops/matmul_packed.h"

namespace headlab::model {

void parameters_pack(Parameters& p) {
  p.packed.reset();
  if (!matmul_packed_supported()) return;
  const ModelConfig& c = p.config;
  const int C = c.n_embd, L = c.n_layer;
  const int QKV = c.qkv_width(), D = c.q_width(), F = c.mlp_width(), FC = c.fc_width();  // GPT-2: 3C, C, 4C, 4C
  auto pw = std::make_shared<PackedWeights>();
  pw->qkvw_stride = matmul_packed_size(QKV, C);
  pw->attprojw_stride = matmul_packed_size(C, D);
  pw->fcw_stride = c.mlp ? matmul_packed_size(FC, C) : 0;
  pw->fcprojw_stride = c.mlp ? matmul_packed_size(C, F) : 0;
  const std::size_t per_layer = pw->qkvw_stride + pw->attprojw_stride + pw->fcw_stride + pw->fcprojw_stride;
  pw->memory.resize(per_layer * L + matmul_packed_size(c.vocab_size, C));
  float* at = pw->memory.data();
  auto take = [&](std::size_t n) {
    float* r = at;
    at += n;
    return r;
  };
  float* qkvw = take(pw->qkvw_stride * L);
  float* attprojw = take(pw->attprojw_stride * L);
  float* fcw = take(pw->fcw_stride * L);
  float* fcprojw = take(pw->fcprojw_stride * L);
  float* unembedding = take(matmul_packed_size(c.vocab_size, C));
  const ParameterTensors& w = p.t;
  for (int l = 0; l < L; l++) {
    matmul_pack(qkvw + l * pw->qkvw_stride, w.qkvw + std::size_t(l) * QKV * C, QKV, C);
    matmul_pack(attprojw + l * pw->attprojw_stride, w.attprojw + std::size_t(l) * C * D, C, D);
    if (c.mlp) {
      matmul_pack(fcw + l * pw->fcw_stride, w.fcw + std::size_t(l) * FC * C, FC, C);
      matmul_pack(fcprojw + l * pw->fcprojw_stride, w.fcprojw + std::size_t(l) * C * F, C, F);
    }
  }
  matmul_pack(unembedding, parameters_unembedding(w, c), c.vocab_size, C);
  pw->qkvw = qkvw, pw->attprojw = attprojw, pw->fcw = fcw, pw->fcprojw = fcprojw, pw->unembedding = unembedding;
  p.packed = std::move(pw);
}

void parameters_unpack(Parameters& p) { p.packed.reset(); }

}  // namespace headlab::model
