// induction_cache.cpp — headlab as a library, from outside its tree (include/headlab.h):
// load a model, tokenize a text that repeats, cache every layer's attention pattern under
// TransformerLens's names, and find the head that attends most from each token of the
// second copy to the token after its first occurrence (an induction head), then read the
// last position through the logit lens. Errors are values: each is printed with its message.
//
//   induction_cache MODEL [TEXT]
#include <cstdio>
#include <string>

#include "headlab.h"

using namespace headlab;

int fail(const Error& e) {
  std::fprintf(stderr, "induction_cache: error: %s\n", e.message.c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: induction_cache MODEL [TEXT]\n");
    return 2;
  }
  const std::string path = argv[1];
  const std::string half = argc > 2 ? argv[2] : " the cat sat on the mat and looked at the dog";
  auto params = model::model_load(path);
  if (!params) return fail(params.error());
  auto tok = model::model_tokenizer_load(path);
  if (!tok) return fail(tok.error());
  auto in = analysis::run_input_from_text(*tok, params->config, half + half, {});
  if (!in) return fail(in.error());
  const std::vector<int> ids = in->ids();
  const int T = static_cast<int>(ids.size());

  auto sel = research::hook_select(params->config, "blocks.*.attn.hook_pattern");
  if (!sel) return fail(sel.error());
  model::Workspace ws;
  auto cache = research::cache_run(*params, {ids}, *sel, {}, ws);
  if (!cache) return fail(cache.error());

  // induction score of a head: mean over the second copy's positions q of pattern[q][q - R + 1],
  // R = the copy's length in tokens (BOS first, so the copies are 1..R and R+1..2R)
  const int R = (T - 1) / 2;
  const int NH = params->config.n_head;
  double best = -1;
  std::string best_name;
  for (const research::CachedTensor& t : cache->tensors) {  // (1, NH, T, T) each
    for (int h = 0; h < NH; h++) {
      double s = 0;
      for (int q = R + 1; q < T; q++) s += t.values[(std::size_t(h) * T + q) * T + (q - R + 1)];
      s /= (T - R - 1);
      if (s > best) {
        best = s;
        best_name = "L" + std::to_string(t.layer) + "H" + std::to_string(h);
      }
    }
  }
  std::printf("model %s: %d layers, %d heads, %d tokens (a text of %d tokens twice, BOS first)\n", path.c_str(),
              params->config.n_layer, NH, T, R);
  std::printf("cached %zu tensors (%.2f MB); first: %s\n", cache->tensors.size(), cache->bytes() / 1e6,
              cache->tensors.front().name.c_str());
  std::printf("strongest induction head: %s (mean attention to the token after the earlier copy %.3f)\n",
              best_name.c_str(), best);

  research::LensRequest lr;
  lr.top_k = 1;
  auto lens = research::logit_lens(*params, ids, lr, ws);
  if (!lens) return fail(lens.error());
  const research::LensCell& last = lens->cell(lens->entries - 1, T - 1);
  std::printf("next token after the last: \"%s\" (p = %.3f); library %s\n", tok->token_bytes(last.top[0].id).c_str(),
              last.top[0].prob, library_version());
  return 0;
}
