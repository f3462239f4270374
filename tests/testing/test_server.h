// testing/test_server.h — a real headlab server on a free loopback port, in this process,
// with its own temporary database; and small helpers to call its JSON API.
#pragma once

#include <httplib.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
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
  explicit TestServer(std::string db_path, std::string model_dir = "", int model_queue = 8,
                      const std::function<void(server::ServerOptions&)>& configure = {})
      : db_path_(std::move(db_path)) {
    server::ServerOptions options;
    options.port = 0;
    options.db_path = db_path_;
    options.model_dir = std::move(model_dir);
    options.model_queue = model_queue;
    options.threads = 4;
    if (configure) configure(options);
    auto s = server::Server::create(options);
    if (!s) throw std::runtime_error(s.error().message);
    server_ = std::move(*s);
    if (auto b = server_->bind(); !b) throw std::runtime_error(b.error().message);
    thread_ = std::thread([this] { server_->listen(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    // httplib's 5 s read timeout answered status 0 to a slow but sound request (the lesson
    // models' scan beside another test under the sanitizers); a test's own limits say how long
    client_->set_read_timeout(120, 0);
    for (int i = 0; i < 100 && !client_->Get("/api/health"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~TestServer() {
    server_->stop();
    thread_.join();
  }
  httplib::Client& client() { return *client_; }
  int port() const { return server_->port(); }

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

// Sends `bytes` as they are on a new loopback connection and returns everything the server
// sent back until it closed the connection or `timeout` passed: for requests no HTTP client
// library would send (duplicate headers, floods, trickles).
inline std::string raw_exchange(int port, const std::string& bytes,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "";
  }
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server closed early, as it may after refusing
    sent += static_cast<std::size_t>(n);
  }
  std::string out;
  const auto end = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

// The status code of the first answer in raw bytes ("HTTP/1.1 431 ..."), 0 when none.
inline int raw_status(const std::string& answer) {
  if (answer.rfind("HTTP/1.", 0) != 0 || answer.size() < 12) return 0;
  return std::atoi(answer.c_str() + 9);
}

}  // namespace headlab::testing
