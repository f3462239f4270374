// server/http/http_work_queue.h — the threads that answer model requests off the HTTP event loop.
// The event loop suspends such a connection (it then holds no thread) and pushes its work
// here; jobs are taken round-robin by client, so one client's many connections wait their
// turn behind another client's one.
//
//   HttpWorkQueue work(12);
//   work.push("192.0.2.7", [] { /* answer, then resume the connection */ });
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace headlab::server {

class HttpWorkQueue {
 public:
  explicit HttpWorkQueue(int threads);
  ~HttpWorkQueue();  // drops the jobs not started, waits for the running ones

  void push(const std::string& client, std::function<void()> job);
  // Drops the jobs not started yet (their owners answer them) and lets no new ones run.
  void stop();

 private:
  void worker_loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::map<std::string, std::deque<std::function<void()>>> waiting_;  // by client
  std::deque<std::string> turns_;  // clients with waiting jobs, next first
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace headlab::server
