// model/ops/fast_exp.cpp — a vectorised exp over a softmax row (see fast_exp.h).
#include "model/ops/fast_exp.h"

namespace headlab::model {

HEADLAB_MULTIVERSION
float row_max(const float* row, int n) {
  float lanes[16];
  for (int j = 0; j < 16; j++) lanes[j] = row[0];
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; j++) lanes[j] = row[i + j] > lanes[j] ? row[i + j] : lanes[j];
  float m = row[0];
  for (; i < n; i++) m = row[i] > m ? row[i] : m;
  for (int j = 0; j < 16; j++) m = lanes[j] > m ? lanes[j] : m;
  return m;
}

HEADLAB_MULTIVERSION
void exp_shifted_inplace(float* row, int n, float shift, float* sum) {
  // two passes, each vectorisable: the exps, then a sum over 16 lanes
  for (int i = 0; i < n; i++) row[i] = fast_exp(row[i] - shift);
  float lanes[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; j++) lanes[j] += row[i + j];
  float acc = 0.0f;
  for (; i < n; i++) acc += row[i];
  for (int j = 0; j < 16; j++) acc += lanes[j];
  *sum = acc;
}

}  // namespace headlab::model
