// server/api/learner_clients.h — whose model time a request spends: the inference pool's client
// (InferencePool::ClientScope) is the remote address, or address + learner for a learner who
// really joined a class, so forty learners behind one school NAT address get forty turns and
// forty budgets instead of sharing one (issue 25).
//
//   LearnerClients learners([&](const std::string& id) { return class_code_of(id); });
//   std::string client = learners.client("192.0.2.7", header "X-Headlab-Learner");
//   InferencePool::ClientScope as(client);   // "192.0.2.7" or "192.0.2.7 learner 3f0c…"
//   learners.forget("3f0c…");                 // it left or joined: ask the store again
//   learners.forget_all();                    // a teacher removed a learner, or deleted a class
//
// Contracts:
// - A learner id is anyone's to invent, so only an id the store says is a class member gets a
//   key of its own; any other id (made up, malformed, removed, banned, in no class, or the
//   store failing) keeps the address's key and so shares the address's budget and turns.
// - The store's answer (member of class C, or not) is kept for verified_for_s, so a model
//   request asks the database at most once a minute per learner id. Call client() off the
//   HTTP event loop (the model lane): a first sight of an id is a database read.
// - At most max_learners_per_address learner keys per address are live (seen within window_s);
//   past that a member's request keeps the address key. Remaining risk: one address that
//   joins many made-up learners (up to 120 joins a minute from an address, 60 per class)
//   multiplies its share by as many keys, up to that bound; the teacher sees them in the view
//   and can remove them (their keys then go at once on this server, within verified_for_s
//   on another server sharing the database).
// - Bounded: at most max_cached verifications are kept; past it, expired ones are dropped, and
//   if none has expired a new id is not kept (it is verified again next time).
// Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "util/result.h"

namespace headlab::server {

struct LearnerClientsOptions {
  int verified_for_s = 60;  // a store answer is trusted this long
  int window_s = 60;        // a learner key counts against its address while used within this
  // One minute of an address's joins (the join limit per address, server.cpp): a class of 60
  // behind one NAT address, or two classes, each learner with a key of their own.
  int max_learners_per_address = 120;
  std::size_t max_cached = 100000;
  // null: std::chrono::steady_clock::now. Tests inject one.
  std::function<std::chrono::steady_clock::time_point()> clock = nullptr;
};

class LearnerClients {
 public:
  // The class code the learner is a member of, nullopt when in none; an error when the store
  // cannot tell (then the request keeps its address key and nothing is kept).
  using ClassOf = std::function<Result<std::optional<std::string>>(const std::string& learner)>;
  explicit LearnerClients(ClassOf class_of, LearnerClientsOptions options = {});

  // The pool's client for a request from `address` that carries `learner` ("" when none).
  std::string client(const std::string& address, const std::string& learner);
  void forget(const std::string& learner);       // its membership changed: ask again
  void forget_all();                             // a learner was removed or a class deleted
  std::size_t cached() const;                    // verifications kept

  // The key of a verified learner's requests from `address`.
  static std::string key(const std::string& address, const std::string& learner);
  // 8-64 characters of A-Z a-z 0-9 - _ (the API's learner ids).
  static bool well_formed(const std::string& learner);

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Verified {
    std::optional<std::string> code;  // its class, or none
    TimePoint at;
  };
  TimePoint now() const;
  void keep(const std::string& learner, Verified v);  // mutex_ held
  // Whether `learner` may have a key of its own at `address` now (the bound), noting it; mutex_ held.
  bool admit(const std::string& address, const std::string& learner, TimePoint now);

  ClassOf class_of_;
  LearnerClientsOptions options_;
  mutable std::mutex mutex_;
  std::map<std::string, Verified> verified_;                              // by learner id
  std::map<std::string, std::map<std::string, TimePoint>> by_address_;    // address -> learner -> last used
  // Raised by forget*: a store answer read before a forget is not kept after it (it may be stale).
  unsigned long long generation_ = 0;
};

}  // namespace headlab::server
