// model/ops/rope.h — rotary position embedding (Su et al. 2021, RoFormer), applied to q and
// k before the scores, so that q_t . k_s depends on t - s only through rotations.
// For the first d = rotary_dim channels of each head, pairs (a, b) turn by the angle
//   angle(t, i) = (t / scale) * theta^(-2i/d),   i in [0, d/2)
//   a' = a cos - b sin,   b' = b cos + a sin
// paired as in GPT-NeoX and Hugging Face's rotate_half (a = x[i], b = x[i + d/2]) or as in
// GPT-J (interleaved: a = x[2i], b = x[2i + 1]). Channels d..HS are left as they are
// (partial rotary: Pythia rotates a quarter of each head). `scale` is rope_scaling's linear
// factor (1 for none). (Inference only.)
#pragma once

namespace headlab::model {

void rope_forward(float* x,  // (T, row_stride): head h at columns h*HS..; rotated in place
                  int T, int n_heads, int HS, int row_stride, int rotary_dim, bool interleaved, float theta,
                  float scale);

}  // namespace headlab::model
