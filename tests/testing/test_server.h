// testing/test_server.h — a real headlab server on a free loopback port, in this process,
// with its own temporary database; and small helpers to call its JSON API.
#pragma once

#include <httplib.h>

#include <filesystem>
#include <memory>
#include <random>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "server/server.h"

namespace headlab::testing {

// A path in a new, empty folder of its own. The folder's name has a random part from the
// OS: pid + std::rand() repeated whenever a pid came back, and a later test then found an
// earlier test's database there.
inline std::string temp_path(const std::string& name) {
  std::random_device entropy;
  auto dir = std::filesystem::temp_directory_path() /
             ("headlab-test-" + std::to_string(::getpid()) + "-" + std::to_string(entropy()) + "-" +
              std::to_string(entropy()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

class TestServer {
 public:
  explicit TestServer(std::string db_path, std::string model_dir = "", int model_queue = 8)
      : db_path_(std::move(db_path)) {
    server::ServerOptions options;
    options.port = 0;
    options.db_path = db_path_;
    options.model_dir = std::move(model_dir);
    options.model_queue = model_queue;
    options.threads = 16;
    auto s = server::Server::create(options);
    if (!s) throw std::runtime_error(s.error().message);
    server_ = std::move(*s);
    if (auto b = server_->bind(); !b) throw std::runtime_error(b.error().message);
    thread_ = std::thread([this] { server_->listen(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    for (int i = 0; i < 100 && !client_->Get("/api/health"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~TestServer() {
    server_->stop();
    thread_.join();
  }
  httplib::Client& client() { return *client_; }

  struct Reply {
    int status = 0;
    nlohmann::json body;
    std::string raw;
  };
  Reply get(const std::string& path) { return wrap(client_->Get(path.c_str())); }
  Reply post(const std::string& path, const std::string& body) {
    return wrap(client_->Post(path.c_str(), body, "application/json"));
  }
  Reply post(const std::string& path, const nlohmann::json& body) { return post(path, body.dump()); }

 private:
  static Reply wrap(const httplib::Result& r) {
    Reply out;
    if (!r) return out;
    out.status = r->status;
    out.raw = r->body;
    out.body = nlohmann::json::parse(r->body, nullptr, false);
    return out;
  }
  std::string db_path_;
  std::unique_ptr<server::Server> server_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace headlab::testing
