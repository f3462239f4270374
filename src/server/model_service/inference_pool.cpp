// server/model_service/inference_pool.cpp — one worker thread, a queue per client taken in turns, the
// waiting forwards taken together as one batch, abandoned jobs skipped, and the greediest
// client's newest job given up when a fairer one arrives; each job's model time charged to
// its client, the turns taken by least recent model time, and a budget of it per client.
#include "server/model_service/inference_pool.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace headlab::server {
namespace {
thread_local std::string t_client;
thread_local std::string t_request;

// Forwards that can share a batch: what they record and return is the same, and nothing
// changes the run of one sequence alone (interventions, which model::forward_batch refuses;
// hooks and start residuals, which belong to one request).
bool batchable(const model::ForwardOptions& o) {
  return o.interventions.empty() && !(o.hooks && o.hooks->any()) && o.start_layer == 0;
}
// Every field of ForwardOptions but interventions, hooks and start_layer/start_resid(s) (which
// batchable() requires empty, null, 0): a field added to ForwardOptions must be added here.
bool same_batch(const model::ForwardOptions& a, const model::ForwardOptions& b) {
  const model::RecordRequest &x = a.record, &y = b.record;
  return batchable(a) && batchable(b) && x.pattern == y.pattern && x.scores == y.scores && x.qkv == y.qkv &&
         x.z == y.z && x.head_out == y.head_out && x.residual == y.residual && a.logits == b.logits &&
         a.loss == b.loss && a.logit_tokens == b.logit_tokens && a.stop_at_layer == b.stop_at_layer;
}

// What an output holds (its vectors' capacity): what its answer counts in the budget.
std::size_t output_bytes(const model::ForwardOutput& o) {
  const model::ActivationRecord& r = o.record;
  std::size_t floats = o.logits.capacity();
  for (const std::vector<float>* v : {&r.pattern, &r.scores, &r.qkv, &r.z, &r.head_out, &r.residual})
    floats += v->capacity();
  return floats * sizeof(float) + r.window.capacity() * sizeof(int);
}
}  // namespace

InferencePool::ClientScope::ClientScope(std::string client) : previous_(std::move(t_client)) {
  t_client = std::move(client);
}
InferencePool::ClientScope::~ClientScope() { t_client = std::move(previous_); }
const std::string& InferencePool::current_client() { return t_client; }

InferencePool::RequestScope::RequestScope(std::string request_id) : previous_(std::move(t_request)) {
  t_request = std::move(request_id);
}
InferencePool::RequestScope::~RequestScope() { t_request = std::move(previous_); }
const std::string& InferencePool::current_request() { return t_request; }

InferencePool::InferencePool(InferencePoolOptions options, const model::Parameters* params)
    : options_(options), params_(params) {
  worker_ = std::thread([this] { worker_loop(); });
}

InferencePool::~InferencePool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  worker_.join();
  for (auto& [client, jobs] : waiting_)
    for (auto& job : jobs) job->drop("The server is shutting down.");
}

int InferencePool::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_;
}

std::size_t InferencePool::held_bytes() const { return held_bytes_->load(); }

InferencePool::Counts InferencePool::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

InferencePool::TimePoint InferencePool::now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

double InferencePool::model_seconds(const std::string& client) const {
  const TimePoint t = now();
  std::lock_guard<std::mutex> lock(mutex_);
  return recent_seconds(client, t);
}

double InferencePool::recent_seconds(const std::string& client, TimePoint now) const {
  auto it = usage_.find(client);
  if (it == usage_.end()) return 0;
  const TimePoint since = now - std::chrono::seconds(options_.model_window_s);
  double s = 0;
  for (const Charge& c : it->second)
    if (c.at > since) s += c.seconds;
  return s;
}

void InferencePool::charge(const std::vector<std::shared_ptr<Job>>& batch, double seconds, TimePoint now) {
  if (batch.empty()) return;
  // a forward's share is its rows (the batch's matrix products are over all rows at once); a
  // run() job runs alone and takes it all
  auto rows = [](const Job& j) { return j.part ? std::max<double>(1, double(j.part->ids.size())) : 1.0; };
  double all = 0;
  for (const auto& j : batch) all += rows(*j);
  std::map<std::string, double> by_client;
  for (const auto& j : batch) by_client[j->client] += seconds * rows(*j) / all;
  for (const auto& [client, s] : by_client) {
    std::deque<Charge>& charges = usage_[client];
    // one second's charges as one, leaving the window with the latest: at most a second late,
    // never early (from the first, not the latest: a client that never pauses has its minute)
    if (!charges.empty() && now - charges.back().first < std::chrono::seconds(1)) {
      charges.back().seconds += s;
      charges.back().at = now;
    } else {
      charges.push_back(Charge{now, now, s});  // a charge of 0 s too: the client ran
    }
  }
  // what left the window is forgotten, and the clients left with nothing
  const TimePoint since = now - std::chrono::seconds(options_.model_window_s);
  for (auto it = usage_.begin(); it != usage_.end();) {
    while (!it->second.empty() && it->second.front().at <= since) it->second.pop_front();
    it = it->second.empty() ? usage_.erase(it) : std::next(it);
  }
}

std::optional<Error> InferencePool::over_budget(const std::string& client, TimePoint now) const {
  const double budget = options_.client_model_seconds;
  if (budget <= 0) return std::nullopt;
  const double used = recent_seconds(client, now);
  if (used < budget) return std::nullopt;
  // alone with the model (nobody else waits, runs, or ran within the window): never refused.
  // Not only "waits now": a learner's 30 ms run is usually over by the time the sweeping
  // client sends its next sweep, so the learners would seldom be seen.
  const TimePoint since = now - std::chrono::seconds(options_.model_window_s);
  const bool others =
      std::any_of(waiting_.begin(), waiting_.end(), [&](const auto& w) { return w.first != client; }) ||
      std::any_of(running_clients_.begin(), running_clients_.end(), [&](const std::string& c) { return c != client; }) ||
      std::any_of(usage_.begin(), usage_.end(),
                  [&](const auto& u) { return u.first != client && !u.second.empty() && u.second.back().at > since; });
  if (!others) return std::nullopt;
  // when enough of its charges have left the window for the rest to be under the budget
  double left = used;
  double wait_s = options_.model_window_s;
  for (const Charge& c : usage_.at(client)) {
    if (c.at <= since) continue;
    left -= c.seconds;
    if (left < budget) {
      wait_s = std::chrono::duration<double>(c.at + std::chrono::seconds(options_.model_window_s) - now).count();
      break;
    }
  }
  const int retry = std::max(1, static_cast<int>(std::ceil(wait_s)));
  char used_text[32], budget_text[32];
  std::snprintf(used_text, sizeof used_text, "%.1f", used);
  std::snprintf(budget_text, sizeof budget_text, "%g", budget);
  const std::string window = std::to_string(options_.model_window_s);
  return Error{ErrorCode::rate_limited,
               "This client has used the model for " + std::string(used_text) + " s of the last " + window +
                   " s, past its budget of " + budget_text + " s every " + window +
                   " s while other clients use the model too (heavy work such as patching sweeps and scans "
                   "counts by the time it takes). Try again in " +
                   std::to_string(retry) + " s, when part of that time has passed; whoever runs the server can "
                   "raise the budget with `headlab serve --client-model-seconds`.",
               retry};
}

void InferencePool::ForwardPart::set(Result<SharedOutput> a) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    answer = std::move(a);
  }
  answered.notify_all();
}

InferencePool::SharedOutput InferencePool::share(model::ForwardOutput out) const {
  const std::size_t bytes = output_bytes(out);
  held_bytes_->fetch_add(bytes);
  return SharedOutput(new model::ForwardOutput(std::move(out)),
                      [held = held_bytes_, bytes](const model::ForwardOutput* o) {
                        held->fetch_sub(bytes);
                        delete o;
                      });
}

std::shared_ptr<const void> InferencePool::hold(std::size_t bytes) const {
  held_bytes_->fetch_add(bytes);
  return std::shared_ptr<const void>(held_bytes_.get(), [held = held_bytes_, bytes](const void*) { held->fetch_sub(bytes); });
}

std::function<void()> InferencePool::answer(const std::shared_ptr<ForwardPart>& part, Status s,
                                            model::ForwardOutput out) const {
  Result<SharedOutput> a = s ? Result<SharedOutput>(share(std::move(out))) : tl::unexpected(s.error());
  return [part, a = std::move(a)]() mutable { part->set(std::move(a)); };
}

Result<InferencePool::SharedOutput> InferencePool::forward(std::vector<int> ids, const model::ForwardOptions& options) {
  if (!params_) return make_error(ErrorCode::unavailable, "This pool has no model to run.");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  const std::size_t bytes = model::forward_bytes(params_->config, static_cast<int>(ids.size()), options);
  // The size check comes first, joined or not: a request refused alone is refused beside a twin.
  if (bytes > options_.max_batch_bytes)
    return make_error(ErrorCode::too_long, "This request needs about " + std::to_string(bytes >> 20) +
                                               " MB to run, more than one run may take here (" +
                                               std::to_string(options_.max_batch_bytes >> 20) +
                                               " MB). Ask for fewer views or a shorter text.");
  auto job = std::make_shared<Job>();
  job->bytes = bytes;
  auto part = std::make_shared<ForwardPart>();
  part->ids = std::move(ids);
  part->options = options;
  job->part = part;
  job->drop = [part](const std::string& why) { part->set(tl::unexpected(Error{ErrorCode::unavailable, why})); };
  // Queued, or joined to an identical job waiting or running (found under the same lock as
  // the queueing: two twins arriving together make one job).
  std::shared_ptr<Job> joined;
  Waiter me;
  if (auto s = enqueue(job, &joined, &me); !s) return tl::unexpected(s.error());
  return wait_answer(joined ? joined : job, me, deadline);
}

std::shared_ptr<InferencePool::Job> InferencePool::find_same(const std::vector<int>& ids,
                                                            const model::ForwardOptions& options) {
  // joinable while some request still waits for it and it is not answered yet; a join
  // counts itself as a taker under the part's lock, so the job cannot be skipped meanwhile
  auto join = [&](const std::shared_ptr<Job>& j) {
    if (!j->part || j->part->ids != ids || !same_batch(j->part->options, options)) return false;
    std::lock_guard<std::mutex> lock(j->part->mutex);
    if (j->part->takers == 0 || j->part->answer.has_value()) return false;
    j->part->takers += 1;
    return true;
  };
  for (const auto& j : running_jobs_)
    if (join(j)) return j;
  for (const auto& [client, jobs] : waiting_)
    for (const auto& j : jobs)
      if (join(j)) return j;
  return nullptr;
}

Result<InferencePool::SharedOutput> InferencePool::wait_answer(const std::shared_ptr<Job>& job, const Waiter& me,
                                                               std::chrono::steady_clock::time_point deadline) {
  ForwardPart& part = *job->part;
  {
    std::unique_lock<std::mutex> lock(part.mutex);
    if (part.answered.wait_until(lock, deadline, [&] { return part.answer.has_value(); })) {
      // every request holds the one output; the last to take it takes the part's reference
      // too, so that the output's bytes leave the budget when the requests let it go
      if (--part.takers == 0) return std::move(*part.answer);
      return *part.answer;
    }
    part.takers -= 1;  // at 0 the worker skips the job (skipped())
  }
  leave(job, me);
  return tl::unexpected(busy_error());
}
Error InferencePool::busy_error() const {
  return Error{ErrorCode::unavailable, "The model is busy: the answer took longer than " +
                                           std::to_string(options_.timeout_ms / 1000) +
                                           " s. Try again in a moment, or with a shorter text."};
}

Error InferencePool::gave_up(Job& job) {
  job.abandoned = true;
  return busy_error();
}

bool InferencePool::skipped(const Job& job) const {
  if (!job.part) return job.abandoned;
  std::lock_guard<std::mutex> lock(job.part->mutex);
  return job.part->takers == 0;
}

void InferencePool::leave(const std::shared_ptr<Job>& job, const Waiter& me) {
  std::shared_ptr<Job> unwanted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(job->waiters, [&](const Waiter& w) { return w.serial == me.serial; });
    if (auto r = running_.find(me.request_id); !me.request_id.empty() && r != running_.end() &&
                                               std::find(running_jobs_.begin(), running_jobs_.end(), job) != running_jobs_.end())
      running_.erase(r);
    auto mine = waiting_.find(job->client);
    const bool waiting = mine != waiting_.end() && std::find(mine->second.begin(), mine->second.end(), job) != mine->second.end();
    if (!waiting) return;  // running or done: it finishes for those still waiting
    if (job->waiters.empty()) {
      // nobody waits for it: its place and bytes are free at once, it never runs
      remove_waiting(job);
      unwanted = job;
    } else if (std::none_of(job->waiters.begin(), job->waiters.end(),
                            [&](const Waiter& w) { return w.client == job->client; })) {
      // its client left, others still wait: the job is the next waiting client's now, at the
      // place its arrival gives it among that client's jobs
      const std::string to = job->waiters.front().client;
      auto& from = mine->second;
      from.erase(std::find(from.begin(), from.end(), job));
      if (from.empty()) {
        std::erase(turns_, job->client);
        waiting_.erase(mine);
      }
      auto& theirs = waiting_[to];
      if (theirs.empty()) turns_.push_back(to);
      auto at = std::find_if(theirs.begin(), theirs.end(),
                             [&](const std::shared_ptr<Job>& j) { return j->serial > job->serial; });
      theirs.insert(at, job);
      job->client = to;
      job->request_id = job->waiters.front().request_id;
    }
  }
  if (unwanted) unwanted->drop("The request gave up waiting.");
}

Status InferencePool::enqueue(std::shared_ptr<Job> job, std::shared_ptr<Job>* joined, Waiter* me) {
  std::vector<std::shared_ptr<Job>> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return make_error(ErrorCode::unavailable, "The server is shutting down.");
    if (job->part) {
      job->serial = ++serial_;
      job->waiters.push_back(Waiter{job->client, job->request_id, job->serial});
      *me = job->waiters.front();
      if (std::shared_ptr<Job> same = find_same(job->part->ids, job->part->options)) {  // counted as a taker
        // no queue place, no bytes: the job holds them already; its place is this one's
        same->waiters.push_back(job->waiters.front());
        counts_.joined += 1;
        const bool running = std::find(running_jobs_.begin(), running_jobs_.end(), same) != running_jobs_.end();
        if (running && !job->request_id.empty()) running_.insert(job->request_id);
        *joined = std::move(same);
        return {};
      }
    }
    // model time: a client past its budget while others use the model gives them room (a job
    // joined above takes none, so it is not refused)
    if (std::optional<Error> e = over_budget(job->client, now())) return tl::unexpected(std::move(*e));
    // the answers still held count in the budget (each once) but no place given up frees them:
    // when they alone leave no room, the job is refused before any other is given up
    const std::size_t held = held_bytes_->load();
    if (held > 0 && held + job->bytes > options_.max_queue_bytes)
      return make_error(ErrorCode::unavailable, "The model is busy: its answers still being read hold " +
                                                    std::to_string((held + (std::size_t(1) << 20) - 1) >> 20) +
                                                    " MB; try again in a moment.");
    auto full = [&] {
      return queued_ >= options_.max_queue || queued_bytes_ + held + job->bytes > options_.max_queue_bytes;
    };
    while (full()) {
      // Full: the client with the most waiting jobs gives up its newest one, unless that
      // client is this one (or as greedy): then this job is refused.
      auto greediest = waiting_.end();
      for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
        if (greediest == waiting_.end() || it->second.size() > greediest->second.size()) greediest = it;
      auto mine = waiting_.find(job->client);
      std::size_t my_count = mine == waiting_.end() ? 0 : mine->second.size();
      if (greediest == waiting_.end() || greediest->second.size() <= my_count + 1) {
        // the places given up stay given up: their requests are answered below
        for (auto& e : evicted) e->drop("The model is busy, and this client already has more requests waiting "
                                        "than any other; try again in a moment.");
        evicted.clear();
        const auto mb = [](std::size_t b) { return std::to_string((b + (std::size_t(1) << 20) - 1) >> 20); };
        return make_error(ErrorCode::unavailable,
                          "The model is busy with " + std::to_string(queued_) + " requests already (" + mb(queued_bytes_) +
                              " MB of work waiting" +
                              (held > 0 ? ", and answers still being read hold " + mb(held) + " MB" : std::string()) +
                              "); try again in a moment.");
      }
      // its newest job that serves no other client (a shared job is kept for the others)
      auto own = [&](const std::shared_ptr<Job>& j) {
        return std::all_of(j->waiters.begin(), j->waiters.end(), [&](const Waiter& w) { return w.client == j->client; });
      };
      auto newest_own = std::find_if(greediest->second.rbegin(), greediest->second.rend(), own);
      if (newest_own == greediest->second.rend()) {
        for (auto& e : evicted) e->drop("The model is busy, and this client already has more requests waiting "
                                        "than any other; try again in a moment.");
        evicted.clear();
        return make_error(ErrorCode::unavailable, "The model is busy with " + std::to_string(queued_) +
                                                      " requests already; try again in a moment.");
      }
      std::shared_ptr<Job> newest = *newest_own;
      remove_waiting(newest);
      evicted.push_back(std::move(newest));
    }
    auto& mine = waiting_[job->client];
    if (mine.empty()) turns_.push_back(job->client);
    queued_bytes_ += job->bytes;
    mine.push_back(std::move(job));
    ++queued_;
  }
  for (auto& e : evicted)
    e->drop("The model is busy, and this client already has more requests waiting than any other; "
            "try again in a moment.");
  ready_.notify_one();
  return {};
}

void InferencePool::remove_waiting(const std::shared_ptr<Job>& job) {
  auto it = waiting_.find(job->client);
  if (it == waiting_.end()) return;
  auto& jobs = it->second;
  auto at = std::find(jobs.begin(), jobs.end(), job);
  if (at == jobs.end()) return;
  jobs.erase(at);
  --queued_;
  queued_bytes_ -= job->bytes;
  if (jobs.empty()) {
    std::erase(turns_, it->first);
    waiting_.erase(it);
  }
}

std::shared_ptr<InferencePool::Job> InferencePool::take_next(TimePoint now) {
  auto lightest = turns_.begin();
  double least = recent_seconds(*lightest, now);
  for (auto t = std::next(turns_.begin()); t != turns_.end(); ++t)
    if (const double s = recent_seconds(*t, now); s < least) {
      least = s;
      lightest = t;
    }
  std::string client = std::move(*lightest);
  turns_.erase(lightest);
  auto it = waiting_.find(client);
  std::shared_ptr<Job> job = std::move(it->second.front());
  it->second.pop_front();
  --queued_;
  queued_bytes_ -= job->bytes;
  if (it->second.empty()) waiting_.erase(it);
  else turns_.push_back(std::move(client));  // its next job waits for the others' turns
  return job;
}

std::vector<std::shared_ptr<InferencePool::Job>> InferencePool::take_order(TimePoint now) const {
  // the clients by recent model time, ties in turn order (as take_next picks them)
  std::vector<std::pair<double, const std::string*>> clients;
  for (const std::string& client : turns_) clients.emplace_back(recent_seconds(client, now), &client);
  std::stable_sort(clients.begin(), clients.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::shared_ptr<Job>> order;
  order.reserve(std::size_t(queued_));
  for (std::size_t round = 0; order.size() < std::size_t(queued_); round++)
    for (const auto& [seconds, name] : clients) {
      const std::string& client = *name;
      const auto& jobs = waiting_.at(client);
      if (round < jobs.size()) order.push_back(jobs[round]);
    }
  return order;
}

void InferencePool::follow(const std::string& request_id, const std::string& lead_id) {
  if (request_id.empty() || lead_id.empty() || request_id == lead_id) return;
  std::lock_guard<std::mutex> lock(mutex_);
  follows_[request_id] = lead_id;
}

void InferencePool::unfollow(const std::string& request_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  follows_.erase(request_id);
}

QueuePlace InferencePool::place(const std::string& asked_id) const {
  QueuePlace p;
  if (asked_id.empty()) return p;
  const TimePoint t = now();
  std::lock_guard<std::mutex> lock(mutex_);
  auto follows = follows_.find(asked_id);
  const std::string& request_id = follows == follows_.end() ? asked_id : follows->second;
  p.waiting = queued_;
  if (running_.count(request_id)) {
    p.state = QueuePlace::State::running;
    return p;
  }
  const auto order = take_order(t);
  auto has = [&](const Job& j) {
    if (j.request_id == request_id) return true;
    return std::any_of(j.waiters.begin(), j.waiters.end(), [&](const Waiter& w) { return w.request_id == request_id; });
  };
  for (std::size_t i = 0; i < order.size(); i++)
    if (has(*order[i])) {
      p.state = QueuePlace::State::waiting;
      p.ahead = static_cast<int>(i);
      return p;
    }
  return p;
}

std::vector<std::shared_ptr<InferencePool::Job>> InferencePool::fill_batch(const std::shared_ptr<Job>& first,
                                                                          TimePoint now) {
  std::vector<std::shared_ptr<Job>> batch{first};
  if (!first->part || !batchable(first->part->options)) return batch;
  long long rows = static_cast<long long>(first->part->ids.size());
  std::size_t bytes = first->bytes;
  long long max_rows = options_.max_batch_tokens;
  if (options_.batch_target_ms > 0 && seconds_per_row_ > 0)
    max_rows = std::min(max_rows, static_cast<long long>(options_.batch_target_ms / 1000.0 / seconds_per_row_));
  for (const std::shared_ptr<Job>& j : take_order(now)) {
    if (!j->part || !same_batch(j->part->options, first->part->options)) continue;
    const long long r = static_cast<long long>(j->part->ids.size());
    if (rows + r > max_rows || bytes + j->bytes > options_.max_batch_bytes) continue;
    rows += r;
    bytes += j->bytes;
    remove_waiting(j);
    batch.push_back(j);
  }
  return batch;
}

std::vector<std::function<void()>> InferencePool::run_batch(std::vector<std::shared_ptr<Job>>& batch) {
  // the requests that gave up while waiting are answered, not run
  std::erase_if(batch, [this](const std::shared_ptr<Job>& j) {
    if (!skipped(*j)) return false;
    j->drop("The request gave up waiting.");
    return true;
  });
  std::vector<std::function<void()>> answers;
  if (batch.empty()) return answers;
  if (!batch[0]->part) {
    batch[0]->work(workspace_);
    answers.push_back(batch[0]->deliver);
    return answers;
  }
  const model::ForwardOptions& options = batch[0]->part->options;
  // the seconds per token of this batch, for the size of the next (fill_batch)
  const auto start = std::chrono::steady_clock::now();
  std::size_t rows = 0;
  for (const auto& j : batch) rows += j->part->ids.size();
  struct Measure {
    InferencePool& pool;
    std::chrono::steady_clock::time_point start;
    std::size_t rows;
    ~Measure() {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / double(rows);
      std::lock_guard<std::mutex> lock(pool.mutex_);
      pool.seconds_per_row_ = pool.seconds_per_row_ > 0 ? 0.5 * pool.seconds_per_row_ + 0.5 * s : s;
    }
  } measure{*this, start, std::max<std::size_t>(rows, 1)};
  if (batch.size() == 1) {
    model::ForwardOutput out;
    Status s = model::forward(*params_, batch[0]->part->ids, options, out, workspace_);
    answers.push_back(answer(batch[0]->part, s, std::move(out)));
    return answers;
  }
  std::vector<std::span<const int>> seqs;
  for (const auto& j : batch) seqs.emplace_back(j->part->ids);
  std::vector<model::ForwardOutput> outs;
  if (Status s = model::forward_batch(*params_, seqs, options, outs, workspace_); !s) {
    // one sequence's error (each was checked before it queued, so rare): each runs alone,
    // so that only the faulty one hears of it
    for (auto& j : batch) {
      model::ForwardOutput out;
      Status one = model::forward(*params_, j->part->ids, options, out, workspace_);
      answers.push_back(answer(j->part, one, std::move(out)));
    }
    return answers;
  }
  for (std::size_t i = 0; i < batch.size(); i++) answers.push_back(answer(batch[i]->part, {}, std::move(outs[i])));
  return answers;
}

void InferencePool::worker_loop() {
  for (;;) {
    std::vector<std::shared_ptr<Job>> batch;
    TimePoint start;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || queued_ > 0; });
      if (stopping_) return;
      start = now();
      batch = fill_batch(take_next(start), start);
      for (const auto& j : batch) {
        running_clients_.push_back(j->client);
        if (j->part) {
          running_jobs_.push_back(j);  // identical forwards join it until it is answered
          for (const Waiter& w : j->waiters)
            if (!w.request_id.empty()) running_.insert(w.request_id);
        } else if (!j->request_id.empty()) {
          running_.insert(j->request_id);
        }
      }
      counts_.batches += 1;
      for (const auto& j : batch) counts_.forwards += j->part ? 1 : 0;
    }
    std::vector<std::function<void()>> answers = run_batch(batch);
    // its time charged, and its requests no longer running (place()), before they hear their
    // answers: a client's next request sees both
    const TimePoint end = now();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      charge(batch, std::chrono::duration<double>(end - start).count(), end);
      running_.clear();
      running_jobs_.clear();
      running_clients_.clear();
    }
    for (auto& a : answers) a();
  }
}

}  // namespace headlab::server
