#include "formats/model_files.h"
#include "train/trainer.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/bpe_tokenizer.h"
#include "formats/hf/checkpoint.h"
#include "model/config.h"
#include "model/forward.h"
#include "train/bpe_trainer.h"
#include "train/train_plot.h"

using namespace headlab;
using namespace headlab::train;
namespace fs = std::filesystem;

namespace {

// A scratch directory of this process (engineers and ctest run tests at once) with a
// byte-level tokenizer (257 tokens), a tiny config, a corpus
// and held-out text.
struct Fixture {
  fs::path dir;
  explicit Fixture(const std::string& name) : dir(fs::temp_directory_path() / ("headlab_trainer_test_" + name + "_" + std::to_string(getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir / "tok");
    fs::create_directories(dir / "corpus");
    BpeTrainOptions bo;
    bo.vocab_size = 257;
    auto v = bpe_train({"abc"}, bo);
    EXPECT_TRUE(v && bpe_save(*v, (dir / "tok").string()));
    model::ModelConfig c;
    c.n_layer = 1;
    c.n_head = 2;
    c.n_embd = 16;
    c.n_ctx = 16;
    c.vocab_size = 257;
    c.mlp = true;
    c.bos_token_id = c.eos_token_id = 256;
    EXPECT_TRUE(model::config_save(c, (dir / "config.json").string()));
    write("corpus/a.txt", std::string(400, 'x') + " the cat sat on the mat. the dog sat on the log.");
    write("corpus/b.txt", "a second document, with its own words and numbers 1 2 3. " + std::string(100, 'y'));
    write("heldout.txt", "held-out text that is never trained on, long enough for a window or two of bytes.");
    write("empty.txt", "");
  }
  ~Fixture() { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; }
  TrainOptions options() const {
    TrainOptions o;
    o.config_path = (dir / "config.json").string();
    o.tokenizer_dir = (dir / "tok").string();
    o.corpus = {(dir / "corpus").string()};
    o.heldout = {(dir / "heldout.txt").string()};
    o.out_dir = (dir / "out").string();
    o.steps = 6;
    o.batch = 2;
    o.warmup = 2;
    o.log_every = 2;
    o.eval_every = 3;
    o.checkpoint_every = 0;
    o.mix.copied_span = 0.3;
    o.mix.repeated_random = 0.3;
    o.mix.max_span = 6;
    return o;
  }
};

}  // namespace

TEST(TrainPrepare, RefusesMissingCorpus) {
  Fixture f("missing");
  TrainOptions o = f.options();
  o.corpus = {(f.dir / "nope.txt").string()};
  auto s = train_prepare(o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::not_found);
  EXPECT_NE(s.error().message.find("nope.txt"), std::string::npos);
}

TEST(TrainPrepare, RefusesEmptyCorpus) {
  Fixture f("empty");
  TrainOptions o = f.options();
  o.corpus = {(f.dir / "empty.txt").string()};
  auto s = train_prepare(o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(s.error().message.find("empty"), std::string::npos);
}

TEST(TrainPrepare, RefusesNoCorpusUnlessRandomOnly) {
  Fixture f("nocorpus");
  TrainOptions o = f.options();
  o.corpus.clear();
  EXPECT_FALSE(train_prepare(o));
  o.mix.copied_span = 0;
  o.mix.repeated_random = 1.0;
  EXPECT_TRUE(train_prepare(o));
}

TEST(TrainPrepare, PreviousTokenWindowsAloneNeedNoCorpusEither) {
  Fixture f("nocorpus2");
  TrainOptions o = f.options();
  o.corpus.clear();
  o.mix.copied_span = 0;
  o.mix.repeated_random = 0.6;
  o.mix.previous_token = 0.4;
  EXPECT_TRUE(train_prepare(o));
  o.mix.previous_token = 0.5;  // the fractions sum past 1
  auto s = train_prepare(o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("sum to at most 1"), std::string::npos);
}

TEST(TrainPrepare, SinusoidPositionsStartAsVaswanisSinusoids) {
  Fixture f("sinusoid");
  TrainOptions o = f.options();
  o.sinusoid_positions = 0.1f;
  auto s = train_prepare(o);
  ASSERT_TRUE(s) << s.error().message;
  const float* wpe = s->model.params.t.wpe;
  const int C = s->model.params.config.n_embd;
  for (int t : {0, 1, 5})
    for (int i : {0, 2, C - 2}) {
      const double angle = t / std::pow(10000.0, double(i) / C);
      EXPECT_NEAR(wpe[t * C + i], 0.1 * std::sin(angle), 1e-6) << t << "," << i;
      EXPECT_NEAR(wpe[t * C + i + 1], 0.1 * std::cos(angle), 1e-6) << t << "," << i;
    }
  o.sinusoid_positions = -1.0f;
  EXPECT_FALSE(train_prepare(o));
}

TEST(TrainPrepare, RefusesARunThatDoesNotFitInMemory) {
  Fixture f("memory");
  TrainOptions o = f.options();
  o.max_memory_bytes = 1 << 16;
  auto s = train_prepare(o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::too_long);
}

// NaN passes a "< 0" check (every comparison with it is false), and then every weight
// becomes NaN: each number is refused unless finite and in range, naming the option.
TEST(TrainPrepare, RefusesNonFiniteOrNonPositiveNumbers) {
  Fixture f("numbers");
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* option;
    std::function<void(TrainOptions&)> set;
  };
  const std::vector<Case> cases = {
      {"--lr", [&](TrainOptions& o) { o.lr = nan; }},
      {"--lr", [&](TrainOptions& o) { o.lr = inf; }},
      {"--lr", [&](TrainOptions& o) { o.lr = -inf; }},
      {"--lr", [](TrainOptions& o) { o.lr = 0.0f; }},
      {"--lr", [](TrainOptions& o) { o.lr = -1e-3f; }},
      {"--init-std", [&](TrainOptions& o) { o.init_std = nan; }},
      {"--sinusoid-positions", [&](TrainOptions& o) { o.sinusoid_positions = inf; }},
      {"--min-lr-fraction", [&](TrainOptions& o) { o.min_lr_fraction = nan; }},
      {"--min-lr-fraction", [](TrainOptions& o) { o.min_lr_fraction = 2.0f; }},
      {"--weight-decay", [&](TrainOptions& o) { o.weight_decay = nan; }},
      {"--grad-clip", [&](TrainOptions& o) { o.grad_clip = inf; }},
      {"--grad-clip", [](TrainOptions& o) { o.grad_clip = -1.0f; }},
      {"--copied-span", [&](TrainOptions& o) { o.mix.copied_span = nan; }},
      {"--markov", [&](TrainOptions& o) { o.mix.markov = inf; }},
      {"--warmup", [](TrainOptions& o) { o.warmup = -1; }},
  };
  for (const Case& c : cases) {
    TrainOptions o = f.options();
    c.set(o);
    auto s = train_prepare(o);
    ASSERT_FALSE(s) << c.option;
    EXPECT_EQ(s.error().code, ErrorCode::invalid_argument) << c.option;
    EXPECT_EQ(s.error().message.rfind(c.option, 0), 0u) << s.error().message;
  }
  TrainOptions o = f.options();
  o.lr = nan;
  EXPECT_EQ(train_prepare(o).error().message, "--lr must be a finite number, got nan");
  o.lr = 0.0f;
  EXPECT_EQ(train_prepare(o).error().message, "--lr must be > 0, got 0");
}

TEST(TrainPrepare, RefusesATokenizerThatIsNotTheModels) {
  Fixture f("vocab");
  model::ModelConfig c = *model::config_load((f.dir / "config.json").string());
  c.vocab_size = 300;
  c.bos_token_id = c.eos_token_id = 299;
  ASSERT_TRUE(model::config_save(c, (f.dir / "config.json").string()));
  auto s = train_prepare(f.options());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(s.error().message.find("vocab_size"), std::string::npos);
}

TEST(TrainPrepare, RefusesATokenizerDirectoryWithoutGpt2sTwoFiles) {
  Fixture f("nomerges");
  fs::remove(f.dir / "tok" / "merges.txt");
  auto s = train_prepare(f.options());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::not_found);
  EXPECT_NE(s.error().message.find("merges.txt"), std::string::npos) << s.error().message;
}

TEST(TrainPrepare, RefusesATokenizerWithoutEndOfText) {
  Fixture f("noeot");
  // the 256 bytes alone, and a config of that size
  nlohmann::json vocab;
  {
    std::ifstream in(f.dir / "tok" / "vocab.json");
    vocab = nlohmann::json::parse(in);
  }
  vocab.erase("<|endoftext|>");
  std::ofstream(f.dir / "tok" / "vocab.json") << vocab.dump();
  model::ModelConfig c = *model::config_load((f.dir / "config.json").string());
  c.vocab_size = 256;
  c.bos_token_id = c.eos_token_id = 255;
  ASSERT_TRUE(model::config_save(c, (f.dir / "config.json").string()));
  auto s = train_prepare(f.options());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(s.error().message.find("has no <|endoftext|> token"), std::string::npos) << s.error().message;
}

TEST(TrainPrepare, RefusesResumeWithoutACheckpoint) {
  Fixture f("noresume");
  TrainOptions o = f.options();
  o.resume = true;
  auto s = train_prepare(o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::not_found);
}

TEST(TrainRun, LowersTheLossAndWritesACheckpointInHfLayout) {
  Fixture f("run");
  TrainOptions o = f.options();
  o.steps = 30;
  o.lr = 3e-3f;
  auto s = train_prepare(o);
  ASSERT_TRUE(s) << s.error().message;
  int calls = 0;
  auto r = train_run(*s, [&](const TrainProgress& p) {
    ++calls;
    EXPECT_EQ(p.total, 30);
    EXPECT_GT(p.tokens_per_s, 0.0);
  });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(calls, 30);
  EXPECT_EQ(r->steps_done, 30);
  EXPECT_LT(s->log.back().loss, s->log.front().loss);
  for (const char* name : {"config.json", "model.safetensors", "vocab.json", "merges.txt", "heldout.txt",
                           "train_state.bin", "train_log.csv", "train_log.json"})
    EXPECT_TRUE(fs::exists(f.dir / "out" / name)) << name;
  // every file was written beside itself and renamed over the old one: no .tmp is left
  for (const auto& e : fs::directory_iterator(f.dir / "out")) EXPECT_NE(e.path().extension(), ".tmp") << e.path();
  auto loaded = model::model_load((f.dir / "out").string());
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(model::parameters_to_rows(*loaded), s->model.params.memory);
  // log rows every 2 steps; evaluated rows (every 3 steps, and the last) carry head scores
  EXPECT_EQ(s->log.size(), 15u);
  EXPECT_TRUE(s->log.back().evaluated);
  EXPECT_TRUE(std::isfinite(s->log.back().eval_loss));
  std::ifstream csv(f.dir / "out" / "train_log.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_NE(header.find("induction"), std::string::npos);
  auto svg = train_log_svg(train_log_csv(s->log), "log");
  ASSERT_TRUE(svg);
  EXPECT_NE(svg->find("<polyline"), std::string::npos);
}

// `headlab scan` and the server read <model>/heldout.txt: the trainer leaves its held-out
// text there, the documents joined by <|endoftext|> (which the engine reads as the BOS the
// trainer put between them).
TEST(TrainRun, CopiesTheHeldOutTextIntoTheModelFolder) {
  Fixture f("heldout");
  f.write("heldout2.txt", "a second held-out document, just as long as the first one, or so.");
  TrainOptions o = f.options();
  o.steps = 2;
  o.heldout = {(f.dir / "heldout.txt").string(), (f.dir / "heldout2.txt").string()};
  auto s = train_prepare(o);
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_TRUE(train_run(*s, nullptr));
  std::ifstream in(f.dir / "out" / "heldout.txt", std::ios::binary);
  std::stringstream copied;
  copied << in.rdbuf();
  EXPECT_EQ(copied.str(),
            "held-out text that is never trained on, long enough for a window or two of bytes."
            "<|endoftext|>"
            "a second held-out document, just as long as the first one, or so.");
  auto tok = model::model_tokenizer_load((f.dir / "out").string());
  ASSERT_TRUE(tok);
  EXPECT_EQ(*tok->encode_ids(copied.str()), s->heldout_tokens);
}

TEST(TrainRun, WritesNoHeldOutFileWithoutHeldOutText) {
  Fixture f("noheldout");
  TrainOptions o = f.options();
  o.steps = 2;
  o.heldout.clear();
  auto s = train_prepare(o);
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_TRUE(train_run(*s, nullptr));
  EXPECT_TRUE(fs::exists(f.dir / "out" / "model.safetensors"));
  EXPECT_FALSE(fs::exists(f.dir / "out" / "heldout.txt"));
}

TEST(TrainRun, IsRepeatableFromTheSeed) {
  Fixture f("seed");
  auto a = train_prepare(f.options());
  auto b = train_prepare(f.options());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(train_run(*a, nullptr));
  ASSERT_TRUE(train_run(*b, nullptr));
  EXPECT_EQ(a->model.params.memory, b->model.params.memory);
}

TEST(TrainPrepare, ANewRunIntoAFolderHoldingAModelIsRefusedWithoutForce) {
  Fixture f("force");
  auto one = train_prepare(f.options());
  ASSERT_TRUE(one);
  ASSERT_TRUE(train_run(*one, nullptr));
  const auto before = fs::last_write_time(f.dir / "out" / "model.safetensors");
  auto again = train_prepare(f.options());  // it replaced the model, and kept the old heldout.txt
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(again.error().message.find("already holds a model (model.safetensors)"), std::string::npos)
      << again.error().message;
  EXPECT_EQ(fs::last_write_time(f.dir / "out" / "model.safetensors"), before);
  TrainOptions o = f.options();
  o.force = true;
  EXPECT_TRUE(train_prepare(o));
}

TEST(TrainRun, ADivergingRunStopsWithAnErrorAndSavesNothing) {
  Fixture f("diverge");
  TrainOptions o = f.options();
  o.lr = 1e30;  // it ended "done" with NaN weights no loader accepts
  auto s = train_prepare(o);
  ASSERT_TRUE(s) << s.error().message;
  auto r = train_run(*s, nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("the run diverged at step"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("lower --lr (now 1e+30)"), std::string::npos) << r.error().message;
  EXPECT_FALSE(fs::exists(f.dir / "out" / "model.safetensors"));
}

TEST(TrainRun, StopSavesAndResumeContinuesExactly) {
  Fixture f("resume");
  // straight through
  auto straight = train_prepare(f.options());
  ASSERT_TRUE(straight);
  ASSERT_TRUE(train_run(*straight, nullptr));
  // stopped after step 3 (as Ctrl-C does), then resumed; --force: it replaces the run above
  TrainOptions again = f.options();
  again.force = true;
  auto first = train_prepare(again);
  ASSERT_TRUE(first) << first.error().message;
  auto r = train_run(*first, [](const TrainProgress& p) {
    if (p.step == 2) train_request_stop();
  });
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->interrupted);
  EXPECT_EQ(r->steps_done, 3);
  TrainOptions o = f.options();
  o.resume = true;
  auto resumed = train_prepare(o);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_EQ(resumed->step, 3);
  ASSERT_TRUE(train_run(*resumed, nullptr));
  EXPECT_EQ(resumed->model.params.memory, straight->model.params.memory);
}

// What the trainer writes for rotary and no positions is what the engine runs: config.json
// says which positions (headlab_positions, rope_theta, rotary_dim), the checkpoint has no
// wpe, and the engine's logits are the trainer's.
TEST(TrainRun, RotaryAndNoPositionModelsRunInTheEngineWithTheTrainersLogits) {
  using P = model::ModelConfig::Positions;
  for (const char* positions : {"rotary", "none"}) {
    Fixture f(std::string("engine_") + positions);
    TrainOptions o = f.options();
    o.steps = 4;
    o.positions = positions;
    if (o.positions == "rotary") {
      o.rope_theta = 500.0f;
      o.rotary_fraction = 0.5f;  // 4 of each head's 8 channels
    }
    auto s = train_prepare(o);
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_TRUE(train_run(*s, nullptr));
    auto loaded = model::model_load((f.dir / "out").string());
    ASSERT_TRUE(loaded) << loaded.error().message;
    const model::ModelConfig& c = loaded->config;
    EXPECT_EQ(c.positions, o.positions == "rotary" ? P::rotary : P::none) << positions;
    if (c.positions == P::rotary) {
      EXPECT_EQ(c.rotary_size(), 4);
      EXPECT_EQ(c.rope_theta, 500.0f);
    }
    EXPECT_EQ(model::parameters_sizes(c)[1], 0u);  // no wpe
    // the trainer's forward on the saved weights against the engine's, position by position
    const int T = 16;
    std::vector<int> ids(T), targets(T, -1);
    for (int t = 0; t < T; ++t) ids[t] = t == 0 ? 256 : 'a' + (t * 7) % 26;
    auto m = train_model_create(c, 1, T);
    ASSERT_TRUE(m);
    const std::vector<float> rows = model::parameters_to_rows(*loaded);
    std::copy(rows.begin(), rows.end(), m->params.memory.begin());
    train_forward(*m, ids.data(), targets.data());
    model::ForwardOptions fo;
    model::ForwardOutput out;
    model::Workspace ws;
    ASSERT_TRUE(model::forward(*loaded, ids, fo, out, ws));
    double max_diff = 0.0;
    for (std::size_t i = 0; i < out.logits.size(); ++i)
      max_diff = std::max(max_diff, double(std::fabs(out.logits[i] - m->acts.logits[i])));
    std::printf("  %s: engine vs trainer logits, max abs diff %.3g\n", positions, max_diff);
    EXPECT_EQ(out.logits.size(), std::size_t(T) * 257);
    EXPECT_LT(max_diff, 1e-4) << positions;
  }
}

TEST(TrainPrepare, RefusesPositionOptionsThatDoNotFitByName) {
  Fixture f("positions");
  auto refused = [&](const std::function<void(TrainOptions&)>& change, const std::string& needle) {
    TrainOptions o = f.options();
    change(o);
    auto s = train_prepare(o);
    ASSERT_FALSE(s) << needle;
    EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(s.error().message.find(needle), std::string::npos) << s.error().message;
  };
  refused([](TrainOptions& o) { o.positions = "sinusoidal"; }, "learned, rotary or none");
  refused([](TrainOptions& o) { o.rope_theta = 10000.0f; }, "--positions rotary");
  refused([](TrainOptions& o) { o.rotary_fraction = 0.5f; }, "--positions rotary");
  refused([](TrainOptions& o) { o.positions = "none"; o.sinusoid_positions = 0.1f; }, "--sinusoid-positions");
  refused([](TrainOptions& o) { o.positions = "rotary"; o.rope_theta = 0.5f; }, "--rope-theta");
  refused([](TrainOptions& o) { o.positions = "rotary"; o.rope_theta = std::nanf(""); }, "--rope-theta");
  refused([](TrainOptions& o) { o.positions = "rotary"; o.rotary_fraction = 0.1f; }, "--rotary-fraction");  // 0.8 of 8
  refused([](TrainOptions& o) { o.positions = "rotary"; o.rotary_fraction = 1.5f; }, "--rotary-fraction");
}

TEST(TrainPrepare, RefusesResumeWithOtherPositionsThanTheCheckpoints) {
  Fixture f("resume_positions");
  TrainOptions o = f.options();
  o.steps = 2;
  o.decay = LrDecay::constant;  // more steps extend a constant schedule (a cosine one is refused below)
  o.positions = "rotary";
  auto s = train_prepare(o);
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_TRUE(train_run(*s, nullptr));
  o.resume = true;
  o.steps = 4;
  EXPECT_TRUE(train_prepare(o));  // the same options resume
  o.positions = "none";
  auto r = train_prepare(o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(r.error().message.find("--positions \"none\" (the run's: \"rotary\")"), std::string::npos) << r.error().message;
}

TEST(TrainPrepare, ResumeRefusesOptionsThatDifferFromTheRunsAndStepsItHasDone) {
  Fixture f("resume_options");
  TrainOptions o = f.options();
  o.steps = 3;
  auto s = train_prepare(o);
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_TRUE(train_run(*s, nullptr));
  o.resume = true;
  auto differs = [&](auto change, const std::string& says) {
    TrainOptions x = o;
    change(x);
    auto r = train_prepare(x);
    ASSERT_FALSE(r) << says;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  };
  // each was taken silently, and the run went on with another recipe than its log says
  differs([](TrainOptions& x) { x.lr = 0.5; }, "--lr 0.5 (the run's: ");
  differs([](TrainOptions& x) { x.batch = 3; }, "--batch 3 (the run's: 2)");
  differs([](TrainOptions& x) { x.seed = 9; }, "--seed 9 (the run's: ");
  differs([](TrainOptions& x) { x.steps = 9; }, "--steps 9 (the run's: 3)");  // a cosine laid over 3 steps
  differs([](TrainOptions& x) { x.decay = LrDecay::constant; x.steps = 9; }, "--decay");
  differs([](TrainOptions&) {}, "has done 3 steps already; --steps 3 adds none");  // it said "done" and did nothing
}

TEST(TrainLogSvg, RejectsAFileThatIsNotALog) {
  auto svg = train_log_svg("a,b\n1,2\n", "x.csv");
  ASSERT_FALSE(svg);
  EXPECT_EQ(svg.error().code, ErrorCode::corrupt);
}
