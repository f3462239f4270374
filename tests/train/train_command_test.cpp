// Tests for `headlab train` (src/cli/train_command.cpp) run as a user runs it: a child
// process that is sent SIGTERM saves a checkpoint as Ctrl-C does, and numbers that make no
// sense (--lr nan) are refused before any work.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "formats/hf/config_json.h"
#include "model/config.h"
#include "train/bpe_trainer.h"

using namespace headlab;
namespace fs = std::filesystem;

namespace {

// A byte-level tokenizer (257 tokens) and a tiny config in a scratch directory.
struct Fixture {
  fs::path dir;
  explicit Fixture(const std::string& name) : dir(fs::temp_directory_path() / ("headlab_train_cli_" + name + "_" + std::to_string(getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    train::BpeTrainOptions bo;
    bo.vocab_size = 257;
    auto v = train::bpe_train({"abc"}, bo);
    EXPECT_TRUE(v && train::bpe_save(*v, (dir / "tok").string()));
    model::ModelConfig c;
    c.n_layer = 1;
    c.n_head = 2;
    c.n_embd = 16;
    c.n_ctx = 16;
    c.vocab_size = 257;
    c.bos_token_id = c.eos_token_id = 256;
    EXPECT_TRUE(model::config_save(c, (dir / "config.json").string()));
  }
  ~Fixture() { fs::remove_all(dir); }
  // The arguments of a run on repeated random tokens only (no corpus needed).
  std::vector<std::string> args(int steps) const {
    return {"train", "--config", (dir / "config.json").string(), "--tokenizer", (dir / "tok").string(), "--out",
            (dir / "out").string(), "--steps", std::to_string(steps), "--batch", "2", "--repeated-random", "1",
            "--max-span", "6", "--log-every", "1", "--eval-every", "0", "--checkpoint-every", "0"};
  }
};

// `headlab <args>` as a child whose standard error is read through a pipe.
class Child {
 public:
  explicit Child(std::vector<std::string> args) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDERR_FILENO);
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      args.insert(args.begin(), HEADLAB_BINARY_DIR "/headlab");
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_) std::fclose(out_);
  }
  // Reads output lines until one contains `what` (true) or the output ends (false).
  bool read_until(const std::string& what) {
    char line[1024];
    while (out_ && std::fgets(line, sizeof line, out_)) {
      output_ += line;
      if (std::string(line).find(what) != std::string::npos) return true;
    }
    return false;
  }
  // Waits for the exit, reading the rest of the output; returns waitpid's status.
  int wait() {
    read_until("\x01never printed");
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }
  pid_t pid() const { return pid_; }
  const std::string& output() const { return output_; }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  std::string output_;
  bool reaped_ = false;
};

}  // namespace

TEST(TrainCommand, SigtermSavesACheckpointAsCtrlCDoes) {
  Fixture f("sigterm");
  // far more steps than the test waits for; a constant learning rate, so the resumed run may
  // take fewer (a cosine schedule is laid over --steps, and --resume refuses another count)
  std::vector<std::string> first = f.args(1000000);
  for (const char* x : {"--decay", "constant"}) first.push_back(x);
  Child child(first);
  ASSERT_GT(child.pid(), 0);
  // a progress row means the loop runs, so the handler is in place
  ASSERT_TRUE(child.read_until("step 1/1000000")) << child.output();
  ASSERT_EQ(kill(child.pid(), SIGTERM), 0);
  const int status = child.wait();
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of stopping: " << child.output();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_NE(child.output().find("interrupted (SIGTERM) at step"), std::string::npos) << child.output();
  for (const char* name : {"config.json", "model.safetensors", "vocab.json", "merges.txt", "train_state.bin",
                           "train_log.csv", "train_log.json"})
    EXPECT_TRUE(fs::exists(f.dir / "out" / name)) << name;
  std::ifstream log(f.dir / "out" / "train_log.json");
  auto j = nlohmann::json::parse(log);
  ASSERT_FALSE(j["log"].empty());
  EXPECT_GE(j["log"].back()["step"].get<int>(), 1);
  // and the run continues from it
  std::vector<std::string> resume = f.args(j["log"].back()["step"].get<int>() + 2);
  for (const char* x : {"--decay", "constant", "--resume"}) resume.push_back(x);
  Child again(resume);
  EXPECT_EQ(again.wait(), 0) << again.output();
  EXPECT_NE(again.output().find("resuming at step"), std::string::npos) << again.output();
}

TEST(TrainCommand, CtrlCSavesACheckpointAndExits130) {
  Fixture f("sigint");
  Child child(f.args(1000000));
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(child.read_until("step 1/1000000")) << child.output();
  ASSERT_EQ(kill(child.pid(), SIGINT), 0);
  const int status = child.wait();
  ASSERT_TRUE(WIFEXITED(status)) << child.output();
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_NE(child.output().find("interrupted (Ctrl-C) at step"), std::string::npos) << child.output();
  EXPECT_TRUE(fs::exists(f.dir / "out" / "train_state.bin"));
}

TEST(TrainCommand, RefusesLearningRatesThatAreNotFinitePositiveNumbers) {
  Fixture f("lr");
  for (const char* lr : {"nan", "inf", "-inf", "0", "-0.001"}) {
    std::vector<std::string> a = f.args(5);
    a.push_back("--lr");
    a.push_back(lr);
    Child child(a);
    const int status = child.wait();
    ASSERT_TRUE(WIFEXITED(status)) << lr;
    EXPECT_EQ(WEXITSTATUS(status), 2) << lr << ": " << child.output();
    EXPECT_NE(child.output().find("headlab: error: --lr must be"), std::string::npos) << lr << ": " << child.output();
    EXPECT_FALSE(fs::exists(f.dir / "out" / "model.safetensors")) << lr;
  }
}

// --positions rotary trains and says so; the folder it writes runs in `headlab run`.
TEST(TrainCommand, PositionsRotaryTrainsAModelThatHeadlabRunReads) {
  Fixture f("rotary");
  std::vector<std::string> a = f.args(3);
  for (const char* x : {"--positions", "rotary", "--rope-theta", "500"}) a.push_back(x);
  Child child(a);
  const int status = child.wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << child.output();
  EXPECT_NE(child.output().find("rotary positions (theta 500, 8 of 8 channels per head)"), std::string::npos)
      << child.output();
  Child run({"run", "--model", (f.dir / "out").string(), "--ids", "1 2 3"});
  const int run_status = run.wait();
  ASSERT_TRUE(WIFEXITED(run_status));
  EXPECT_EQ(WEXITSTATUS(run_status), 0) << run.output();
}

// A usage error (exit 2) that names what is wrong, and a --help that teaches the three kinds.
TEST(TrainCommand, RefusesPositionsItCannotTrainAndItsHelpNamesTheThree) {
  Fixture f("positions");
  for (std::vector<std::string> extra : {std::vector<std::string>{"--positions", "alibi"},
                                         std::vector<std::string>{"--rope-theta", "10000"}}) {
    std::vector<std::string> a = f.args(3);
    a.insert(a.end(), extra.begin(), extra.end());
    Child child(a);
    const int status = child.wait();
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 2) << extra[0] << ": " << child.output();
    EXPECT_NE(child.output().find(extra[0] == "--positions" ? "alibi" : "--positions rotary"), std::string::npos)
        << child.output();
    EXPECT_FALSE(fs::exists(f.dir / "out" / "model.safetensors"));
  }
  Child help({"train", "--help"});
  help.wait();
  for (const char* needle : {"learned  GPT-2's wpe", "rotary   RoPE (Su et al. 2021)", "none     no positions",
                             "Llama 3 500000"})
    EXPECT_NE(help.output().find(needle), std::string::npos) << needle;
}
