// model/ops/rope.h — rotary position embedding (Su et al. 2021, RoFormer), applied to q and
// k before the scores, so that q_t . k_s depends on t - s only through rotations.
// For the first d = rotary_dim channels of each head, pairs (a, b) turn by the angle
//   angle(t, i) = (t / scale) * f_i,   f_i = theta^(-2i/d),   i in [0, d/2)
//   a' = a cos - b sin,   b' = b cos + a sin
// paired as in GPT-NeoX and Hugging Face's rotate_half (a = x[i], b = x[i + d/2]) or as in
// GPT-J (interleaved: a = x[2i], b = x[2i + 1]). Channels d..HS are left as they are
// (partial rotary: Pythia rotates a quarter of each head). `scale` is rope_scaling's linear
// factor (1 for none). Llama 3's rope_scaling changes the frequencies f_i instead
// (rope_llama3_frequencies). (The trainer has its own, train/rotary.h; the backward here is for attribution.)
#pragma once

#include <vector>

namespace headlab::model {

void rope_forward(float* x,  // (T, row_stride): head h at columns h*HS..; rotated in place
                  int T, int n_heads, int HS, int row_stride, int rotary_dim, bool interleaved, float theta,
                  float scale);

// The same with the frequencies given: inv_freq (rotary_dim / 2). Row t of x is position
// first_position + t (a forward that runs only the rows from first_position on).
void rope_forward_frequencies(float* x, int T, int n_heads, int HS, int row_stride, int rotary_dim, bool interleaved,
                              const float* inv_freq, float scale, int first_position = 0);

// f_i = theta^(-2i/d) for i in [0, d/2), in float32 as Hugging Face computes them.  (d/2)
std::vector<float> rope_frequencies(int rotary_dim, float theta);

// rope_scaling "llama3" (Llama 3.1): with the wavelength w = 2 pi / f and the original
// context n (original_max_position_embeddings),
//   w < n / high:   f                         (high frequencies kept)
//   w > n / low:    f / factor                (low frequencies slowed as linear scaling)
//   otherwise:      (1 - s) f / factor + s f,  s = (n / w - low) / (high - low)
void rope_llama3_frequencies(std::vector<float>& inv_freq, float factor, float low_freq_factor, float high_freq_factor,
                             int original_max_positions);

// The backward of rope_forward_frequencies, in place on the gradient: a rotation is
// orthogonal, so its transpose is the rotation by the negative angle
//   da = da' cos + db' sin,   db = db' cos - da' sin        (channels d..HS pass through)
void rope_backward_frequencies(float* dx,  // (T, row_stride): d rotated -> d input, in place
                               int T, int n_heads, int HS, int row_stride, int rotary_dim, bool interleaved,
                               const float* inv_freq, float scale);

}  // namespace headlab::model
