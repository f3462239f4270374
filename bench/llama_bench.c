/* bench/llama_bench.c — llama.cpp's plain forward, the peer bench/run_family_bench.sh sets next
 * to headlab's: one batch of T tokens (the ids every side is fed, bench_clock.h) decoded by
 * libllama from the npm package @node-llama-cpp/linux-x64 in the peer's configuration
 * (tools/reference/llama_peer.h: 2 threads, F32 KV cache, flash attention off), the cache
 * cleared between repeats. One length per process, like headlab_engine_bench.
 *
 *   llama_bench --model F.gguf --tokens 256 [--repeats 5] [--last-only] [--dump-last FILE] [--threads 2]
 *   llama_bench --info         the CPU backend ggml loaded and llama_print_system_info()
 * prints: tokens=256 median_ms=... min_ms=... cpu_ms=... peak_rss_mb=... load_rss_mb=... load_ms=...
 *         argmax_last=... logit_sum_last=... model=qwen2_1B_BF16 backend=libggml-cpu-zen4.so
 * Logits of every position unless --last-only (headlab's forward computes them all). --threads
 * other than the peer's 2 is for diagnosis: ggml's threads spin at each step's barrier, so on a
 * loaded machine two threads can take longer than one.
 * Built by bench/run_family_bench.sh against the headers of node-llama-cpp's git bundle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"
#include "llama_peer.h"

/* The libggml-cpu-*.so this process mapped: the variant ggml chose for this CPU. */
static void loaded_backend(char* out, size_t size) {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[1024];
  snprintf(out, size, "unknown");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    const char* lib = strstr(line, "libggml-cpu");
    if (lib) {
      snprintf(out, size, "%.*s", (int)strcspn(lib, "\n"), lib);
      break;
    }
  }
  fclose(f);
}

static int usage(void) {
  fprintf(stderr,
          "usage: llama_bench --model F.gguf --tokens T [--repeats N] [--last-only] [--dump-last FILE] [--threads N]\n"
          "       llama_bench --info   (the CPU backend loaded and llama.cpp's system info)\n"
          "LLAMA_BACKEND_DIR names the folder of libggml-cpu-*.so.\n");
  return 2;
}

int main(int argc, char** argv) {
  const char *path = NULL, *dump_last = NULL;
  int tokens = 0, repeats = 5, last_only = 0, info = 0, threads = 2;
  for (int i = 1; i < argc; i++) {
    const char* next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--model") == 0 && next) path = argv[++i];
    else if (strcmp(argv[i], "--tokens") == 0 && next) tokens = atoi(argv[++i]);
    else if (strcmp(argv[i], "--repeats") == 0 && next) repeats = atoi(argv[++i]);
    else if (strcmp(argv[i], "--dump-last") == 0 && next) dump_last = argv[++i];
    else if (strcmp(argv[i], "--threads") == 0 && next) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--last-only") == 0) last_only = 1;
    else if (strcmp(argv[i], "--info") == 0) info = 1;
    else return usage();
  }
  llama_peer_init();
  char backend[256];
  loaded_backend(backend, sizeof backend);
  if (info) {
    printf("backend=%s\n%s\n", backend, llama_print_system_info());
    return 0;
  }
  if (!path || tokens <= 0 || repeats <= 0 || threads <= 0) return usage();

  const double load_t0 = bench_wall_ms();
  struct llama_model* model = llama_peer_load("llama_bench", path);
  if (!model) return 1;
  struct llama_context* ctx = llama_peer_context(model, tokens);
  if (!ctx) {
    fprintf(stderr, "llama_bench: cannot make a context of %d tokens for %s\n", tokens, path);
    return 1;
  }
  llama_set_n_threads(ctx, threads, threads);
  const int V = llama_vocab_n_tokens(llama_model_get_vocab(model));
  int* ids = malloc(sizeof(int) * (size_t)tokens);
  double* ms = malloc(sizeof(double) * (size_t)repeats);
  double* cpu_ms = malloc(sizeof(double) * (size_t)repeats);
  for (int t = 0; t < tokens; t++) ids[t] = bench_token_id(t, V);
  const double load_rss = bench_peak_rss_mb();  /* the model mapped and the context made */
  const double load_ms = bench_wall_ms() - load_t0;

  for (int r = 0; r < repeats + 1; r++) {  /* the first run warms up and is not counted */
    llama_memory_clear(llama_get_memory(ctx), 1);
    struct llama_batch batch = llama_peer_batch(ids, tokens, !last_only);
    const double c0 = bench_cpu_ms(), t0 = bench_wall_ms();
    if (llama_decode(ctx, batch) != 0) {
      fprintf(stderr, "llama_bench: llama_decode failed on %d tokens\n", tokens);
      return 1;
    }
    llama_synchronize(ctx);
    if (r > 0) {
      ms[r - 1] = bench_wall_ms() - t0;
      cpu_ms[r - 1] = bench_cpu_ms() - c0;
    }
    llama_batch_free(batch);
  }
  const float* last = llama_get_logits_ith(ctx, tokens - 1);
  double sum = 0;
  for (int v = 0; v < V; v++) sum += last[v];
  if (dump_last && bench_write_floats(dump_last, last, V) != 0) {
    fprintf(stderr, "llama_bench: cannot write %s\n", dump_last);
    return 1;
  }
  char desc[128];
  llama_model_desc(model, desc, sizeof desc);
  for (char* c = desc; *c; c++)
    if (*c == ' ') *c = '_';
  const double median = bench_median(ms, repeats);
  printf("tokens=%d median_ms=%.1f min_ms=%.1f cpu_ms=%.1f peak_rss_mb=%.0f load_rss_mb=%.0f load_ms=%.0f argmax_last=%d "
         "logit_sum_last=%.4f logits=%s threads=%d model=%s backend=%s\n",
         tokens, median, ms[0], bench_median(cpu_ms, repeats), bench_peak_rss_mb(), load_rss, load_ms,
         bench_argmax(last, V), sum, last_only ? "last" : "all", threads, desc, backend);
  free(ids);
  free(ms);
  free(cpu_ms);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
