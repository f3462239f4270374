// bench/engine_call_time.cpp — the engine's own time for the call bench/python_cache_bench.py
// makes from Python to measure the calling overhead: hook_select + cache_run of hook_embed at
// one token on the built-in model, best of 5 rounds of 1,000 calls, in wall time and in the
// process's CPU time (all its threads: the pool's too), which a busy machine moves less: with
// more runnable threads than cores, a round's wall time doubles while its CPU time does not.
// Built against the installed library by bench/run_python_cache_bench.sh (pkg-config headlab),
// as a user's program would be.
//   engine_call_time MODEL_DIR   ->   engine_call_us=... engine_call_cpu_us=...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "headlab.h"

using namespace headlab;

static double process_cpu_us() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e6 + double(t.tv_nsec) / 1e3;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: engine_call_time MODEL_DIR\n");
    return 2;
  }
  auto params = model::model_load(argv[1]);
  if (!params) {
    std::fprintf(stderr, "engine_call_time: %s\n", params.error().message.c_str());
    return 1;
  }
  model::Workspace ws;
  const std::vector<std::vector<int>> ids = {{1}};
  auto call = [&] {
    auto sel = research::hook_select(params->config, "hook_embed");
    return research::cache_run(*params, ids, *sel, {}, ws).has_value();
  };
  for (int i = 0; i < 100; i++) call();
  double best = 1e300, best_cpu = 1e300;
  for (int r = 0; r < 5; r++) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = process_cpu_us();
    for (int i = 0; i < 1000; i++)
      if (!call()) return 1;
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 1000);
    best_cpu = std::min(best_cpu, (process_cpu_us() - c0) / 1000);
  }
  std::printf("engine_call_us=%.1f engine_call_cpu_us=%.1f\n", best, best_cpu);
  return 0;
}
