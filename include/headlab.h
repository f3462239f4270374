// headlab.h — the installed library's public header set: load a model, tokenize, run it with a
// record or TransformerLens's hooks, intervene, and every research-toolbox measure. It includes
// the parts' own headers (installed under include/headlab/ as the source tree lays them out);
// each of those opens with its example and states its function's errors. This file states the
// contracts they share.
//
//   #include "headlab.h"                        // g++ -std=c++20 $(pkg-config --cflags --libs headlab)
//   using namespace headlab;
//   Result<model::Parameters> params = model::model_load("models/headlab-tiny");   // or a .gguf
//   Result<model::BpeTokenizer> tok = model::model_tokenizer_load("models/headlab-tiny");
//   if (!params || !tok) return 1;                 // .error().message says what and how to fix it
//   auto in = analysis::run_input_from_text(*tok, params->config, "When Mary and John", {});
//   auto sel = research::hook_select(params->config, "blocks.*.attn.hook_pattern");
//   model::Workspace ws;                           // one per thread
//   auto cache = research::cache_run(*params, {in->ids()}, *sel, {}, ws);
//   const research::CachedTensor* p = cache->find("blocks.0.attn.hook_pattern");   // (1, NH, T, T)
//
// Contracts
//   Errors are values. Every function that can fail for a reason its caller can act on (a
//     missing file, a corrupt header, a bad id, a text longer than n_ctx, a head that does not
//     exist) returns Result<T> / Status (util/result.h: tl::expected<T, Error>); Error::code
//     says which kind (invalid_argument, too_long, not_found, corrupt, unsupported, ...) and
//     Error::message is a sentence for a person. Nothing is thrown for those; std::bad_alloc
//     may still escape where memory runs out, and an assert (file:line, abort) is a bug of
//     ours — a program's own bad shapes, never input a program passes through.
//   Ownership. Results are values the caller owns. model::Parameters owns the weights and is
//     move-only (a loader's packed weights may be a mapped cache file, owned by it); a
//     function that reads a model takes `const Parameters&` and keeps no reference after it
//     returns. research::ActivationCache's tensors are spans into one block it shares
//     (ActivationCache::memory, a shared_ptr): a copy of the cache, or of that shared_ptr,
//     keeps the values alive. model::ForwardHooks' callbacks see views valid during the call only.
//   Thread safety. A const Parameters and a const BpeTokenizer may be used by many threads
//     at once (the server's workers share one). A model::Workspace is one thread's scratch:
//     give each thread its own. The engine's one thread pool (model/thread_pool.h) splits a
//     product over the cores; a call made while it is busy runs its work on the calling
//     thread, so concurrent calls are correct, not faster. Callbacks (hooks, progress) run on
//     the thread that called.
//   Numbers. float32 throughout; --dtype bf16/f16 (LoadOptions::dtype) rounds the matrices on
//     load, --compute bf16 the products' inputs; everything else is the same float32 code.
//
// What is where (each header's opening comment has its example):
//   formats/model_files.h       model_load, model_tokenizer_load, model_describe: a Hugging Face
//                               folder (GPT-2, GPT-NeoX, Llama, Mistral, Qwen 2/3, Gemma 2/3) or a .gguf
//   tokenizer/bpe_tokenizer.h   text <-> ids
//   analysis/run_text.h         text -> the model's input by the BOS rule; run_model ("headlab run")
//   model/forward.h             forward with an activation record and head interventions
//   model/hooks.h               TransformerLens's hook points: read or change any activation
//   research/cache.h            run_with_cache under TL's names and shapes ("headlab cache")
//   research/patching.h         activation patching; path_patching.h: path patching
//   research/patch_input.h      patching's prompt pairs from text
//   research/lens.h             the logit lens;  attribution.h: direct logit attribution
//   research/text_measures.h    the lens and the attribution from text and answer tokens
//   research/composition.h      Q/K/V-composition scores, OV/QK circuits, copying scores
//   research/steering.h         steering vectors, ActAdd;  intervene.h: a run with and without
//   analysis/scan_text.h        the head scanner ("headlab scan")
#pragma once

#include "analysis/run_text.h"
#include "analysis/scan_text.h"
#include "formats/model_files.h"
#include "model/forward.h"
#include "model/hooks.h"
#include "model/parameters.h"
#include "research/attribution.h"
#include "research/cache.h"
#include "research/composition.h"
#include "research/hook_select.h"
#include "research/intervene.h"
#include "research/lens.h"
#include "research/patch_input.h"
#include "research/patching.h"
#include "research/path_patching.h"
#include "research/prompts.h"
#include "research/steering.h"
#include "research/text_measures.h"
#include "tokenizer/bpe_tokenizer.h"
#include "util/result.h"

namespace headlab {
// The installed library's version ("0.1.0").
const char* library_version();
}  // namespace headlab
