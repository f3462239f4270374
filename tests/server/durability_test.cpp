// Nothing a learner did is lost: a server killed with SIGKILL in the middle of a stream of
// writes still has every write it acknowledged when it starts again; SIGTERM stops cleanly.
#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "testing/process.h"
#include "testing/test_server.h"

using headlab::testing::ServeProcess;
using headlab::testing::temp_path;
using nlohmann::json;

namespace {
std::string check_body(const std::string& learner) {
  return json{{"learner", learner}, {"lesson", "causal-mask"}, {"sentence", "the cat chased the dog . the cat chased the"},
              {"head", "induction"}, {"mask", true}, {"query", 8}}
      .dump();
}
}  // namespace

TEST(Durability, EveryAcknowledgedWriteSurvivesSigkill) {
  std::string db = temp_path("kill.db");
  std::vector<std::string> acknowledged;
  std::mutex mu;
  {
    ServeProcess server(db);
    ASSERT_GT(server.port(), 0) << server.output();
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int w = 0; w < 4; ++w)
      writers.emplace_back([&, w] {
        httplib::Client c("127.0.0.1", server.port());
        c.set_connection_timeout(1);
        c.set_read_timeout(2);
        for (int i = 0; !stop; ++i) {
          std::string learner = "writer" + std::to_string(w) + "-" + std::to_string(i);
          auto r = c.Post("/api/progress/check", check_body(learner), "application/json");
          if (!r) break;  // the server is gone
          if (r->status == 200) {
            std::lock_guard<std::mutex> lock(mu);
            acknowledged.push_back(learner);
          }
        }
      });
    // kill mid-stream once enough writes are acknowledged (a loaded machine writes slower:
    // wait for the count, not for a fixed time), while the writers keep writing
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (acknowledged.size() >= 50) break;
      }
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    server.signal_and_wait(SIGKILL);
    stop = true;
    for (auto& t : writers) t.join();
  }
  ASSERT_GT(acknowledged.size(), 20u) << "too few writes before the kill to prove anything";

  ServeProcess again(db);
  ASSERT_GT(again.port(), 0) << again.output();
  httplib::Client c("127.0.0.1", again.port());
  std::size_t missing = 0;
  for (const std::string& learner : acknowledged) {
    auto r = c.Get(("/api/progress?learner=" + learner).c_str());
    ASSERT_TRUE(r);
    if (json::parse(r->body)["completed_count"] != 1) ++missing;
  }
  EXPECT_EQ(missing, 0u) << "of " << acknowledged.size() << " acknowledged writes";
}

TEST(Durability, SigtermStopsGracefullyAndSaysSo) {
  ServeProcess server(temp_path("term.db"));
  ASSERT_GT(server.port(), 0);
  httplib::Client c("127.0.0.1", server.port());
  ASSERT_TRUE(c.Get("/api/health"));
  int status = server.signal_and_wait(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(server.output().find("headlab: stopped"), std::string::npos) << server.output();
}

TEST(Durability, StartUpSaysItIsBoundToLoopbackOnly) {
  ServeProcess server(temp_path("bind.db"));
  EXPECT_NE(server.output().find("only this machine can connect"), std::string::npos) << server.output();
}

TEST(Durability, SigtermWithTricklingClientsExitsWithinTheDrain) {
  ServeProcess server(temp_path("trickle.db"));
  ASSERT_GT(server.port(), 0);
  // 20 connections that send a byte of their headers every 200 ms and never finish, and one
  // idle keep-alive connection: none of them may hold the stop beyond the 5 s drain.
  std::atomic<bool> stop{false};
  std::vector<std::thread> tricklers;
  for (int i = 0; i < 20; ++i)
    tricklers.emplace_back([&] {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(server.port()));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        const std::string head = "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
        for (std::size_t k = 0; !stop; ++k) {
          char c = k < head.size() ? head[k] : 's';
          if (::send(fd, &c, 1, MSG_NOSIGNAL) != 1) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
      }
      ::close(fd);
    });
  httplib::Client idle("127.0.0.1", server.port());
  idle.set_keep_alive(true);
  ASSERT_TRUE(idle.Get("/api/health"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto start = std::chrono::steady_clock::now();
  int status = server.signal_and_wait(SIGTERM);
  auto took = std::chrono::steady_clock::now() - start;
  stop = true;
  for (auto& t : tricklers) t.join();
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_LT(took, std::chrono::milliseconds(6500)) << "the drain is 5 s";
  EXPECT_NE(server.output().find("headlab: stopped"), std::string::npos) << server.output();
}
