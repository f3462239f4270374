// tools/reference/llama_logits.c — llama.cpp as the peer of headlab's GGUF support.
// Two jobs, through llama.cpp's C API (libllama from the npm package @node-llama-cpp/linux-x64):
//   llama_logits logits MODEL.gguf ID...       decodes the ids as one batch (F32 KV cache,
//                                              flash attention off, 2 threads) and prints the
//                                              logits of every position as JSON: [[V floats], ...]
//   llama_logits quantize IN.gguf OUT.gguf FTYPE [pure]   llama_model_quantize to FTYPE (a llama_ftype
//                                              number: 7 Q8_0, 15 Q4_K_M, 18 Q6_K, ...; 0 F32
//                                              dequantizes a quantized file with llama.cpp's
//                                              own dequantizers)
//   llama_logits tokenize MODEL.gguf < TEXTS     the vocabulary alone (vocab_only); for each line
//                                              of stdin (a text's UTF-8 bytes in hex), the ids
//                                              llama.cpp's tokenizer gives it, without BOS/EOS,
//                                              special tokens matched: one line of ids each
// Built by tools/reference/make_llama_fixtures.py, which says where the headers come from;
// llama_peer.h (beside it) sets llama.cpp up as the peer.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama_peer.h"

static int run_logits(const char* path, int n, char** ids_text) {
  struct llama_model* model = llama_peer_load("llama_logits", path);
  if (!model) return 1;
  struct llama_context* ctx = llama_peer_context(model, n);
  if (!ctx) {
    fprintf(stderr, "llama_logits: cannot make a context for %s\n", path);
    return 1;
  }
  int* ids = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) ids[i] = atoi(ids_text[i]);
  struct llama_batch batch = llama_peer_batch(ids, n, 1);  // every position's logits
  free(ids);
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

// One text per line of stdin, already unescaped by the caller (a line holds no newline: the
// caller writes each text as a JSON string and passes its bytes hex-encoded).
static int run_tokenize(const char* path) {
  struct llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  struct llama_model* model = llama_model_load_from_file(path, mp);
  if (!model) {
    fprintf(stderr, "llama_logits: cannot load the vocabulary of %s\n", path);
    return 1;
  }
  const struct llama_vocab* vocab = llama_model_get_vocab(model);
  char line[1 << 16];
  while (fgets(line, sizeof line, stdin)) {
    // hex bytes of the text, then a newline
    size_t n = strcspn(line, "\r\n"), len = n / 2;
    char* text = malloc(len + 1);
    for (size_t i = 0; i < len; i++) {
      unsigned v = 0;
      sscanf(line + 2 * i, "%2x", &v);
      text[i] = (char)v;
    }
    text[len] = 0;
    int cap = (int)len + 16;
    llama_token* ids = malloc(sizeof(llama_token) * (size_t)cap);
    int got = llama_tokenize(vocab, text, (int)len, ids, cap, /*add_special=*/0, /*parse_special=*/1);
    if (got < 0) {
      fprintf(stderr, "llama_logits: llama_tokenize failed (%d)\n", got);
      return 1;
    }
    for (int i = 0; i < got; i++) printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
    free(ids);
    free(text);
  }
  llama_model_free(model);
  return 0;
}

int main(int argc, char** argv) {
  llama_peer_init();  // LLAMA_BACKEND_DIR: the folder of libggml-cpu-*.so
  if (argc >= 4 && strcmp(argv[1], "logits") == 0) return run_logits(argv[2], argc - 3, argv + 3);
  if (argc == 3 && strcmp(argv[1], "tokenize") == 0) return run_tokenize(argv[2]);
  if ((argc == 5 || argc == 6) && strcmp(argv[1], "quantize") == 0)
    return run_quantize(argv[2], argv[3], atoi(argv[4]), argc == 6 && strcmp(argv[5], "pure") == 0);
  fprintf(stderr,
          "usage: llama_logits logits MODEL.gguf ID...\n"
          "       llama_logits quantize IN.gguf OUT.gguf FTYPE [pure]\n"
          "       llama_logits tokenize MODEL.gguf < HEX_TEXT_LINES\n");
  return 2;
}
