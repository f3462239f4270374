// testing/process.h — run the built `headlab` as a child process: a command to its end
// (command_run, headlab_run), or `headlab serve` in the background, reading the port it
// printed and signalling it (SIGKILL for crash tests, SIGTERM for graceful shutdown).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace headlab::testing {

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;     // what the command wrote to its standard output
};

// Runs a shell command line and reads its standard output to the end.
inline CommandResult command_run(const std::string& command_line) {
  CommandResult r;
  FILE* p = ::popen(command_line.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `headlab ARGS` from this build, its standard output and standard error together.
inline CommandResult headlab_run(const std::string& args) {
  return command_run(std::string(HEADLAB_BINARY_DIR) + "/headlab " + args + " 2>&1");
}

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
