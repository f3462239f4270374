#include "server/model_service/inference_pool.h"
#include "server/http/errors.h"
#include "testing/model_fixtures.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace headlab;
using namespace headlab::server;

TEST(InferencePool, RunsJobsAndReturnsTheirResults) {
  InferencePool pool({4, 5000});
  auto r = pool.run<int>([](model::Workspace&) -> Result<int> { return 42; });
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, 42);
}

TEST(InferencePool, RefusesWorkBeyondTheQueueLimitAtOnce) {
  InferencePool pool({1, 5000});
  std::atomic<bool> release{false}, started{false};
  std::thread busy([&] {
    pool.run<int>([&](model::Workspace&) -> Result<int> {
      started = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return 1;
    });
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread queued([&] { pool.run<int>([](model::Workspace&) -> Result<int> { return 2; }); });
  while (pool.queued() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto refused = pool.run<int>([](model::Workspace&) -> Result<int> { return 3; });
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::unavailable);
  release = true;
  busy.join();
  queued.join();
}

TEST(InferencePool, AJobWhoseRequestGaveUpIsNeverRun) {
  InferencePool pool({4, 50});
  std::atomic<bool> release{false}, late_ran{false}, busy_started{false};
  std::thread busy([&] {
    pool.run<int>([&](model::Workspace&) -> Result<int> {
      busy_started = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return 1;
    });
  });
  // the one worker must be inside the busy job first (a fixed sleep was not always enough
  // under the sanitizers on a loaded machine: the late job then ran first)
  while (!busy_started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto late = pool.run<int>([&](model::Workspace&) -> Result<int> {
    late_ran = true;
    return 2;
  });
  ASSERT_FALSE(late);  // timed out after 50 ms
  EXPECT_NE(late.error().message.find("busy"), std::string::npos);
  release = true;
  busy.join();
  auto after = pool.run<int>([](model::Workspace&) -> Result<int> { return 3; });  // the worker moved on
  EXPECT_TRUE(after);
  EXPECT_FALSE(late_ran);
}

TEST(InferencePool, ClientsAreServedInTurnsAndAGreedyOneCannotFillTheQueue) {
  InferencePool pool({4, 5000});
  std::atomic<bool> release{false}, started{false};
  std::mutex order_mutex;
  std::vector<std::string> order;
  std::thread busy([&] {
    InferencePool::ClientScope as("greedy");
    pool.run<int>([&](model::Workspace&) -> Result<int> {
      started = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return 0;
    });
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto job = [&](const std::string& who) {
    return [&, who] {
      InferencePool::ClientScope as(who);
      auto r = pool.run<int>([&, who](model::Workspace&) -> Result<int> {
        std::lock_guard<std::mutex> lock(order_mutex);
        order.push_back(who);
        return 1;
      });
      std::lock_guard<std::mutex> lock(order_mutex);
      if (!r) order.push_back(who + " refused");
    };
  };
  std::vector<std::thread> greedy;
  for (int i = 0; i < 4; ++i) greedy.emplace_back(job("greedy"));  // fills the queue of 4
  while (pool.queued() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread normal(job("normal"));  // takes the greedy client's newest place
  while (true) {
    {
      std::lock_guard<std::mutex> lock(order_mutex);
      if (!order.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  release = true;
  busy.join();
  normal.join();
  for (auto& t : greedy) t.join();
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(order[0], "greedy refused");  // the one that made room
  EXPECT_EQ(order[1], "normal");          // greedy's turn came first, but it has had the model already
  EXPECT_EQ(order[2], "greedy");
  EXPECT_EQ(order[3], "greedy");
  EXPECT_EQ(order[4], "greedy");
}

// ---- batches of forwards -------------------------------------------------------------------

namespace {

// Holds the worker in a run() job of `client` until release() (the forwards sent meanwhile
// wait together).
struct HeldWorker {
  InferencePool& pool;
  std::atomic<bool> started{false}, released{false};
  std::thread thread;
  explicit HeldWorker(InferencePool& p, std::string client = "") : pool(p) {
    thread = std::thread([this, client] {
      InferencePool::ClientScope as(client);
      pool.run<int>([this](model::Workspace&) -> Result<int> {
        started = true;
        while (!released) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return 0;
      });
    });
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void release() {
    released = true;
    if (thread.joinable()) thread.join();
  }
  ~HeldWorker() { release(); }
};

}  // namespace

TEST(InferencePool, ForwardsWaitingTogetherRunAsOneBatchEachWithItsLoneAnswer) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  InferencePool pool({16, 20000}, &p);
  model::ForwardOptions opt;
  opt.record.pattern = true;
  std::vector<std::vector<int>> texts = {{1, 2, 3, 4, 5}, {9, 8}, {7, 7, 7, 1}, {3}, {2, 4, 6, 8, 10, 12}};
  std::vector<Result<InferencePool::SharedOutput>> got(texts.size(), make_error(ErrorCode::unavailable, "not run"));
  {
    HeldWorker held(pool);
    std::vector<std::thread> clients;
    for (std::size_t i = 0; i < texts.size(); i++)
      clients.emplace_back([&, i] {
        InferencePool::ClientScope as("learner " + std::to_string(i));
        got[i] = pool.forward(texts[i], opt);
      });
    while (pool.queued() < int(texts.size())) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    held.release();
    for (auto& t : clients) t.join();
  }
  EXPECT_EQ(pool.counts().batches, 2);  // the held job, then the five forwards at once
  EXPECT_EQ(pool.counts().forwards, 5);
  for (std::size_t i = 0; i < texts.size(); i++) {
    ASSERT_TRUE(got[i]) << got[i].error().message;
    model::ForwardOutput lone;
    model::Workspace ws;
    ASSERT_TRUE(model::forward(p, texts[i], opt, lone, ws));
    EXPECT_EQ((*got[i])->logits, lone.logits) << "text " << i;
    EXPECT_EQ((*got[i])->record.pattern, lone.record.pattern) << "text " << i;
  }
}

TEST(InferencePool, AWaitingRequestKnowsHowManyAreAheadOfIt) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  InferencePool pool({16, 20000}, &p);
  std::vector<std::thread> clients;
  {
    HeldWorker held(pool);
    // a, b from one client, c from another: turns go a, c, b (different texts: identical
    // ones would join one job)
    int last = 3;
    for (auto [client, id] : {std::pair{"one", "a"}, std::pair{"one", "b"}, std::pair{"two", "c"}}) {
      const std::string who = client, rid = id;
      const int token = last++;
      clients.emplace_back([&pool, who, rid, token] {
        InferencePool::ClientScope as(who);
        InferencePool::RequestScope tagged(rid);
        (void)pool.forward({1, 2, token}, model::ForwardOptions{});
      });
      while (pool.place(rid).state != QueuePlace::State::waiting) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(pool.place("a").ahead, 0);
    EXPECT_EQ(pool.place("c").ahead, 1);
    EXPECT_EQ(pool.place("b").ahead, 2);
    EXPECT_EQ(pool.place("b").waiting, 3);
    EXPECT_EQ(pool.place("nobody").state, QueuePlace::State::unknown);
    held.release();
    for (auto& t : clients) t.join();
  }
  EXPECT_EQ(pool.place("a").state, QueuePlace::State::unknown);  // answered
}

TEST(InferencePool, TheQueueIsBoundedByTheMemoryItsRunsWillNeed) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  model::ForwardOptions opt;
  opt.record.pattern = true;
  const std::size_t one = model::forward_bytes(p.config, 4, opt);
  InferencePoolOptions o;
  o.max_queue = 100;
  o.timeout_ms = 20000;
  o.max_queue_bytes = 2 * one;  // two runs' worth
  InferencePool pool(o, &p);
  std::vector<std::thread> clients;
  {
    HeldWorker held(pool);
    for (int i = 0; i < 2; i++) {
      clients.emplace_back([&pool, &opt, i] {
        InferencePool::ClientScope as("learner " + std::to_string(i));
        EXPECT_TRUE(pool.forward({1, 2, 3, 4 + i}, opt));  // different texts: twins would share one place
      });
      while (pool.queued() < i + 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    InferencePool::ClientScope as("learner 1");  // as greedy as the greediest: refused
    auto refused = pool.forward({5, 6, 7, 8}, opt);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, ErrorCode::unavailable);
    EXPECT_NE(refused.error().message.find("MB of work waiting"), std::string::npos) << refused.error().message;
    held.release();
    for (auto& t : clients) t.join();
  }
}

// ---- identical forwards computed once -----------------------------------------------------------

TEST(InferencePool, IdenticalForwardsRunOnceAndEachRequestGetsTheSameAnswerAtItsJobsPlace) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  InferencePool pool({16, 20000}, &p);
  model::ForwardOptions opt;
  opt.record.pattern = true;
  const std::vector<int> text = {5, 1, 4, 1, 5, 9, 2, 6};
  const int n = 8;
  std::vector<Result<InferencePool::SharedOutput>> got(n, make_error(ErrorCode::unavailable, "not run"));
  {
    HeldWorker held(pool);
    std::vector<std::thread> clients;
    for (int i = 0; i < n; i++) {
      clients.emplace_back([&, i] {
        InferencePool::ClientScope as("learner " + std::to_string(i));
        InferencePool::RequestScope tagged("r" + std::to_string(i));
        got[std::size_t(i)] = pool.forward(text, opt);
      });
      while (pool.place("r" + std::to_string(i)).state != QueuePlace::State::waiting)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(pool.queued(), 1);  // one queue place for all eight
    EXPECT_EQ(pool.counts().joined, n - 1);
    for (int i = 0; i < n; i++) EXPECT_EQ(pool.place("r" + std::to_string(i)).ahead, 0) << i;
    held.release();
    for (auto& t : clients) t.join();
  }
  EXPECT_EQ(pool.counts().forwards, 1);  // the one forward run for all
  model::ForwardOutput lone;
  model::Workspace ws;
  ASSERT_TRUE(model::forward(p, text, opt, lone, ws));
  for (int i = 0; i < n; i++) {
    ASSERT_TRUE(got[std::size_t(i)]) << got[std::size_t(i)].error().message;
    EXPECT_EQ((*got[std::size_t(i)])->logits, lone.logits) << i;
    EXPECT_EQ((*got[std::size_t(i)])->record.pattern, lone.record.pattern) << i;
  }
}

namespace {

// n requests of different clients asking for the same forward while the worker is held: they
// make one job, and each gets its answer.
std::vector<Result<InferencePool::SharedOutput>> joined_forwards(InferencePool& pool, const std::vector<int>& text,
                                                                 const model::ForwardOptions& opt, int n) {
  std::vector<Result<InferencePool::SharedOutput>> got(std::size_t(n), make_error(ErrorCode::unavailable, "not run"));
  const long long joined_before = pool.counts().joined;
  HeldWorker held(pool);
  std::vector<std::thread> clients;
  for (int i = 0; i < n; i++)
    clients.emplace_back([&, i] {
      InferencePool::ClientScope as("learner " + std::to_string(i));
      got[std::size_t(i)] = pool.forward(text, opt);
    });
  while (pool.counts().joined < joined_before + n - 1 || pool.queued() < 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  held.release();
  for (auto& t : clients) t.join();
  return got;
}

}  // namespace

TEST(InferencePool, JoinedRequestsReceiveTheVerySameOutputObjectNotCopies) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  InferencePool pool({16, 20000}, &p);
  model::ForwardOptions opt;
  opt.record.pattern = true;
  const int n = 8;
  auto got = joined_forwards(pool, {5, 1, 4, 1, 5, 9, 2, 6}, opt, n);
  EXPECT_EQ(pool.counts().forwards, 1);
  for (auto& g : got) ASSERT_TRUE(g) << g.error().message;
  for (int i = 0; i < n; i++) EXPECT_EQ(got[std::size_t(i)]->get(), got[0]->get()) << i;  // one address
  EXPECT_EQ(got[0]->use_count(), n);  // held by the n requests alone: the pool kept no reference
}

TEST(InferencePool, TheBudgetCountsASharedAnswerOnceHoweverManyRequestsHoldIt) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  InferencePool pool({16, 20000}, &p);
  model::ForwardOptions opt;
  opt.record.pattern = true;
  const std::vector<int> text = {5, 1, 4, 1, 5, 9, 2, 6};
  EXPECT_EQ(pool.held_bytes(), 0u);
  std::size_t one = 0;
  {
    auto alone = pool.forward(text, opt);
    ASSERT_TRUE(alone) << alone.error().message;
    one = pool.held_bytes();
    // at least its logits (T, V) and its patterns (L, NH, T*(T+1)/2)
    const std::size_t T = text.size();
    EXPECT_GE(one, (T * p.config.vocab_size + std::size_t(p.config.n_layer * p.config.n_head) * T * (T + 1) / 2) *
                       sizeof(float));
  }
  EXPECT_EQ(pool.held_bytes(), 0u);  // let go: out of the budget
  const int n = 40;
  auto got = joined_forwards(pool, text, opt, n);
  for (auto& g : got) ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(pool.held_bytes(), one);  // forty holders, one answer's bytes (copies: forty times as many)
  ::testing::Test::RecordProperty("bytes_held_by_one_request", std::to_string(one));
  ::testing::Test::RecordProperty("bytes_held_by_40_joined", std::to_string(pool.held_bytes()));
  for (int i = 0; i < n - 1; i++) got[std::size_t(i)] = make_error(ErrorCode::unavailable, "let go");
  EXPECT_EQ(pool.held_bytes(), one);  // while any holder keeps it
  got.back() = make_error(ErrorCode::unavailable, "let go");
  EXPECT_EQ(pool.held_bytes(), 0u);
}

TEST(InferencePool, AnswersStillHeldCountInTheQueueBudget) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  model::ForwardOptions opt;
  opt.record.pattern = true;
  std::size_t answer_bytes = 0;  // what one answer of 4 tokens holds
  {
    InferencePool measure({16, 20000}, &p);
    auto a = measure.forward({1, 2, 3, 4}, opt);
    ASSERT_TRUE(a) << a.error().message;
    answer_bytes = measure.held_bytes();
  }
  InferencePoolOptions o;
  o.timeout_ms = 20000;
  o.max_queue_bytes = model::forward_bytes(p.config, 4, opt) + answer_bytes - 1;  // a run, or an answer: not both
  InferencePool pool(o, &p);
  auto kept = pool.forward({1, 2, 3, 4}, opt);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(pool.held_bytes(), answer_bytes);
  auto refused = pool.forward({1, 2, 3, 5}, opt);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::unavailable);
  EXPECT_NE(refused.error().message.find("still being read"), std::string::npos) << refused.error().message;
  kept = make_error(ErrorCode::unavailable, "let go");
  EXPECT_TRUE(pool.forward({1, 2, 3, 5}, opt));  // room again
}

TEST(InferencePool, AFullQueuesRefusalCountsTheAnswersStillHeld) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  model::ForwardOptions opt;
  opt.record.pattern = true;
  InferencePoolOptions o;
  o.max_queue = 1;
  o.timeout_ms = 20000;
  InferencePool pool(o, &p);
  InferencePool::ClientScope as("learner");
  auto kept = pool.forward({1, 2, 3, 4}, opt);  // an answer still being read
  ASSERT_TRUE(kept) << kept.error().message;
  ASSERT_GT(pool.held_bytes(), 0u);
  std::thread waiting;
  {
    HeldWorker held(pool);
    waiting = std::thread([&pool, &opt] {
      InferencePool::ClientScope me("learner");
      EXPECT_TRUE(pool.forward({1, 2, 3, 5}, opt));
    });
    while (pool.queued() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto refused = pool.forward({1, 2, 3, 6}, opt);  // the one place is taken, by this client
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, ErrorCode::unavailable);
    EXPECT_NE(refused.error().message.find("MB of work waiting, and answers still being read hold 1 MB"), std::string::npos)
        << refused.error().message;
    held.release();
    waiting.join();
  }
}

TEST(InferencePool, AnAnswerMayOutliveItsPool) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  Result<InferencePool::SharedOutput> kept = make_error(ErrorCode::internal, "not run");
  {
    InferencePool pool({16, 20000}, &p);
    kept = pool.forward({1, 2, 3}, model::ForwardOptions{});
  }
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ((*kept)->T, 3);
  kept = make_error(ErrorCode::unavailable, "let go");  // its deleter counts into the pool's shared tally
}

TEST(InferencePool, ForwardsOfOneTextAskingForDifferentRecordsAreNotMerged) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  InferencePool pool({16, 20000}, &p);
  model::ForwardOptions patterns, scores, stopped;
  patterns.record.pattern = true;
  scores.record.pattern = true;
  scores.record.scores = true;
  stopped.record.pattern = true;
  stopped.logits = false;
  stopped.stop_at_layer = 1;
  std::vector<model::ForwardOptions> asks = {patterns, scores, stopped};
  std::vector<Result<InferencePool::SharedOutput>> got(asks.size(), make_error(ErrorCode::unavailable, "not run"));
  {
    HeldWorker held(pool);
    std::vector<std::thread> clients;
    for (std::size_t i = 0; i < asks.size(); i++)
      clients.emplace_back([&, i] { got[i] = pool.forward({1, 2, 3}, asks[i]); });
    while (pool.queued() < int(asks.size())) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    held.release();
    for (auto& t : clients) t.join();
  }
  EXPECT_EQ(pool.counts().joined, 0);
  EXPECT_EQ(pool.counts().forwards, 3);
  for (auto& g : got) ASSERT_TRUE(g) << g.error().message;
  EXPECT_TRUE((*got[0])->record.scores.empty());
  EXPECT_FALSE((*got[1])->record.scores.empty());
  EXPECT_EQ((*got[2])->record.L, 1);
}

TEST(InferencePool, AJoinedRequestsJobRunsForItAfterTheFirstRequestGaveUp) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  InferencePool pool({16, 600}, &p);  // each request waits 600 ms
  model::ForwardOptions opt;
  opt.record.pattern = true;
  Result<InferencePool::SharedOutput> first = make_error(ErrorCode::internal, "not run"),
                                      joined = make_error(ErrorCode::internal, "not run");
  std::atomic<bool> first_done{false};
  {
    HeldWorker held(pool);
    std::thread a([&] {
      InferencePool::ClientScope as("gives up");
      first = pool.forward({7, 8, 9}, opt);
      first_done = true;
    });
    while (pool.queued() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::thread b([&] {
      InferencePool::ClientScope as("stays");
      InferencePool::RequestScope tagged("stays-1");
      joined = pool.forward({7, 8, 9}, opt);
    });
    while (pool.counts().joined < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    while (!first_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // its 600 ms passed
    EXPECT_EQ(pool.queued(), 1);  // the job waits on, now the other client's
    EXPECT_EQ(pool.place("stays-1").state, QueuePlace::State::waiting);
    held.release();
    a.join();
    b.join();
  }
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code, ErrorCode::unavailable);
  ASSERT_TRUE(joined) << joined.error().message;
  EXPECT_EQ(pool.counts().forwards, 1);
  model::ForwardOutput lone;
  model::Workspace ws;
  ASSERT_TRUE(model::forward(p, std::vector<int>{7, 8, 9}, opt, lone, ws));
  EXPECT_EQ((*joined)->record.pattern, lone.record.pattern);
}

TEST(InferencePool, AJobEveryRequestGaveUpOnFreesItsPlaceAndNeverRuns) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  std::atomic<bool> release{false}, started{false};  // outlive the pool: its worker reads them
  InferencePool pool({16, 100}, &p);
  // holds the worker (HeldWorker's run() would give up after the 100 ms it waits here)
  std::thread busy([&] {
    (void)pool.run<int>([&](model::Workspace&) -> Result<int> {
      started = true;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return 0;
    });
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; i++) clients.emplace_back([&] { EXPECT_FALSE(pool.forward({4, 4, 4}, model::ForwardOptions{})); });
  for (auto& t : clients) t.join();  // all three gave up after 100 ms
  EXPECT_EQ(pool.queued(), 0);
  release = true;
  busy.join();
  auto after = pool.run<int>([](model::Workspace&) -> Result<int> { return 3; });  // the worker moved on
  EXPECT_TRUE(after);
  EXPECT_EQ(pool.counts().forwards, 0);  // left the queue as its last request gave up
}

// Forty connections of one address (a class behind one NAT) asking the same all-heads run, and
// another client's run beside them, in a pool with room for two answers and two places: the
// forty make one job and share one answer (held once), and the other client is run too.
TEST(InferencePool, FortyRequestsOfOneAddressForOneRunShareItWithinTheBudgetAndAnotherClientIsServed) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  model::ForwardOptions opt;
  opt.record.pattern = true, opt.record.scores = true;  // every head's stages: the all-heads run
  const std::vector<int> text = {5, 1, 4, 1, 5, 9, 2, 6}, other_text = {3, 1, 4, 1, 5, 9, 2, 7};
  std::size_t answer_bytes = 0;
  {
    InferencePool measure({16, 20000}, &p);
    auto a = measure.forward(text, opt);
    ASSERT_TRUE(a) << a.error().message;
    answer_bytes = measure.held_bytes();
  }
  InferencePoolOptions o;
  o.max_queue = 2;
  o.timeout_ms = 20000;
  // two runs waiting, or two answers held: forty copies would not fit
  o.max_queue_bytes = 2 * std::max(model::forward_bytes(p.config, int(text.size()), opt), answer_bytes);
  InferencePool pool(o, &p);
  const int n = 40;
  std::vector<Result<InferencePool::SharedOutput>> got(n, make_error(ErrorCode::unavailable, "not run"));
  Result<InferencePool::SharedOutput> other = make_error(ErrorCode::unavailable, "not run");
  {
    HeldWorker held(pool);
    std::vector<std::thread> learners;
    for (int i = 0; i < n; i++)
      learners.emplace_back([&, i] {
        InferencePool::ClientScope as("192.0.2.7");
        got[std::size_t(i)] = pool.forward(text, opt);
      });
    while (pool.counts().joined < n - 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(pool.queued(), 1);  // one place for the forty
    std::thread another([&] {
      InferencePool::ClientScope as("198.51.100.9");
      other = pool.forward(other_text, opt);
    });
    while (pool.queued() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    held.release();
    for (auto& t : learners) t.join();
    another.join();
  }
  ASSERT_TRUE(other) << "the other client was starved: " << other.error().message;
  for (int i = 0; i < n; i++) {
    ASSERT_TRUE(got[std::size_t(i)]) << "learner " << i << ": " << got[std::size_t(i)].error().message;
    EXPECT_EQ(got[std::size_t(i)]->get(), got[0]->get()) << i;  // one answer, not forty copies
  }
  EXPECT_EQ(pool.counts().forwards, 2);
  EXPECT_EQ(pool.held_bytes(), answer_bytes + answer_bytes);  // the forty's once, the other's once
  EXPECT_LE(pool.held_bytes(), o.max_queue_bytes);
}

// ---- model time: turns by it, a budget of it per client -------------------------------------------

namespace {

// The pool's clock in these tests: it moves only when a test (or a job) advances it, and, once
// ticking, by tick_ms at each reading (the worker reads it as a batch starts and as it ends,
// so a batch then takes exactly one tick). It starts well past the clock's epoch.
struct FakeClock {
  std::atomic<long long> ms{1'000'000}, tick_ms{0};
  std::chrono::steady_clock::time_point read() {
    return std::chrono::steady_clock::time_point(std::chrono::milliseconds(ms.fetch_add(tick_ms.load())));
  }
  void advance_s(double s) { ms += static_cast<long long>(s * 1000); }
};

InferencePoolOptions on_clock(FakeClock& clock, double budget_s) {
  InferencePoolOptions o;
  o.max_queue = 16;
  o.timeout_ms = 20000;
  o.model_window_s = 60;
  o.client_model_seconds = budget_s;
  o.clock = [&clock] { return clock.read(); };
  return o;
}

// A run() job of `client` that takes `seconds` of the fake clock.
Result<int> run_for(InferencePool& pool, FakeClock& clock, const std::string& client, double seconds) {
  InferencePool::ClientScope as(client);
  return pool.run<int>([&clock, seconds](model::Workspace&) -> Result<int> {
    clock.advance_s(seconds);
    return 1;
  });
}

}  // namespace

TEST(InferencePool, AJobsModelTimeIsChargedToItsClientBeforeItsAnswer) {
  FakeClock clock;
  InferencePool pool(on_clock(clock, 0));
  ASSERT_TRUE(run_for(pool, clock, "researcher", 7.5));
  EXPECT_DOUBLE_EQ(pool.model_seconds("researcher"), 7.5);  // seen as soon as the answer is
  EXPECT_DOUBLE_EQ(pool.model_seconds("learner"), 0);
}

TEST(InferencePool, AHeavyClientsNextJobWaitsBehindALightClientsWaitingJob) {
  FakeClock clock;
  InferencePool pool(on_clock(clock, 0));  // no budget: the turns alone
  ASSERT_TRUE(run_for(pool, clock, "heavy", 5));  // a patching sweep's seconds
  std::mutex order_mutex;
  std::vector<std::string> order;
  auto job = [&](const std::string& who) {
    InferencePool::ClientScope as(who);
    InferencePool::RequestScope tagged(who);
    EXPECT_TRUE(pool.run<int>([&, who](model::Workspace&) -> Result<int> {
      std::lock_guard<std::mutex> lock(order_mutex);
      order.push_back(who);
      return 1;
    }));
  };
  {
    HeldWorker held(pool, "holder");
    std::thread heavy(job, "heavy");  // first in turn order
    while (pool.queued() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::thread light(job, "light");
    while (pool.queued() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(pool.place("light").ahead, 0);  // the page says so too
    EXPECT_EQ(pool.place("heavy").ahead, 1);
    held.release();
    heavy.join();
    light.join();
  }
  EXPECT_EQ(order, (std::vector<std::string>{"light", "heavy"}));
}

TEST(InferencePool, ALoneHeavyClientIsServedPastItsBudget) {
  FakeClock clock;
  InferencePool pool(on_clock(clock, 30));
  ASSERT_TRUE(run_for(pool, clock, "researcher", 100));  // far past 30 s a minute
  for (int i = 0; i < 3; i++) {
    auto r = run_for(pool, clock, "researcher", 5);
    EXPECT_TRUE(r) << r.error().message;  // nobody else waits: never refused
  }
  EXPECT_DOUBLE_EQ(pool.model_seconds("researcher"), 115);
}

TEST(InferencePool, AClientPastItsBudgetWhileOthersUseTheModelIsRateLimitedWithWhenItFitsAgain) {
  FakeClock clock;
  InferencePool pool(on_clock(clock, 30));
  ASSERT_TRUE(run_for(pool, clock, "heavy", 40));  // 40 s of the last 60: past 30
  HeldWorker held(pool, "learner 1");               // another client has the model now
  auto refused = run_for(pool, clock, "heavy", 1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::rate_limited);
  EXPECT_EQ(refused.error().retry_after_s, 60);  // its 40 s leave the window a minute after they were charged
  EXPECT_NE(refused.error().message.find("40.0 s of the last 60 s"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("Try again in 60 s"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("--client-model-seconds"), std::string::npos) << refused.error().message;
  // through the one error envelope: 429 with Retry-After
  HttpResponse http = error_response(refused.error());
  EXPECT_EQ(http.status, 429);
  ASSERT_FALSE(http.headers.empty());
  EXPECT_EQ(http.headers.back().first, "Retry-After");
  EXPECT_EQ(http.headers.back().second, "60");
  EXPECT_NE(http.body.find("\"rate_limited\""), std::string::npos);
  // another client is not refused
  Result<int> other = make_error(ErrorCode::internal, "not run");
  std::thread learner([&] { other = run_for(pool, clock, "learner 2", 0.03); });
  while (pool.queued() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  held.release();
  learner.join();
  EXPECT_TRUE(other) << other.error().message;
}

TEST(InferencePool, TheBudgetHoldsForAMinuteAfterAnotherClientsLastRunNotLonger) {
  FakeClock clock;
  InferencePool pool(on_clock(clock, 30));
  ASSERT_TRUE(run_for(pool, clock, "learner", 0.03));  // a learner's run, answered: nobody waits now
  ASSERT_TRUE(run_for(pool, clock, "heavy", 40));
  auto refused = run_for(pool, clock, "heavy", 1);  // the learner ran 40 s ago: the model is shared
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::rate_limited);
  EXPECT_EQ(refused.error().retry_after_s, 60);
  clock.advance_s(20);  // the learner's run is a minute old; the heavy client's 40 s are not
  EXPECT_DOUBLE_EQ(pool.model_seconds("heavy"), 40);
  auto alone = run_for(pool, clock, "heavy", 1);
  EXPECT_TRUE(alone) << alone.error().message;
}

TEST(InferencePool, AClientThatNeverPausesHasOnlyItsLastMinuteCounted) {
  FakeClock clock;
  InferencePool pool(on_clock(clock, 0));
  for (int i = 0; i < 240; i++) ASSERT_TRUE(run_for(pool, clock, "sweeper", 0.5));  // two minutes without a pause
  // the last minute (one second's charges leave together, at most a second late)
  EXPECT_GE(pool.model_seconds("sweeper"), 60);
  EXPECT_LE(pool.model_seconds("sweeper"), 61);
}

TEST(InferencePool, AClientsModelTimeLeavesTheWindowAndItIsServedAgain) {
  FakeClock clock;
  InferencePool pool(on_clock(clock, 30));
  ASSERT_TRUE(run_for(pool, clock, "heavy", 25));
  clock.advance_s(20);
  ASSERT_TRUE(run_for(pool, clock, "heavy", 10));  // 35 s in the window: 25 (charged at 25 s) and 10 (at 55 s)
  HeldWorker held(pool, "learner");
  auto refused = run_for(pool, clock, "heavy", 1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().retry_after_s, 30);  // when the 25 s leave, the 10 s left are under 30
  clock.advance_s(29);
  refused = run_for(pool, clock, "heavy", 1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().retry_after_s, 1);
  clock.advance_s(1);
  EXPECT_DOUBLE_EQ(pool.model_seconds("heavy"), 10);
  Result<int> again = make_error(ErrorCode::internal, "not run");
  std::thread heavy([&] { again = run_for(pool, clock, "heavy", 1); });  // queued beside the learner's run
  while (pool.queued() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  held.release();
  heavy.join();
  EXPECT_TRUE(again) << again.error().message;
}

TEST(InferencePool, ABatchsModelTimeIsSharedByItsForwardsRows) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  FakeClock clock;
  InferencePool pool(on_clock(clock, 0), &p);
  {
    HeldWorker held(pool);
    std::thread six([&] {
      InferencePool::ClientScope as("six rows");
      EXPECT_TRUE(pool.forward({1, 2, 3, 4, 5, 6}, model::ForwardOptions{}));
    });
    std::thread two([&] {
      InferencePool::ClientScope as("two rows");
      EXPECT_TRUE(pool.forward({7, 8}, model::ForwardOptions{}));
    });
    while (pool.queued() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    clock.tick_ms = 1000;  // from here each reading moves the clock: the batch takes 1 s
    held.release();
    six.join();
    two.join();
  }
  EXPECT_EQ(pool.counts().batches, 2);  // the held job, then the two forwards as one batch
  EXPECT_DOUBLE_EQ(pool.model_seconds("six rows"), 0.75);
  EXPECT_DOUBLE_EQ(pool.model_seconds("two rows"), 0.25);
}

TEST(InferencePool, AJoinedForwardsTimeIsChargedToItsJobsClient) {
  model::Parameters p = headlab::testing::load_fixture("gpt2_tiny", "model.safetensors");
  FakeClock clock;
  InferencePool pool(on_clock(clock, 0), &p);
  {
    HeldWorker held(pool);
    std::thread first([&] {
      InferencePool::ClientScope as("first");
      EXPECT_TRUE(pool.forward({1, 2, 3}, model::ForwardOptions{}));
    });
    while (pool.queued() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::thread joined([&] {
      InferencePool::ClientScope as("joined");
      EXPECT_TRUE(pool.forward({1, 2, 3}, model::ForwardOptions{}));
    });
    while (pool.counts().joined < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    clock.tick_ms = 1000;
    held.release();
    first.join();
    joined.join();
  }
  EXPECT_DOUBLE_EQ(pool.model_seconds("first"), 1);  // the job's client pays for the one run
  EXPECT_DOUBLE_EQ(pool.model_seconds("joined"), 0);
}
