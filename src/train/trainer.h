// train/trainer.h — the training loop behind `headlab train`:
//   load config + tokenizer -> tokenise corpus (BOS between documents) and held-out text
//   -> for each step: fill a batch from the data mix, forward, backward, clip, AdamW
//   -> every log_every steps a log row; every eval_every steps the held-out loss and the
//      head scanner's best induction / previous-token / first-token scores; every
//      checkpoint_every steps (and at the end, and on Ctrl-C or SIGTERM) a checkpoint.
// Everything that can be refused (missing or empty corpus, a config whose vocabulary
// does not match the tokenizer, a run that does not fit in memory) is refused by
// train_prepare before the first step.
//
//   TrainOptions o;  o.config_path = "models/headlab-tiny/train_config.json"; ...
//   Result<TrainSession> s = train_prepare(o);
//   if (!s) return fail(s.error());
//   Result<TrainSummary> r = train_run(*s, progress);
//
// The output directory is a Hugging Face GPT-2 model directory (config.json,
// model.safetensors, vocab.json, merges.txt) plus heldout.txt (the held-out text, where
// `headlab scan` and the server find the scanner's natural text), train_state.bin (AdamW
// moments, step, random state: what --resume needs), train_log.csv and train_log.json.
// Text is tokenised by the model's own tokenizer (model::BpeTokenizer), each document as
// plain text (an "<|endoftext|>" inside a file is not the special token).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "train/adamw.h"
#include "train/data.h"
#include "train/gpt_train.h"
#include "train/lr_schedule.h"
#include "train/rng.h"
#include "train/train_log.h"
#include "util/result.h"

namespace headlab::train {

struct TrainOptions {
  std::string config_path;               // config.json of the model to train (from scratch)
  std::string tokenizer_dir;             // vocab.json + merges.txt
  std::vector<std::string> corpus;       // text files or directories of *.txt; a file = a document
  std::vector<std::string> heldout;      // evaluation text, never trained on (may be empty)
  std::string out_dir;
  int steps = 1000;
  int batch = 16;
  int context = 0;                       // T; 0: the config's n_ctx
  float lr = 1e-3f;
  int warmup = 100;
  LrDecay decay = LrDecay::cosine;
  float min_lr_fraction = 0.1f;
  float weight_decay = 0.1f;             // on matrices and embeddings, not biases or LayerNorm
  float grad_clip = 1.0f;                // global norm; 0 turns it off
  AdamWOptions adamw;
  std::uint64_t seed = 1;
  // Standard deviation of the initial weights: GPT-2's 0.02 when 0. A larger one shortens
  // the plateau before attention circuits (previous-token, induction) form in small models.
  float init_std = 0.0f;
  // > 0: position embeddings start as Vaswani et al.'s sinusoids of this amplitude (neighbouring
  // positions alike, so attention by relative offset is within one linear map's reach)
  // instead of random values; they are trained like any weight.
  float sinusoid_positions = 0.0f;
  // How the model knows where a token is, over the config's choice (config.json's
  // headlab_positions, learned when absent): "learned" (GPT-2's wpe), "rotary" (q and k
  // turned by position, NeoX halves; Su et al. 2021) or "none" (only the causal mask tells
  // positions apart; Haviv et al. 2022). Empty: the config's.
  std::string positions;
  float rope_theta = 0.0f;       // rotary: the frequencies' base theta; 0: the config's (10,000)
  float rotary_fraction = 0.0f;  // rotary: the fraction of each head's channels turned; 0: the config's (all)
  DataMix mix;
  int log_every = 10;
  int eval_every = 100;                  // 0: never (only at the end)
  int checkpoint_every = 500;            // 0: only at the end
  bool resume = false;
  bool force = false;                    // replace a model or run already in out_dir (refused without it)
  std::size_t max_memory_bytes = std::size_t(16) << 30;
};

struct TrainSession {
  TrainOptions options;
  TrainModel model;
  std::vector<float> m, v;        // AdamW moments (parameters_count)
  std::vector<int> corpus_tokens;
  std::vector<int> heldout_tokens;
  std::string heldout_text;       // the held-out files joined by <|endoftext|> (heldout.txt)
  std::vector<bool> is_punct_by_id;  // (V)
  int step = 0;                   // steps done (> 0 after --resume)
  Rng rng{1};
  std::vector<TrainLogRecord> log;  // rows so far (kept across --resume)
};

// Everything before the first step. Errors (each names the file or the option):
// not_found / invalid_argument for a missing or empty corpus or held-out file, a missing
// tokenizer or config; invalid_argument for a number that is not finite or out of range
// (--lr nan, --lr 0, --init-std -1, a mix fraction above 1); invalid_argument for a config whose vocab_size differs from the
// tokenizer's or a corpus shorter than one window; invalid_argument for --positions other than
// learned, rotary or none, --rope-theta or --rotary-fraction without rotary positions (or out of
// range), --sinusoid-positions without learned ones, and on --resume a position setting that
// differs from the checkpoint's; unsupported for a config the trainer cannot train
// (train_model_create); too_long when the run needs more
// memory than max_memory_bytes; corrupt / not_found for a bad --resume directory.
Result<TrainSession> train_prepare(const TrainOptions& options);

// What the loop reports after each step (the CLI draws the progress bar from it).
struct TrainProgress {
  int step = 0, total = 0;
  double loss = 0.0;           // this step's
  double tokens_per_s = 0.0;   // smoothed
  double eta_s = 0.0;
  const TrainLogRecord* record = nullptr;  // set on the steps that wrote a log row
};
using ProgressCallback = std::function<void(const TrainProgress&)>;

struct TrainSummary {
  int steps_done = 0;
  bool interrupted = false;  // stopped by train_request_stop (Ctrl-C, SIGTERM); a checkpoint was saved
  double final_loss = 0.0;
  TrainLogRecord last;
};

// Runs from session.step to options.steps. Errors: io_error writing a checkpoint or a log.
Result<TrainSummary> train_run(TrainSession& session, const ProgressCallback& progress);

// One optimiser step on the gradients in m.grads: clip the global norm to
// options.grad_clip, then AdamW (decay on matrices and embeddings only) with the learning
// rate of `step` (counting from 0). mom and vel are AdamW's moments. Returns the norm
// before clipping.
double optimizer_step(TrainModel& m, std::vector<float>& mom, std::vector<float>& vel, const TrainOptions& options,
                      int step);

// Asks a running train_run to save a checkpoint and stop after the current step
// (async-signal-safe: the CLI's SIGINT and SIGTERM handler calls it).
void train_request_stop();

// Writes the checkpoint (model, tokenizer, optimiser state, logs) of the session.
Status train_save_checkpoint(const TrainSession& session);

// The log as JSON text, with the options and the config, for the record (the CSV:
// train_log_csv in train/train_log.h).
std::string train_log_json(const TrainSession& session);

}  // namespace headlab::train
