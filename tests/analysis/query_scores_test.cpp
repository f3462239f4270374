// Tests for analysis/query_scores.h: one query's scores against every key, from the
// recorded q and k, agree with the scores the forward itself computed for keys 0..query.
#include "analysis/query_scores.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/parameters.h"

using namespace headlab;
using namespace headlab::analysis;

namespace {

struct RandomForward {
  model::Parameters params;
  model::ForwardOutput out;
  std::vector<int> ids = {3, 17, 5, 17, 9, 2, 3, 17, 11};  // (T,)
  RandomForward() {
    model::ModelConfig c;
    c.n_layer = 2;
    c.n_head = 4;
    c.n_embd = 32;
    c.n_ctx = 16;
    c.vocab_size = 24;
    c.bos_token_id = c.eos_token_id = 0;
    params = model::parameters_allocate(c);
    model::parameters_init_random(params, 5);
    model::ForwardOptions opt;
    opt.record.qkv = true;
    opt.record.scores = true;
    opt.logits = false;
    model::Workspace ws;
    auto s = model::forward(params, ids, opt, out, ws);
    if (!s) ADD_FAILURE() << s.error().message;
  }
};

}  // namespace

TEST(QueryScores, MatchTheForwardsOwnScoresUpToTheQuery) {
  RandomForward f;
  const int T = static_cast<int>(f.ids.size());
  double worst = 0.0;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h)
      for (int q = 0; q < T; ++q) {
        auto s = query_scores_all_keys(f.out.record, f.params.config, l, h, q);
        ASSERT_TRUE(s) << s.error().message;
        ASSERT_EQ(s->size(), std::size_t(T));
        const float* recorded = f.out.record.scores_row(l, h, q);  // (q+1,)
        for (int k = 0; k <= q; ++k) worst = std::max(worst, double(std::fabs((*s)[k] - recorded[k])));
      }
  EXPECT_LT(worst, 1e-5) << "max abs difference from the forward's scores";
}

TEST(QueryScores, GiveTheKeysAfterTheQueryFiniteScoresToo) {
  RandomForward f;
  auto s = query_scores_all_keys(f.out.record, f.params.config, 1, 2, 3);
  ASSERT_TRUE(s);
  for (float v : *s) EXPECT_TRUE(std::isfinite(v));
}

TEST(QueryScores, RefuseAQueryOutsideTheTextAndARecordWithoutQkv) {
  RandomForward f;
  EXPECT_FALSE(query_scores_all_keys(f.out.record, f.params.config, 0, 0, 9));
  EXPECT_FALSE(query_scores_all_keys(f.out.record, f.params.config, 0, 4, 0));
  EXPECT_FALSE(query_scores_all_keys(f.out.record, f.params.config, 2, 0, 0));
  model::ActivationRecord empty = f.out.record;
  empty.qkv.clear();
  auto s = query_scores_all_keys(empty, f.params.config, 0, 0, 0);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("record.qkv"), std::string::npos);
}
