// testing/process.h — run `headlab serve` as a child process, read the port it printed,
// and signal it (SIGKILL for crash tests, SIGTERM for graceful shutdown).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace headlab::testing {

class ServeProcess {
 public:
  // Starts HEADLAB_BINARY_DIR/headlab serve --port 0 --db db_path [extra...].
  explicit ServeProcess(const std::string& db_path, std::vector<std::string> extra = {}) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      std::vector<std::string> args = {HEADLAB_BINARY_DIR "/headlab", "serve", "--port", "0", "--db", db_path,
                                       "--web", "/nonexistent"};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
    char line[512];
    // "headlab: serving on http://127.0.0.1:PORT/"
    while (out_ && std::fgets(line, sizeof line, out_)) {
      output_ += line;
      std::sscanf(line, "headlab: serving on http://127.0.0.1:%d/", &port_);
      if (output_.find("press Ctrl-C") != std::string::npos) break;
    }
  }
  ~ServeProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_) std::fclose(out_);
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  // Sends sig and waits; returns the exit status as waitpid gives it.
  int signal_and_wait(int sig) {
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    char line[512];
    while (out_ && std::fgets(line, sizeof line, out_)) output_ += line;
    return status;
  }
  const std::string& output() const { return output_; }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  int port_ = 0;
  bool reaped_ = false;
  std::string output_;
};

}  // namespace headlab::testing
