/* tools/reference/llama_peer.h — llama.cpp set up as headlab's peer, shared by the reference
 * (tools/reference/llama_logits.c) and the benchmark (bench/llama_bench.c): libllama from the
 * npm package @node-llama-cpp/linux-x64, headers from node-llama-cpp's llama/gitRelease.bundle.
 *
 *   llama_peer_init();                                   // backends, quiet log
 *   struct llama_model* model = llama_peer_load("prog", "m.gguf");
 *   struct llama_context* ctx = llama_peer_context(model, n);
 *   struct llama_batch b = llama_peer_batch(ids, n, 1);  // every position's logits
 *   llama_decode(ctx, b);
 *
 * The configuration that agrees with a float64 reference to about 1e-6 on F32 weights: an F32
 * KV cache (the peer's numbers, not its cache's rounding), flash attention off, 2 threads (the
 * machines have 2 cores), one batch of all the tokens.
 */
#ifndef HEADLAB_LLAMA_PEER_H
#define HEADLAB_LLAMA_PEER_H

#include <stdio.h>
#include <stdlib.h>

#include "ggml-backend.h"
#include "llama.h"

static void llama_peer_quiet_log(enum ggml_log_level level, const char* text, void* user) {
  (void)user;
  if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

/* Loads the CPU backends from LLAMA_BACKEND_DIR (the folder of libggml-cpu-*.so; ggml picks the
 * variant that scores best on this CPU's features) or ggml's default places. */
static void llama_peer_init(void) {
  const char* backends = getenv("LLAMA_BACKEND_DIR");
  llama_log_set(llama_peer_quiet_log, NULL);
  if (backends) ggml_backend_load_all_from_path(backends);
  else ggml_backend_load_all();
  llama_backend_init();
}

/* The model at path on the CPU, or NULL after a message on stderr naming the program and file. */
static struct llama_model* llama_peer_load(const char* program, const char* path) {
  struct llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  struct llama_model* model = llama_model_load_from_file(path, mp);
  if (!model) fprintf(stderr, "%s: cannot load %s\n", program, path);
  return model;
}

/* A context for one batch of n tokens (at least 16), or NULL. */
static struct llama_context* llama_peer_context(struct llama_model* model, int n) {
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = (uint32_t)(n < 16 ? 16 : n);
  cp.n_batch = cp.n_ctx;
  cp.n_ubatch = cp.n_ctx;
  cp.n_threads = 2;
  cp.n_threads_batch = 2;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.no_perf = true;
  return llama_init_from_model(model, cp);
}

/* ids[0..n) at positions 0..n-1 of sequence 0; logits of every position when all_logits, else of
 * the last only. Free with llama_batch_free. */
static struct llama_batch llama_peer_batch(const int* ids, int n, int all_logits) {
  struct llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; i++) {
    batch.token[i] = ids[i];
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = (int8_t)(all_logits || i == n - 1);
  }
  batch.n_tokens = n;
  return batch;
}

#endif /* HEADLAB_LLAMA_PEER_H */
