// Tests for research/patch_narrowing.h: on generated sweeps (every family fixture's config, and
// the same with more layers; every what, two metrics, a pair or a batch of unequal lengths, some
// layers and positions or all, limits from a sliver of the cost to all of it) every offer is
// counted by the limit check's own cost function at most the limit and less than the refused
// sweep, keeps the front of what it narrows (the first pairs, layers and senders, the last
// positions), and is the most that fits (one more is over); a sweep within the limit, or one of
// which nothing fits, is offered nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/hf/config_json.h"
#include "research/patch_narrowing.h"

using namespace headlab::research;
using headlab::model::ModelConfig;

namespace {

const char* const kFixtures[] = {"gpt2_tiny", "attn_only", "families/llama", "families/pythia", "families/gemma2",
                                 "families/mistral_window"};

// The fixture's config, and the same with L layers (the cost functions read only the config).
std::vector<ModelConfig> configs_of(const std::string& fixture) {
  auto c = headlab::model::config_load(std::string(HEADLAB_SOURCE_DIR) + "/tests/fixtures/model/" + fixture + "/config.json");
  if (!c) throw std::runtime_error(c.error().message);
  ModelConfig deeper = *c;
  deeper.n_layer = 6;
  return {*c, deeper};
}

std::vector<PatchPair> pairs_of(const ModelConfig& c, const std::vector<int>& lengths) {
  std::vector<PatchPair> out;
  for (std::size_t i = 0; i < lengths.size(); i++) {
    PatchPair p;
    for (int t = 0; t < lengths[i]; t++) p.clean.push_back((11 * t + 5 + int(i)) % c.vocab_size);
    p.corrupted = p.clean;
    p.corrupted[1] = (p.clean[1] + 7) % c.vocab_size;
    p.answer = 3;
    p.wrong = 17;
    out.push_back(p);
  }
  return out;
}

std::vector<int> range(int from, int to) {
  std::vector<int> out;
  for (int x = from; x < to; x++) out.push_back(x);
  return out;
}

// The refused request with an offer's fields, as a client sends it back.
PatchRequest applied(const PatchRequest& rq, const PatchNarrowing& n) {
  PatchRequest r = rq;
  if (!n.layers.empty()) r.layers = n.layers;
  if (!n.positions.empty()) r.positions = n.positions;
  if (n.what) r.what = *n.what;
  return r;
}

headlab::Result<PatchCost> cost_of(const ModelConfig& c, std::span<const PatchPair> pairs, const PatchRequest& rq, PatchMethod m) {
  return m == PatchMethod::attribution ? attribution_patch_cost(c, pairs, rq) : patch_cost(c, pairs, rq);
}

const PatchWhat kWhats[] = {PatchWhat::resid_pre, PatchWhat::resid_mid, PatchWhat::attn_out, PatchWhat::mlp_out,
                            PatchWhat::z_all_pos, PatchWhat::k_all_pos, PatchWhat::pattern_all_pos, PatchWhat::z_by_pos,
                            PatchWhat::q_by_pos, PatchWhat::v_by_pos, PatchWhat::pattern_by_pos, PatchWhat::block_every,
                            PatchWhat::attn_head_all_pos_every, PatchWhat::attn_head_by_pos_every};

}  // namespace

TEST(PatchNarrowings, EveryOfferOnGeneratedSweepsIsWithinTheLimitByTheServersCostAndTheMostThatFits) {
  std::size_t offers_seen = 0, refusals = 0;
  for (const char* fixture : kFixtures)
    for (const ModelConfig& c : configs_of(fixture))
      for (const std::vector<int>& lengths : {std::vector<int>{7}, std::vector<int>{9, 6, 9}})
        for (PatchWhat what : kWhats)
          for (PatchMetric metric : {PatchMetric::normalized, PatchMetric::logprob})
            for (const std::vector<int>& layers : {std::vector<int>{}, std::vector<int>{c.n_layer - 1, 0}})
              for (const std::vector<int>& positions : {std::vector<int>{}, std::vector<int>{5, 1, 3, 4}})
                for (PatchMethod method : {PatchMethod::activation, PatchMethod::attribution}) {
                  const std::vector<PatchPair> pairs = pairs_of(c, lengths);
                  PatchRequest rq;
                  rq.what = what;
                  rq.metric = metric;
                  rq.layers = layers;
                  rq.positions = positions;
                  auto whole = cost_of(c, pairs, rq, method);
                  if (!whole) {  // what this model has no hook for: the offers say the same
                    EXPECT_FALSE(patch_narrowings(c, pairs, rq, method, 1.0));
                    continue;
                  }
                  const double W = whole->multiply_adds;
                  for (double share : {0.02, 0.2, 0.45, 0.8, 0.999, 1.0, 3.0}) {
                    const double limit = W * share;
                    const std::string where = std::string(fixture) + " L=" + std::to_string(c.n_layer) + " " +
                                              std::string(patch_what_name(what)) + " " + std::string(patch_metric_name(metric)) +
                                              " pairs=" + std::to_string(pairs.size()) + " layers=" + ranges_text(layers) +
                                              " positions=" + std::to_string(positions.size()) + " " +
                                              std::string(patch_method_name(method)) + " share=" + std::to_string(share);
                    auto offers = patch_narrowings(c, pairs, rq, method, limit);
                    ASSERT_TRUE(offers) << where << ": " << offers.error().message;
                    if (share >= 1.0) {
                      EXPECT_TRUE(offers->empty()) << where << ": a sweep within the limit is offered nothing";
                      continue;
                    }
                    refusals++;
                    std::set<std::string> labels;
                    for (const PatchNarrowing& n : *offers) {
                      offers_seen++;
                      EXPECT_TRUE(labels.insert(n.label).second) << where << ": " << n.label << " twice";
                      const std::size_t kept_pairs = n.pairs > 0 ? n.pairs : pairs.size();
                      const std::span<const PatchPair> ps(pairs.data(), kept_pairs);
                      const PatchRequest r = applied(rq, n);
                      auto cost = cost_of(c, ps, r, method);
                      ASSERT_TRUE(cost) << where << ": " << n.label << ": " << cost.error().message;
                      EXPECT_LE(cost->multiply_adds, limit) << where << ": " << n.label;
                      EXPECT_LT(cost->multiply_adds, W) << where << ": " << n.label;
                      EXPECT_EQ(cost->multiply_adds, n.multiply_adds) << where << ": " << n.label;
                      if (n.pairs > 0) {
                        EXPECT_LT(n.pairs, pairs.size()) << where << ": " << n.label;
                      }
                      if (method == PatchMethod::attribution) {
                        EXPECT_TRUE(n.pairs > 0 && n.layers.empty() && n.positions.empty() && !n.what)
                            << where << ": attribution's cost is per pair: only fewer pairs";
                      }
                      // the most that fit: one more pair, the next layer or one more position is over
                      const std::vector<int> all_layers = layers.empty() ? range(0, c.n_layer) : std::vector<int>{0, c.n_layer - 1};
                      const std::vector<int> all_positions = positions.empty() ? range(0, *std::max_element(lengths.begin(), lengths.end())) : std::vector<int>{1, 3, 4, 5};
                      if (n.pairs > 0) {
                        EXPECT_EQ(n.label, "the first " + std::to_string(n.pairs) + " of the " + std::to_string(pairs.size()) + " pairs");
                        auto more = cost_of(c, std::span<const PatchPair>(pairs.data(), n.pairs + 1), rq, method);
                        EXPECT_GT(more->multiply_adds, limit) << where << ": " << n.label;
                      }
                      if (!n.layers.empty()) {
                        ASSERT_LT(n.layers.size(), all_layers.size()) << where << ": " << n.label;
                        EXPECT_EQ(n.layers, std::vector<int>(all_layers.begin(), all_layers.begin() + std::ptrdiff_t(n.layers.size())))
                            << where << ": the first layers";
                        PatchRequest more = r;
                        more.layers.push_back(all_layers[n.layers.size()]);
                        EXPECT_GT(cost_of(c, pairs, more, method)->multiply_adds, limit) << where << ": " << n.label;
                      }
                      if (!n.positions.empty()) {
                        ASSERT_LT(n.positions.size(), all_positions.size()) << where << ": " << n.label;
                        EXPECT_EQ(n.positions, std::vector<int>(all_positions.end() - std::ptrdiff_t(n.positions.size()), all_positions.end()))
                            << where << ": the last positions";
                        PatchRequest more = r;
                        more.positions.insert(more.positions.begin(), all_positions[all_positions.size() - n.positions.size() - 1]);
                        EXPECT_GT(cost_of(c, pairs, more, method)->multiply_adds, limit) << where << ": " << n.label;
                      }
                      if (n.what) {
                        EXPECT_NE(patch_what_name(what).find("_by_pos"), std::string_view::npos) << where;
                        EXPECT_NE(patch_what_name(*n.what).find("_all_pos"), std::string_view::npos) << where;
                      }
                    }
                  }
                  // not one site of one pair fits: nothing is offered
                  auto none = patch_narrowings(c, pairs, rq, method, 1.0);
                  ASSERT_TRUE(none);
                  EXPECT_TRUE(none->empty()) << patch_what_name(what);
                }
  EXPECT_GT(refusals, 5000u);
  EXPECT_GT(offers_seen, 5000u) << "the loops reached offers";
}

TEST(PatchNarrowings, OffersKeepTheFirstLayersTheLastPositionsAndTheFirstPairsAndSaySo) {
  ModelConfig c = configs_of("gpt2_tiny").front();
  c.n_layer = 12;
  const std::vector<PatchPair> pairs = pairs_of(c, {16, 16, 16, 16});
  PatchRequest rq;
  rq.what = PatchWhat::z_by_pos;
  rq.metric = PatchMetric::logprob;
  const double W = patch_cost(c, pairs, rq)->multiply_adds;
  auto offers = patch_narrowings(c, pairs, rq, PatchMethod::activation, W / 3.2);
  ASSERT_TRUE(offers);
  std::vector<std::string> labels;
  for (const PatchNarrowing& n : *offers) labels.push_back(n.label);
  // 1 of 4 pairs is 1/4 of the work; the first layers cost the most (a run from layer l is L - l
  // blocks), so 1 layer of 12 is 12/78 of the sites' work and 2 are 23/78, over 1/3.2 with the base runs
  EXPECT_EQ(labels, (std::vector<std::string>{"the first 1 of the 4 pairs", "layers 0–1 only (2 of 12)",
                                              "positions 12–15 only (the last 4 of 16)",
                                              "z_all_pos instead: each head over all positions at once"}));
  // neither alone fits: the first layer with the last positions that fit beside it
  auto both = patch_narrowings(c, pairs, rq, PatchMethod::activation, W / 20);
  ASSERT_TRUE(both);
  ASSERT_EQ(both->size(), 1u);
  EXPECT_EQ(both->front().layers, std::vector<int>{0});
  EXPECT_EQ(both->front().label, "layers 0 and positions " + ranges_text(both->front().positions));
  // a sweep over all positions is never offered fewer positions: they would not change its work
  rq.what = PatchWhat::z_all_pos;
  auto heads = patch_narrowings(c, pairs, rq, PatchMethod::activation, patch_cost(c, pairs, rq)->multiply_adds / 2);
  ASSERT_TRUE(heads);
  for (const PatchNarrowing& n : *heads) EXPECT_TRUE(n.positions.empty()) << n.label;
  EXPECT_EQ(ranges_text({0, 1, 2, 3, 5, 7, 8, 9}), "0–3, 5, 7–9");
  EXPECT_EQ(ranges_text({}), "");
}

TEST(PathSenderNarrowing, OnGeneratedSweepsTheFirstSendersThatReachAReceiverWithinTheLimitAndNoneMoreFit) {
  std::size_t offers_seen = 0;
  for (const char* fixture : kFixtures)
    for (const ModelConfig& c : configs_of(fixture)) {
      const int L = c.n_layer;
      const std::vector<std::vector<PathReceiver>> receivers = {
          {}, {{L - 1, 0, 'k'}}, {{1, 0, 'q'}, {L - 1, 1, 'v'}}, {{0, 0, 'q'}}};
      const std::vector<std::vector<HeadIndex>> senders = {{}, {{0, -1}, {L - 1, 1}}, {{1, 1}, {0, 0}, {1, 0}}};
      for (const auto& to : receivers)
        for (const auto& from : senders)
          for (const std::vector<int>& lengths : {std::vector<int>{7}, std::vector<int>{9, 6}}) {
            const std::vector<PatchPair> pairs = pairs_of(c, lengths);
            PathPatchRequest rq;
            rq.receivers = to;
            rq.senders = from;
            rq.metric = PatchMetric::logprob;
            auto whole = path_patch_cost(c, pairs, rq);
            ASSERT_TRUE(whole) << whole.error().message;
            const double W = whole->multiply_adds;
            int last = to.empty() ? L : 0;
            for (const PathReceiver& r : to) last = std::max(last, r.layer);
            for (double share : {0.05, 0.3, 0.6, 0.9, 0.999, 1.0, 2.0}) {
              const std::string where = std::string(fixture) + " L=" + std::to_string(L) + " receivers=" +
                                        std::to_string(to.size()) + " senders=" + std::to_string(from.size()) +
                                        " share=" + std::to_string(share);
              auto offer = path_sender_narrowing(c, pairs, rq, W * share);
              ASSERT_TRUE(offer) << where;
              if (share >= 1.0) {
                EXPECT_FALSE(*offer) << where << ": a sweep within the limit is offered nothing";
                continue;
              }
              if (!*offer) continue;
              offers_seen++;
              const PatchNarrowing& n = **offer;
              PathPatchRequest r = rq;
              r.senders = n.senders;
              auto cost = path_patch_cost(c, pairs, r);
              ASSERT_TRUE(cost) << where;
              EXPECT_LE(cost->multiply_adds, W * share) << where << ": " << n.label;
              EXPECT_EQ(cost->multiply_adds, n.multiply_adds) << where;
              for (const HeadIndex& s : n.senders) EXPECT_LT(s.layer, last) << where << ": every sender kept reaches a receiver";
              EXPECT_EQ(n.label.rfind("the first " + std::to_string(n.senders.size()) + " of the ", 0), 0u) << n.label;
              // the front of the senders path_patch runs (sorted), and the next one is over the limit
              for (std::size_t i = 1; i < n.senders.size(); i++)
                EXPECT_LT(std::pair(n.senders[i - 1].layer, n.senders[i - 1].head), std::pair(n.senders[i].layer, n.senders[i].head));
              // the whole sweep's senders that reach a receiver, in order: the offer is their front
              std::vector<HeadIndex> reach;
              for (int l = 0; l < L; l++)
                for (int h = 0; h < c.n_head; h++) {
                  bool asked = from.empty();
                  for (const HeadIndex& s : from) asked = asked || (s.layer == l && (s.head < 0 || s.head == h));
                  if (asked && l < last) reach.push_back({l, h});
                }
              ASSERT_LT(n.senders.size(), reach.size()) << where;
              for (std::size_t i = 0; i < n.senders.size(); i++)
                EXPECT_TRUE(n.senders[i].layer == reach[i].layer && n.senders[i].head == reach[i].head) << where;
              r.senders.push_back(reach[n.senders.size()]);
              EXPECT_GT(path_patch_cost(c, pairs, r)->multiply_adds, W * share) << where << ": one more sender fits";
            }
            auto none = path_sender_narrowing(c, pairs, rq, 1.0);
            ASSERT_TRUE(none);
            EXPECT_FALSE(*none) << "not one sender fits: nothing is offered";
          }
    }
  EXPECT_GT(offers_seen, 100u) << "the loops reached offers";
}

TEST(PathSenderNarrowing, SaysHowManyOfTheSendersThatReachAReceiverItKeeps) {
  ModelConfig c = configs_of("gpt2_tiny").front();  // 2 layers, 2 heads
  const std::vector<PatchPair> pairs = pairs_of(c, {8});
  PathPatchRequest rq;
  rq.receivers = {{1, 0, 'k'}};  // layer 1's senders reach no layer-1 receiver
  const double W = path_patch_cost(c, pairs, rq)->multiply_adds;
  // per token: the pair's two runs (2 L = 4), each layer-0 sender 2 + (L - 1) = 3 blocks: 10 in all
  auto one = path_sender_narrowing(c, pairs, rq, W * 0.75);
  ASSERT_TRUE(one && *one);
  EXPECT_EQ((*one)->label, "the first 1 of the 2 senders that reach a receiver (0.0)");
  rq.receivers = {};  // the final residual stream: every sender reaches it
  const double F = path_patch_cost(c, pairs, rq)->multiply_adds;  // 4 + 2·2 + 2·1 = 10
  auto two = path_sender_narrowing(c, pairs, rq, F * 0.85);
  ASSERT_TRUE(two && *two);
  EXPECT_EQ((*two)->label, "the first 2 of the 4 senders (0.0 … 0.1)");
  EXPECT_EQ((*two)->senders.size(), 2u);
}
