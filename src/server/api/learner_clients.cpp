// server/api/learner_clients.cpp — the inference pool's client of a request: its address, or
// address + learner for a learner the class store knows, within a bound per address.
#include "server/api/learner_clients.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace headlab::server {

LearnerClients::LearnerClients(ClassOf class_of, LearnerClientsOptions options)
    : class_of_(std::move(class_of)), options_(std::move(options)) {}

LearnerClients::TimePoint LearnerClients::now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

bool LearnerClients::well_formed(const std::string& learner) {
  return learner.size() >= 8 && learner.size() <= 64 &&
         std::all_of(learner.begin(), learner.end(), [](unsigned char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
         });
}

std::string LearnerClients::key(const std::string& address, const std::string& learner) {
  return address + " learner " + learner;
}

std::string LearnerClients::client(const std::string& address, const std::string& learner) {
  if (!class_of_ || !well_formed(learner)) return address;
  const TimePoint t = now();
  std::optional<std::string> code;
  unsigned long long generation = 0;
  bool known = false;
  {
    std::lock_guard lock(mutex_);
    auto it = verified_.find(learner);
    if (it != verified_.end() && t - it->second.at < std::chrono::seconds(options_.verified_for_s)) {
      known = true;
      code = it->second.code;
    }
    generation = generation_;
  }
  if (!known) {
    // The database read, outside the lock: other requests go on meanwhile.
    auto found = class_of_(learner);
    if (!found) return address;  // the store cannot tell: the address's key, nothing kept
    code = *found;
    std::lock_guard lock(mutex_);
    if (generation == generation_) keep(learner, {code, t});
  }
  if (!code) return address;
  std::lock_guard lock(mutex_);
  return admit(address, learner, t) ? key(address, learner) : address;
}

void LearnerClients::keep(const std::string& learner, Verified v) {
  if (verified_.size() >= options_.max_cached && !verified_.count(learner)) {
    const auto expiry = std::chrono::seconds(options_.verified_for_s);
    for (auto it = verified_.begin(); it != verified_.end();)
      it = v.at - it->second.at >= expiry ? verified_.erase(it) : std::next(it);
    if (verified_.size() >= options_.max_cached) return;  // all fresh: this one is asked again next time
  }
  verified_[learner] = std::move(v);
}

bool LearnerClients::admit(const std::string& address, const std::string& learner, TimePoint t) {
  const auto window = std::chrono::seconds(options_.window_s);
  // Addresses whose learners all left the window are forgotten, so the map holds only the
  // addresses of learners who used the model lately (swept when it outgrows the cache bound).
  if (by_address_.size() > options_.max_cached) {
    for (auto a = by_address_.begin(); a != by_address_.end();) {
      std::erase_if(a->second, [&](const auto& used) { return t - used.second >= window; });
      a = a->second.empty() ? by_address_.erase(a) : std::next(a);
    }
  }
  auto& used = by_address_[address];
  std::erase_if(used, [&](const auto& u) { return t - u.second >= window; });
  auto it = used.find(learner);
  if (it == used.end() && static_cast<int>(used.size()) >= options_.max_learners_per_address) return false;
  used[learner] = t;
  return true;
}

void LearnerClients::forget(const std::string& learner) {
  std::lock_guard lock(mutex_);
  ++generation_;
  verified_.erase(learner);
}

void LearnerClients::forget_all() {
  std::lock_guard lock(mutex_);
  ++generation_;
  verified_.clear();
}

std::size_t LearnerClients::cached() const {
  std::lock_guard lock(mutex_);
  return verified_.size();
}

}  // namespace headlab::server
