// train/rotary.h — the rotary position embedding (Su et al. 2021) as the trainer needs it:
// the rotation of q and k and its backward, side by side. For the first d = rotary_dim
// channels of each head, NeoX halves pair channel i with i + d/2 (i in [0, d/2)) and turn
// the pair by angle(t, i) = t * theta^(-2i/d):
//   forward:  a' = a cos - b sin,     b' = b cos + a sin          (a rotation R(angle))
//   backward: da = da' cos + db' sin, db = db' cos - da' sin      (R^T = R(-angle))
// A rotation is orthogonal, so its backward is the rotation by the negative angle. The
// angles are the engine's (model/ops/rope.cpp: float frequencies, double angles, float
// cos/sin), so a trained model runs in the engine with the same numbers.
//
//   RotaryTable r = rotary_table(T, HS, rotary_dim, theta);
//   rotary_forward(qkv, r, T, NH, HS, 3 * C);        // q of one sequence, in place
//   rotary_backward(dqkv, r, T, NH, HS, 3 * C);      // dq, in place
#pragma once

#include <vector>

namespace headlab::train {

struct RotaryTable {
  int T = 0, half = 0;    // positions; rotated pairs per head (rotary_dim / 2)
  std::vector<float> cos;  // (T, half)
  std::vector<float> sin;  // (T, half)
};

// The cos and sin of every position and pair. rotary_dim even, in [0, HS].
RotaryTable rotary_table(int T, int rotary_dim, float theta);

// x: (T, row_stride), head h at columns h*HS ..; rotated in place. T <= table.T.
void rotary_forward(float* x, const RotaryTable& table, int T, int n_heads, int HS, int row_stride);
// dx: the gradient of the rotated x, same layout; turned back in place into the gradient of x.
void rotary_backward(float* dx, const RotaryTable& table, int T, int n_heads, int HS, int row_stride);

}  // namespace headlab::train
