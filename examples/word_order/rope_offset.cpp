// RoPE through headlab's engine: model::rope_forward turns q and k as the model's attention
// does, and q.k depends only on the offset m - n. The same lines as rope_offset.py.
#include <cmath>
#include <cstdio>
#include <vector>

#include "model/ops/rope.h"

int main() {
  const int HS = 64;
  const float theta = 10000.0f;
  std::vector<float> q(HS), k(HS);
  for (int i = 0; i < HS; ++i) q[i] = std::sin(0.9f * i + 0.4f), k[i] = std::sin(0.9f * i + 0.1f);

  // Row t of a (T, HS) block is turned by position t: copy the vector to every row.
  auto rotated = [&](const std::vector<float>& x, int pos) {
    std::vector<float> rows(std::size_t(pos + 1) * HS);
    for (int t = 0; t <= pos; ++t) std::copy(x.begin(), x.end(), rows.begin() + std::size_t(t) * HS);
    headlab::model::rope_forward(rows.data(), pos + 1, /*n_heads=*/1, HS, HS, /*rotary_dim=*/HS,
                                 /*interleaved=*/false, theta, /*scale=*/1.0f);
    return std::vector<float>(rows.end() - HS, rows.end());
  };

  const int pairs[][2] = {{5, 2}, {105, 102}, {1005, 1002}, {9, 3}};
  for (auto [m, n] : pairs) {
    std::vector<float> qm = rotated(q, m), kn = rotated(k, n);
    double dot = 0;
    for (int i = 0; i < HS; ++i) dot += double(qm[i]) * kn[i];
    std::printf("q at %4d, k at %4d, offset %d: q.k = %.4f\n", m, n, m - n, dot);
  }
  const double slow = std::pow(double(theta), double(HS - 2) / HS);
  std::printf("wavelengths: fastest pair %.1f tokens, slowest %.0f tokens\n", 2 * M_PI, 2 * M_PI * slow);
  return 0;
}
