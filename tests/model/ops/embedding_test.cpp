// Tests for model/ops/embedding.h.
#include "model/ops/embedding.h"

#include <gtest/gtest.h>

#include "testing/gradcheck.h"

using headlab::model::embedding_backward;
using headlab::model::embedding_forward;
using headlab::testing::gradcheck;
using headlab::testing::random_vector;
using headlab::testing::weighted_sum;

TEST(EmbeddingForward, AddsTokenAndPositionRows) {
  const int V = 5, maxT = 4, C = 3, B = 1, T = 2;
  auto wte = random_vector(V * C, 1);
  auto wpe = random_vector(maxT * C, 2);
  int inp[T] = {3, 0};
  std::vector<float> out(B * T * C);
  embedding_forward(out.data(), inp, wte.data(), wpe.data(), B, T, C);
  for (int i = 0; i < C; i++) {
    EXPECT_FLOAT_EQ(out[i], wte[3 * C + i] + wpe[i]);
    EXPECT_FLOAT_EQ(out[C + i], wte[0 * C + i] + wpe[C + i]);
  }
}

TEST(EmbeddingBackward, MatchesFiniteDifferences) {
  const int V = 7, maxT = 6, C = 4, B = 2, T = 5;
  auto wte = random_vector(V * C, 1);
  auto wpe = random_vector(maxT * C, 2);
  int inp[B * T] = {1, 3, 3, 6, 0, 2, 2, 5, 1, 3};  // repeats: gradients must accumulate
  auto w = random_vector(B * T * C, 3);
  std::vector<float> out(B * T * C);
  auto loss = [&] {
    embedding_forward(out.data(), inp, wte.data(), wpe.data(), B, T, C);
    return weighted_sum(out.data(), w.data(), out.size());
  };
  std::vector<float> dwte(V * C, 0.0f), dwpe(maxT * C, 0.0f);
  embedding_backward(dwte.data(), dwpe.data(), w.data(), inp, B, T, C);
  EXPECT_TRUE(gradcheck("embedding dwte", loss, wte.data(), wte.size(), dwte.data()));
  EXPECT_TRUE(gradcheck("embedding dwpe", loss, wpe.data(), wpe.size(), dwpe.data()));
}
