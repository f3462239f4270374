// tools/reference/llama_logits.c — llama.cpp as the peer of headlab's GGUF support.
// Two jobs, through llama.cpp's C API (libllama from the npm package @node-llama-cpp/linux-x64):
//   llama_logits logits MODEL.gguf ID...       decodes the ids as one batch (F32 KV cache,
//                                              flash attention off, 2 threads) and prints the
//                                              logits of every position as JSON: [[V floats], ...]
//   llama_logits quantize IN.gguf OUT.gguf FTYPE [pure]   llama_model_quantize to FTYPE (a llama_ftype
//                                              number: 7 Q8_0, 15 Q4_K_M, 18 Q6_K, ...; 0 F32
//                                              dequantizes a quantized file with llama.cpp's
//                                              own dequantizers)
// Built by tools/reference/make_llama_fixtures.sh, which says where the headers come from.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet_log(enum ggml_log_level level, const char* text, void* user) {
  (void)user;
  if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int run_logits(const char* path, int n, char** ids_text) {
  struct llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  struct llama_model* model = llama_model_load_from_file(path, mp);
  if (!model) {
    fprintf(stderr, "llama_logits: cannot load %s\n", path);
    return 1;
  }
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = (uint32_t)(n < 16 ? 16 : n);
  cp.n_batch = cp.n_ctx;
  cp.n_ubatch = cp.n_ctx;
  cp.n_threads = 2;
  cp.n_threads_batch = 2;
  cp.type_k = GGML_TYPE_F32;  // the peer's numbers, not its cache's rounding
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.no_perf = true;
  struct llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    fprintf(stderr, "llama_logits: cannot make a context for %s\n", path);
    return 1;
  }
  struct llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; i++) {
    batch.token[i] = atoi(ids_text[i]);
    batch.pos[i] = i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;  // every position's logits
  }
  batch.n_tokens = n;
  if (llama_decode(ctx, batch) != 0) {
    fprintf(stderr, "llama_logits: llama_decode failed\n");
    return 1;
  }
  const int V = llama_vocab_n_tokens(llama_model_get_vocab(model));
  printf("[");
  for (int i = 0; i < n; i++) {
    const float* row = llama_get_logits_ith(ctx, i);
    printf(i ? ",\n[" : "[");
    for (int v = 0; v < V; v++) printf(v ? ",%.9g" : "%.9g", row[v]);
    printf("]");
  }
  printf("]\n");
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}

static int run_quantize(const char* in, const char* out, int ftype, int pure) {
  struct llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.nthread = 2;
  qp.ftype = (enum llama_ftype)ftype;
  // to F32 (ftype 0) from a quantized file: llama.cpp's own dequantization of every tensor
  qp.allow_requantize = ftype == LLAMA_FTYPE_ALL_F32;
  qp.pure = pure || ftype == LLAMA_FTYPE_ALL_F32;  // every matrix of the one type
  if (llama_model_quantize(in, out, &qp) != 0) {
    fprintf(stderr, "llama_logits: quantizing %s failed\n", in);
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* backends = getenv("LLAMA_BACKEND_DIR");  // the folder of libggml-cpu-*.so
  llama_log_set(quiet_log, NULL);
  if (backends) ggml_backend_load_all_from_path(backends);
  else ggml_backend_load_all();
  llama_backend_init();
  if (argc >= 4 && strcmp(argv[1], "logits") == 0) return run_logits(argv[2], argc - 3, argv + 3);
  if ((argc == 5 || argc == 6) && strcmp(argv[1], "quantize") == 0)
    return run_quantize(argv[2], argv[3], atoi(argv[4]), argc == 6 && strcmp(argv[5], "pure") == 0);
  fprintf(stderr,
          "usage: llama_logits logits MODEL.gguf ID...\n"
          "       llama_logits quantize IN.gguf OUT.gguf FTYPE [pure]\n");
  return 2;
}
