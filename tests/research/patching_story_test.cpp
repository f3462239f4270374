// The built-in model's loss story (issue 27; docs/research.md, "Worked example: the loss on the
// second copy"), measured: a sequence of eight words seen twice is predicted from its first copy
// (the second copy's loss is low), and not when the first copy is other words. The loss is read
// over the second copy only (PatchRequest::loss_positions 9:16, the losses of its tokens 10..16:
// the same tokens in both runs). Patching layer 1's attention output at each position of the
// second copy restores that position's share of it; taking the previous-token head 0.3's output
// from the corrupted run undoes most of it, the induction head 1.2's the next most. Thresholds
// sit well inside what was measured (the comments say it); the numbers are printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "formats/model_files.h"
#include "research/patch_input.h"
#include "research/patching.h"

using namespace headlab::model;
using namespace headlab::research;

namespace {

// The docs' and the explorer's pair (web/src/explorer/research/patch_stories.ts): eight words
// drawn at random, twice; the corrupted prompt's first copy is eight other words.
const std::string kCopy = " close living reform today percent hands single worth";
const std::string kOther = " press doubt account level threat schools former history";
const LossPositions kSecondCopy{9, 16};  // BOS, the copy at 1..8, again at 9..16

struct Story {
  Parameters params;
  PatchInput input;
};

Story load_story(const std::string& clean, const std::string& corrupted) {
  const std::string dir = std::string(HEADLAB_SOURCE_DIR) + "/models/headlab-tiny";
  auto p = model_load(dir);
  auto tok = model_tokenizer_load(dir);
  if (!p || !tok) throw std::runtime_error("the built-in model does not load");
  const PromptPair pair{clean, corrupted, "", "", 0};
  auto in = patch_input_from_prompts(*tok, p->config, {&pair, 1}, {}, PatchMetric::loss);
  if (!in) throw std::runtime_error(in.error().message);
  return {std::move(*p), std::move(*in)};
}

// How far a value is from the corrupted run's toward the clean run's (1: all the way).
float restored(const PatchResult& r, float v) { return (r.corrupted - v) / (r.corrupted - r.clean); }

}  // namespace

TEST(PatchingStory, PatchingLayerOnesAttentionOutputAtEachPositionOfTheSecondCopyRestoresItsShareOfTheLoss) {
  Story s = load_story(kCopy + kCopy, kOther + kCopy);
  ASSERT_EQ(s.input.pairs[0].clean.size(), 17u);
  PatchRequest rq;
  rq.what = PatchWhat::attn_out, rq.metric = PatchMetric::loss, rq.loss_positions = kSecondCopy;
  Workspace ws;
  auto r = patch(s.params, s.input.pairs, rq, ws);
  ASSERT_TRUE(r) << r.error().message;
  float sum = 0, least = 1, layer0 = 0;
  for (int pos = 9; pos < 16; pos++) {
    const float share = restored(*r, r->values[r->offset({1, pos})]);
    sum += share, least = std::min(least, share);
    layer0 = std::max(layer0, restored(*r, r->values[r->offset({0, pos})]));
  }
  std::printf("second copy's loss: clean %.3f, corrupted %.3f; layer 1 attn_out at positions 9..15 restores %.3f in "
              "all, at least %.3f each; layer 0 at most %.3f\n", r->clean, r->corrupted, sum, least, layer0);
  EXPECT_LT(r->clean, 2.0f);  // measured 1.212
  EXPECT_GT(r->corrupted, 7.0f);  // 8.414
  EXPECT_GT(sum, 0.85f);    // 0.993: the seven positions together restore about all of it
  EXPECT_LT(sum, 1.15f);
  EXPECT_GT(least, 0.08f);  // 0.132 to 0.157: each position its own seventh
  EXPECT_LT(layer0, 0.1f);  // 0.027: the second copy's layer-0 outputs carry little
}

TEST(PatchingStory, ThePreviousTokenHeadsCorruptedOutputUndoesMostOfTheSecondCopysLossDropAndTheInductionHeadsTheNextMost) {
  Story s = load_story(kCopy + kCopy, kOther + kCopy);
  PatchRequest rq;
  rq.what = PatchWhat::z_all_pos, rq.metric = PatchMetric::loss, rq.loss_positions = kSecondCopy, rq.noising = true;
  Workspace ws;
  auto r = patch(s.params, s.input.pairs, rq, ws);
  ASSERT_TRUE(r) << r.error().message;
  auto undone = [&](int l, int h) { return 1.0f - restored(*r, r->values[r->offset({l, h})]); };
  float others = 0;
  for (int l = 0; l < 2; l++)
    for (int h = 0; h < 4; h++)
      if (!(l == 0 && h == 3) && !(l == 1 && h == 2)) others = std::max(others, undone(l, h));
  std::printf("noising each head's output: 0.3 undoes %.3f of the second copy's loss drop, 1.2 %.3f, any other head at "
              "most %.3f\n", undone(0, 3), undone(1, 2), others);
  EXPECT_GT(undone(0, 3), 0.75f);  // measured 0.894 (0.83 to 0.93 on four other random sequences)
  EXPECT_GT(undone(1, 2), 0.45f);  // 0.606 (0.58 to 0.64)
  EXPECT_LT(others, 0.35f);        // 0.215 (at most 0.21 on the others)
}

TEST(PatchingStory, WithoutThePatchOrTheLossPositionsTheStoryDoesNotShow) {
  // The unpatched corrupted run is far from the clean run's second-copy loss (no patch, no
  // restoration); over every position (the loss metric's default) the first copies, other
  // words in the two runs, blur it; and the explorer's other default pair (the induction answer)
  // hardly moves the loss over every position at all.
  Story s = load_story(kCopy + kCopy, kOther + kCopy);
  PatchRequest rq;
  rq.what = PatchWhat::attn_out, rq.metric = PatchMetric::loss, rq.loss_positions = kSecondCopy, rq.layers = {1};
  rq.positions = {9};
  Workspace ws;
  auto ranged = patch(s.params, s.input.pairs, rq, ws);
  rq.loss_positions.reset();
  auto every = patch(s.params, s.input.pairs, rq, ws);
  ASSERT_TRUE(ranged && every);
  EXPECT_GT(ranged->corrupted - ranged->clean, 5.0f);  // measured 7.20: the drop the story is about
  EXPECT_LT(every->corrupted - every->clean, 4.0f);    // 3.07 (5.184 to 8.252): a first copy's losses added in
  EXPECT_GT(every->clean, 4.0f);                       // 5.184: the clean run's own first copy is unpredictable
  Story answer = load_story(" gray whale ink crown plum fog violin arch gray whale ink crown plum fog",
                            " gray whale ink crown plum fog arch violin gray whale ink crown plum fog");
  PatchRequest whole;
  whole.metric = PatchMetric::loss, whole.layers = {1}, whole.positions = {14};
  auto r = patch(answer.params, answer.input.pairs, whole, ws);
  ASSERT_TRUE(r) << r.error().message;
  std::printf("second copy's loss %.3f -> %.3f; over every position %.3f -> %.3f; the answer pair's %.3f -> %.3f\n",
              ranged->corrupted, ranged->clean, every->corrupted, every->clean, r->corrupted, r->clean);
  EXPECT_LT(std::fabs(r->corrupted - r->clean), 0.5f);  // 5.145 -> 5.010 (issue 27's complaint)
}
