// server/model_service/inference_pool.h — a bounded pool for model work. One worker (the engine already
// uses both cores through its thread pool), a queue bounded by the memory its jobs will need
// and by a deadline, and batches: the plain forwards waiting when the worker becomes free
// (forward(): no interventions nor hooks, the same record asked for) run as the rows of one
// model::forward_batch, so the weights are read once for all of them, each getting its own
// answer. A job still waiting when its request gives up is skipped, never run for nobody.
// Identical forwards are computed once: a forward() whose ids and options equal those of a
// forward waiting or running (the same ids, and every field of ForwardOptions equal by
// same_batch, none of interventions, hooks, start_layer) joins that job instead of queueing its
// own. It takes no queue place and no bytes of the budget (the job already holds them), waits
// at the job's place (place() reports the job's), keeps its own deadline, and gets the same
// answer: one output, shared (forward() returns a SharedOutput to it; no request gets a copy).
// The job runs while any of its requests still waits: one giving up does not cancel it for
// the others. A job is its first request's client's; when that client gives up while others
// still wait, the job moves to the next waiting request's client, so a request that keeps a
// job alive pays for it in its own client's turns and queue share. A job shared by several
// clients is not the one given up to make room for a fairer client (its client's newest
// unshared job is, or none).
// Fair between clients, by model time and by places. Each job's time on the worker is charged
// to its client (the job's owner above) as it ends, before its requests are answered: a
// batch's time is shared among its forwards in proportion to their rows (tokens), a run()
// job has the worker alone. A client's recent model time is what it was charged in the last
// model_window_s seconds (a sliding window: a charge counts fully until it is that old).
// When the worker becomes free it takes the waiting client with the least recent model time
// (ties: turn by turn, round-robin), so a client sending seconds-long sweeps waits behind a
// learner's 30 ms forward instead of alternating with it; a lone client is taken at once. A
// batch is then filled in that order too. And a budget: while others use the model too
// (another client has a job waiting or running, or was charged within the window), a new job
// of a client whose recent model time is client_model_seconds or more is refused rate_limited
// (429), its retry_after_s the seconds until enough of that time leaves the window. A client
// alone with the model is never refused; a forward that joins an identical one takes no
// model time and is not refused.
// When the queue is full a job from a client with fewer waiting jobs than the greediest one
// takes the greediest client's newest place (that job answers 503), so many connections of
// one client cannot lock another out.
// The memory budget (max_queue_bytes) counts what the waiting forwards will need and the
// answers their requests still hold: an answer's bytes count once, however many requests
// share it, from the moment it is answered until its last holder lets it go (held_bytes()).
// No place given up frees an answer's bytes: when the answers held leave no room for a
// forward, it is refused (503) and no other job gives up its place for it.
//
//   InferencePool pool({.max_queue = 64, .timeout_ms = 30000}, &params);
//   InferencePool::ClientScope as("192.0.2.7");   // whose requests this thread runs
//   InferencePool::RequestScope id("3f9a…");       // the id its position is asked by
//   Result<InferencePool::SharedOutput> out = pool.forward(ids, options);  // may share a batch
//   report((*out)->record);   // read it, then let it go: its bytes leave the budget
//   Result<Answer> a = pool.run<Answer>([&](model::Workspace& ws) { return work(ws); });
//   pool.place("3f9a…");   // {waiting, ahead = 3}: the page shows "3 ahead of you"
//   // unavailable when the queue is full or the deadline passed: the route answers 503;
//   // rate_limited past the client's model-time budget while others use the model: 429 + Retry-After
//   pool.model_seconds("192.0.2.7");   // 41.5: its model time in the last 60 s
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "model/forward.h"
#include "util/result.h"

namespace headlab::server {

struct InferencePoolOptions {
  int max_queue = 64;        // jobs waiting beyond the running batch (the model lane's threads hold them)
  int timeout_ms = 30000;    // how long a request waits for its answer: the queue's deadline
  // What the waiting forwards will need once run (their records, activations and logits,
  // model::forward_bytes) and the answers still held (each once, however many requests share
  // it); a forward past it answers 503 unless a greedier client gives way.
  std::size_t max_queue_bytes = std::size_t(2) << 30;
  // One batched forward: at most this many rows (tokens of all its sequences) and bytes.
  int max_batch_tokens = 4096;
  std::size_t max_batch_bytes = std::size_t(1) << 30;
  // A batch is cut to the tokens the last forwards ran in this time (their seconds per
  // token, measured): a batch of forty long texts would otherwise finish past the deadline
  // of all forty at once, where smaller batches answer most of them in time. 0: no cut.
  int batch_target_ms = 3000;
  // Model time: the seconds a client was charged in the last model_window_s seconds are its
  // recent model time, which orders the turns. client_model_seconds is its budget in that
  // window while others use the model too (another client's job waits or runs, or was
  // charged within the window): past it a new job is refused rate_limited with Retry-After.
  // 0: no budget (the turns still go by model time).
  int model_window_s = 60;
  double client_model_seconds = 30;
  // The clock model time is read on; null: std::chrono::steady_clock::now. Tests inject one:
  // the worker reads it once as it takes a batch and once as the batch ends, and charges the
  // difference; a request reads it once as it queues (the budget), place() once.
  std::function<std::chrono::steady_clock::time_point()> clock = nullptr;
};

// Where a request is (place()): waiting with `ahead` jobs to be taken before it, running, or
// unknown (answered, refused, or never seen).
struct QueuePlace {
  enum class State { unknown, waiting, running } state = State::unknown;
  int ahead = 0;    // waiting jobs taken before it (some may run in its batch)
  int waiting = 0;  // jobs waiting in all
};

class InferencePool {
 public:
  // `params`: the model forward() runs (null: only run() jobs).
  explicit InferencePool(InferencePoolOptions options, const model::Parameters* params = nullptr);
  ~InferencePool();  // finishes the running job, drops the waiting ones

  // Runs fn(workspace) on the worker, alone, and waits for its Result. Errors: fn's;
  // unavailable (queue full, deadline passed); rate_limited (past the client's model-time
  // budget while others use the model, with retry_after_s).
  template <class T>
  Result<T> run(std::function<Result<T>(model::Workspace&)> fn) {
    auto promise = std::make_shared<std::promise<Result<T>>>();
    auto future = promise->get_future();
    auto job = std::make_shared<Job>();
    // computed, then given once its model time is charged (the request's next one sees it)
    auto result = std::make_shared<std::optional<Result<T>>>();
    job->work = [result, fn](model::Workspace& ws) { result->emplace(fn(ws)); };
    job->deliver = [promise, result] { promise->set_value(std::move(**result)); };
    job->drop = [promise](const std::string& why) {
      promise->set_value(tl::unexpected(Error{ErrorCode::unavailable, why}));
    };
    if (auto s = enqueue(job); !s) return tl::unexpected(s.error());
    if (future.wait_for(std::chrono::milliseconds(options_.timeout_ms)) != std::future_status::ready)
      return tl::unexpected(gave_up(*job));
    return future.get();
  }

  // An answer of forward(): one output, shared by every request that joined its job. Its bytes
  // count in the budget while any holder keeps it (it may outlive the pool).
  using SharedOutput = std::shared_ptr<const model::ForwardOutput>;

  // model::forward(params, ids, options) on the worker, in one batch with the other waiting
  // forwards of the same options when it has none of interventions, hooks or start_layer
  // (model::forward_batch). Errors: the forward's; unavailable (queue full, deadline passed);
  // rate_limited (past the client's model-time budget while others use the model, with retry_after_s).
  Result<SharedOutput> forward(std::vector<int> ids, const model::ForwardOptions& options);

  int queued() const;
  // The bytes of the answers still held by their requests, each answer once (in the budget),
  // and of what requests made from them and still hold (hold()).
  std::size_t held_bytes() const;
  // Counts `bytes` in held_bytes() until the returned token is let go: what a request keeps
  // from its answer while it makes its reply (a run's report: its views and logits, until
  // encoded), so forty distinct runs of one batch reporting at once count in the budget.
  std::shared_ptr<const void> hold(std::size_t bytes) const;
  QueuePlace place(const std::string& request_id) const;
  // A request answered by another's computation (the response cache's followers) is where
  // that one is: place(request_id) reports lead_id's place until unfollow(request_id).
  void follow(const std::string& request_id, const std::string& lead_id);
  void unfollow(const std::string& request_id);
  // How many forwards ran, and in how many batches (a batch of one counts).
  // `joined`: forwards that joined an identical waiting or running one (not counted in forwards).
  struct Counts {
    long long forwards = 0, batches = 0, joined = 0;
  };
  Counts counts() const;
  // `client`'s recent model time: the seconds its jobs took on the worker in the last
  // model_window_s seconds (a batch's shared by rows).
  double model_seconds(const std::string& client) const;

  // Tags the model requests made on this thread with a client (the HTTP layer sets the
  // remote address) for as long as the scope lives. Untagged requests share one client "".
  class ClientScope {
   public:
    explicit ClientScope(std::string client);
    ~ClientScope();
    ClientScope(const ClientScope&) = delete;
    ClientScope& operator=(const ClientScope&) = delete;

   private:
    std::string previous_;
  };
  static const std::string& current_client();
  // Tags them with the id place() finds them by (the run route's ?request_id=); "": none.
  class RequestScope {
   public:
    explicit RequestScope(std::string request_id);
    ~RequestScope();
    RequestScope(const RequestScope&) = delete;
    RequestScope& operator=(const RequestScope&) = delete;

   private:
    std::string previous_;
  };
  static const std::string& current_request();

 private:
  // A forward that may share a batch, and the requests waiting for its answer.
  struct ForwardPart {
    std::vector<int> ids;
    model::ForwardOptions options;
    std::mutex mutex;  // guards answer and takers (taken after the pool's mutex_, never before)
    std::condition_variable answered;
    std::optional<Result<SharedOutput>> answer;  // the last taker takes the part's reference
    int takers = 1;  // requests still to take the answer; 0: nobody waits, the job is skipped
    void set(Result<SharedOutput> a);
  };
  // One request waiting on a job (its first, or one that joined it).
  struct Waiter {
    std::string client, request_id;
    long long serial = 0;  // tells two waiters of one client apart
  };
  struct Job {
    std::string client = current_client();
    std::string request_id = current_request();
    long long serial = 0;                              // order of arrival (a moved job keeps its place by it)
    std::size_t bytes = 0;                             // what it will need once run
    std::function<void(model::Workspace&)> work;       // a run() job: computes its result
    std::function<void()> deliver;                     // and gives it to its request (after the charge)
    std::shared_ptr<ForwardPart> part;                 // or a forward() job
    std::vector<Waiter> waiters;                       // a forward's requests still waiting (mutex_)
    std::function<void(const std::string& why)> drop;  // answers unavailable, with why
    std::atomic<bool> abandoned{false};                // a run() job's request gave up
  };
  // Queues `job`; a forward identical to one waiting or running joins that one instead
  // (*joined is set to it, the job is dropped unqueued). `joined` and `me` are needed for a
  // forward: *me is its request's Waiter, copied under the lock (a job's waiters vector grows
  // as others join it, so a reference into it would not outlive the lock).
  Status enqueue(std::shared_ptr<Job> job, std::shared_ptr<Job>* joined = nullptr, Waiter* me = nullptr);
  Error gave_up(Job& job);  // the deadline passed: if it has not started, it never will
  Error busy_error() const;
  // A forward's output as the one answer its requests share, its bytes in held_bytes_ until
  // the last holder lets it go.
  SharedOutput share(model::ForwardOutput out) const;
  // What gives `part` its answer, the output or s's error (called once its time is charged).
  std::function<void()> answer(const std::shared_ptr<ForwardPart>& part, Status s, model::ForwardOutput out) const;
  // The waiting or running forward job identical to (ids, options) that a request can still
  // join, or null; mutex_ held.
  // It counts the request as one of the job's takers.
  std::shared_ptr<Job> find_same(const std::vector<int>& ids, const model::ForwardOptions& options);
  // A forward's request waits for its job's answer until its deadline; on giving up it leaves
  // the job (moved to another client's turns when it was the job's client). Waiter `me`.
  Result<SharedOutput> wait_answer(const std::shared_ptr<Job>& job, const Waiter& me,
                                   std::chrono::steady_clock::time_point deadline);
  void leave(const std::shared_ptr<Job>& job, const Waiter& me);  // takes mutex_
  bool skipped(const Job& job) const;  // nobody waits for it any more
  using TimePoint = std::chrono::steady_clock::time_point;
  TimePoint now() const;  // options_.clock, or the steady clock
  // The waiting client with the least recent model time at `now` (ties: the first in turns_)
  // gives its oldest job; call with mutex_ held.
  std::shared_ptr<Job> take_next(TimePoint now);
  // The waiting jobs in the order they would be taken if no client's model time changed: turn
  // by turn, each turn's clients least recent model time first; call with mutex_ held.
  std::vector<std::shared_ptr<Job>> take_order(TimePoint now) const;
  // Takes the waiting forwards that can join `first`'s batch, in take order; mutex_ held.
  std::vector<std::shared_ptr<Job>> fill_batch(const std::shared_ptr<Job>& first, TimePoint now);
  void remove_waiting(const std::shared_ptr<Job>& job);  // mutex_ held
  // Runs the batch (the jobs nobody waits for any more are dropped from it, answered, not
  // run) and returns what answers its requests, to be called once its time is charged.
  std::vector<std::function<void()>> run_batch(std::vector<std::shared_ptr<Job>>& batch);
  // Model time, mutex_ held: `seconds` of the worker shared among `batch`'s jobs by their rows
  // (a run() job alone has them all), each charged to its client at `now`.
  void charge(const std::vector<std::shared_ptr<Job>>& batch, double seconds, TimePoint now);
  double recent_seconds(const std::string& client, TimePoint now) const;  // mutex_ held
  // The rate_limited error of a client past its budget while others use the model (a job of
  // another client waits or runs, or was charged within the window), or none; mutex_ held.
  std::optional<Error> over_budget(const std::string& client, TimePoint now) const;
  void worker_loop();

  InferencePoolOptions options_;
  const model::Parameters* params_ = nullptr;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::map<std::string, std::deque<std::shared_ptr<Job>>> waiting_;  // by client, oldest first
  std::deque<std::string> turns_;  // clients with waiting jobs, whose turn is next first
  int queued_ = 0;                 // jobs in waiting_
  std::size_t queued_bytes_ = 0;   // their bytes
  // the bytes of the answers still held; shared with the answers' deleters (they may outlive the pool)
  std::shared_ptr<std::atomic<std::size_t>> held_bytes_ = std::make_shared<std::atomic<std::size_t>>(0);
  std::multiset<std::string> running_;  // request ids of the running batch
  std::vector<std::shared_ptr<Job>> running_jobs_;  // the running batch's forwards (joinable until answered)
  std::vector<std::string> running_clients_;        // the running batch's clients (the budget's "others")
  // Each client's charges of model time, oldest first; the charges of one second (from the
  // first) are kept as one, at the latest's time, so a client holds at most model_window_s + 1
  // of them. A client whose charges all left the window is forgotten.
  struct Charge {
    TimePoint first, at;  // its first charge (its second starts there), its latest
    double seconds = 0;
  };
  std::map<std::string, std::deque<Charge>> usage_;
  long long serial_ = 0;
  std::map<std::string, std::string> follows_;  // request id -> the id of the request it follows
  Counts counts_;
  double seconds_per_row_ = 0;  // of the forwards run so far (a moving average); 0: none yet
  bool stopping_ = false;
  model::Workspace workspace_;
  std::thread worker_;
};

}  // namespace headlab::server
