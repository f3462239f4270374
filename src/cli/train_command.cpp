// cli/train_command.cpp — `headlab train`: trains a model from scratch with a progress bar,
// logs and checkpoints (train/trainer.h), or redraws a training log as SVG (--plot).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <new>
#include <sstream>

#include "cli/commands.h"
#include "cli/whole_number.h"
#include "formats/hf/config_json.h"
#include "model/blas.h"
#include "model/config.h"
#include "model/parameters.h"
#include "train/trainer.h"
#include "util/file.h"
#include "train/train_plot.h"

namespace headlab::cli {
namespace {

struct TrainCliOptions {
  train::TrainOptions train;
  std::string decay = "cosine";
  bool quiet = false;
  std::string plot;      // a train_log.csv to redraw
  std::string plot_out;  // the SVG to write
};

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  const int t = static_cast<int>(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", t / 3600, (t / 60) % 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%dm%02ds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ds", t);
  return buf;
}

// Ctrl-C (SIGINT) and SIGTERM (what `kill`, systemd and container runtimes send) both ask
// the loop to save a checkpoint and stop; the exit status then says which (128 + signal).
volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) {
  g_stop_signal = sig;
  train::train_request_stop();
}

std::string positions_description(const model::ModelConfig& c) {
  using P = model::ModelConfig::Positions;
  if (c.positions == P::none) return "no positions";
  if (c.positions == P::learned) return "learned positions";
  char buf[96];
  std::snprintf(buf, sizeof buf, "rotary positions (theta %g, %d of %d channels per head)", double(c.rope_theta),
                c.rotary_size(), c.head_size());
  return buf;
}

int run_plot(const TrainCliOptions& o) {
  auto log = file_read(o.plot);
  if (!log) return print_error("cannot read the training log: " + log.error().message);
  auto svg = train::train_log_svg(*log, o.plot);
  if (!svg) return print_error(svg.error().message);
  const std::string out = o.plot_out.empty() ? "train_log.svg" : o.plot_out;
  if (auto s = file_write(out, *svg); !s) return print_error(s.error().message);
  std::fprintf(stderr, "wrote %s\n", out.c_str());
  return 0;
}

int run_train_or_throw(TrainCliOptions& o) {
  if (!o.plot.empty()) return run_plot(o);
  auto decay = train::lr_decay_from_name(o.decay);
  if (!decay) return print_error(decay.error().message, 2);
  o.train.decay = *decay;
  if (!o.train.resume && o.train.config_path.empty())
    return print_error("--config is required (the model's config.json), unless --resume", 2);
  if (!o.train.resume && o.train.tokenizer_dir.empty())
    return print_error("--tokenizer is required (a directory with vocab.json + merges.txt), unless --resume", 2);

  auto session = train::train_prepare(o.train);
  if (!session) return print_error(session.error().message, session.error().code == ErrorCode::invalid_argument ? 2 : 1);
  const bool tty = isatty(STDERR_FILENO);
  if (!o.quiet) {
    const auto& c = session->model.config;
    std::fprintf(stderr,
                 "training %d layers x %d heads, C = %d, %s, %s, V = %d on batch %d x %d tokens; corpus %zu tokens, "
                 "held out %zu%s\n",
                 c.n_layer, c.n_head, c.n_embd, c.mlp ? "with MLP" : "attention-only", positions_description(c).c_str(),
                 c.vocab_size, session->model.B,
                 session->model.T, session->corpus_tokens.size(), session->heldout_tokens.size(),
                 session->step > 0 ? (", resuming at step " + std::to_string(session->step)).c_str() : "");
    std::fprintf(stderr, "matrix products on %s\n", model::blas_kernels_description().c_str());
  }
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  auto progress = [&](const train::TrainProgress& p) {
    if (o.quiet) return;
    if (p.record && p.record->evaluated) {
      if (tty) std::fprintf(stderr, "\r\033[K");
      std::fprintf(stderr,
                   "step %d: loss %.3f, held-out %.3f | best heads: induction %.2f, previous-token %.2f, "
                   "first-token %.2f | in-context ratio %.2f\n",
                   p.step, p.record->loss, p.record->eval_loss, p.record->induction, p.record->previous_token,
                   p.record->first_token, p.record->icl_ratio);
    }
    if (tty) {
      const int width = 24, filled = p.total > 0 ? width * p.step / p.total : 0;
      std::string bar(filled, '#');
      bar += std::string(width - filled, '-');
      std::fprintf(stderr, "\r\033[Kstep %d/%d [%s] loss %.3f | %.0f tok/s | ETA %s", p.step, p.total, bar.c_str(),
                   p.loss, p.tokens_per_s, format_duration(p.eta_s).c_str());
      if (p.step == p.total) std::fprintf(stderr, "\n");
    } else if (p.record && !p.record->evaluated) {
      std::fprintf(stderr, "step %d/%d loss %.3f | %.0f tok/s | ETA %s\n", p.step, p.total, p.record->loss,
                   p.record->tokens_per_s, format_duration(p.eta_s).c_str());
    }
  };
  auto summary = train::train_run(*session, progress);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (!summary) return print_error(summary.error().message);
  if (summary->interrupted) {
    if (tty && !o.quiet) std::fprintf(stderr, "\n");
    const int sig = g_stop_signal != 0 ? static_cast<int>(g_stop_signal) : SIGINT;
    std::fprintf(stderr,
                 "interrupted (%s) at step %d: checkpoint saved in %s; continue with the same command and --resume\n",
                 sig == SIGTERM ? "SIGTERM" : "Ctrl-C", summary->steps_done, o.train.out_dir.c_str());
    return 128 + sig;
  }
  if (!o.quiet)
    std::fprintf(stderr, "done: %d steps, last loss %.3f -> %s (config.json, model.safetensors, vocab.json, merges.txt, "
                 "%strain_log.csv, train_log.json)\n",
                 summary->steps_done, summary->last.loss, o.train.out_dir.c_str(),
                 session->heldout_text.empty() ? "" : "heldout.txt, ");
  return 0;
}

// Said when an allocation of the trainer fails: how much the config's weights need to train.
std::string training_memory_message(const TrainCliOptions& o) {
  const std::string config_path = o.train.resume ? o.train.out_dir + "/config.json" : o.train.config_path;
  auto config = model::config_load(config_path);
  if (!config) return "out of memory while preparing the training run";
  // weights, their gradients and AdamW's two moments: four float32 copies, before activations
  const double gb = 16.0 * double(model::parameters_count(*config)) / double(1ull << 30);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GB", gb);
  return "out of memory: training " + config_path + " needs about " + buf + " for its " +
         std::to_string(model::parameters_count(*config)) +
         " weights, their gradients and AdamW's moments alone (more for the activations); choose a smaller config";
}

int run_train(TrainCliOptions& o) {
  try {
    return run_train_or_throw(o);
  } catch (const std::bad_alloc&) {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    return print_error(training_memory_message(o));
  }
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<TrainCliOptions>();
  train::TrainOptions& t = opts->train;
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train a GPT-2-family model from scratch on text (and on repeated spans, so that\n"
      "induction heads form). Shows a progress bar; Ctrl-C or SIGTERM saves a checkpoint and\n"
      "stops; --resume continues exactly. Writes a Hugging Face model directory plus\n"
      "heldout.txt (the --heldout text, which `headlab scan` and the server read), train_log.csv\n"
      "and train_log.json (loss, held-out loss, the best heads' scores).\n\n"
      "Positions: learned (wpe, GPT-2's), rotary (RoPE) or none (--positions); the written\n"
      "config.json says which (headlab_positions), and headlab's engine runs it as trained.\n\n"
      "Examples:\n"
      "  headlab train --config models/headlab-tiny/train_config.json --tokenizer models/headlab-tiny \\\n"
      "      --corpus data/corpus/build/sotu --heldout data/corpus/build/heldout --out /tmp/tiny --steps 3000\n"
      "  headlab train ... --positions rotary --rope-theta 10000 --out /tmp/tiny-rope\n"
      "  headlab train --plot models/headlab-tiny/train_log.csv --plot-out curve.svg");
  cmd->add_option("--config", t.config_path, "config.json of the model to train");
  cmd->add_option("--tokenizer", t.tokenizer_dir, "Directory with vocab.json + merges.txt (headlab train-tokenizer)");
  cmd->add_option("--corpus", t.corpus, "Training text: files or directories of .txt (a file is a document)");
  cmd->add_option("--heldout", t.heldout, "Evaluation text, never trained on (copied to <out>/heldout.txt)");
  cmd->add_option("--out", t.out_dir, "Output model directory (checkpoints and logs)");
  cmd->add_option("--steps", t.steps, "Optimiser steps")->capture_default_str();
  cmd->add_option("--batch", t.batch, "Sequences per step")->capture_default_str();
  cmd->add_option("--context", t.context, "Tokens per sequence (0: the config's n_ctx)")
      ->check(whole_number_from(0))
      ->capture_default_str();
  cmd->add_option("--lr", t.lr, "Peak learning rate (a finite number > 0)")->capture_default_str();
  cmd->add_option("--warmup", t.warmup, "Linear warm-up steps")->capture_default_str();
  cmd->add_option("--decay", opts->decay, "After warm-up: cosine or constant")->capture_default_str();
  cmd->add_option("--min-lr-fraction", t.min_lr_fraction, "Cosine floor, as a fraction of --lr")->capture_default_str();
  cmd->add_option("--weight-decay", t.weight_decay, "AdamW decay of matrices and embeddings")->capture_default_str();
  cmd->add_option("--grad-clip", t.grad_clip, "Clip the global gradient norm (0: off)")->capture_default_str();
  cmd->add_option("--seed", t.seed, "Initialisation and data order (0 to 18446744073709551615)")
      ->check(whole_number_u64())
      ->capture_default_str();
  cmd->add_option("--init-std", t.init_std, "Std of the initial weights (0: GPT-2's 0.02)")->capture_default_str();
  cmd->add_option("--sinusoid-positions", t.sinusoid_positions,
                  "Start the position embeddings as sinusoids of this amplitude (0: random, as GPT-2)")
      ->capture_default_str();
  cmd->add_option("--positions", t.positions,
                  "How the model knows where a token is (default: the config's, learned unless its config.json\n"
                  "sets headlab_positions):\n"
                  "  learned  GPT-2's wpe: a trained vector per position added to the token's; cannot read\n"
                  "           past n_ctx, the last position it has a vector for\n"
                  "  rotary   RoPE (Su et al. 2021): q and k of every head turned by position x frequency,\n"
                  "           so q.k depends on the offset between two tokens (NeoX halves pairing)\n"
                  "  none     no positions: only the causal mask tells positions apart, and models still\n"
                  "           learn where they are from it (Haviv et al. 2022)")
      ->check(CLI::IsMember({"learned", "rotary", "none"}));
  cmd->add_option("--rope-theta", t.rope_theta,
                  "Rotary: the base theta of the frequencies theta^(-2i/d); a larger base turns slower and\n"
                  "reaches further (GPT-NeoX 10000, Llama 3 500000; 0: the config's, 10000)")
      ->capture_default_str();
  cmd->add_option("--rotary-fraction", t.rotary_fraction,
                  "Rotary: the fraction of each head's channels turned, the rest left as they are\n"
                  "(Pythia turns 0.25; 0: the config's, all of the head)")
      ->capture_default_str();
  cmd->add_option("--copied-span", t.mix.copied_span, "Fraction of text windows with a span copied later")
      ->capture_default_str();
  cmd->add_option("--repeated-random", t.mix.repeated_random, "Fraction of windows of repeated random tokens")
      ->capture_default_str();
  cmd->add_option("--previous-token", t.mix.previous_token,
                  "Fraction of windows whose every token follows from the one two back (grows previous-token heads)")
      ->capture_default_str();
  cmd->add_option("--markov", t.mix.markov,
                  "Fraction of windows walked on a Markov chain drawn per window (grows previous-token + induction heads)")
      ->capture_default_str();
  cmd->add_option("--markov-min-states", t.mix.markov_min_states, "Fewest states of a window's Markov chain")
      ->capture_default_str();
  cmd->add_option("--markov-max-states", t.mix.markov_max_states, "Most states of a window's Markov chain")
      ->capture_default_str();
  cmd->add_option("--markov-alpha", t.mix.markov_alpha,
                  "Dirichlet concentration of the chain's transition rows (small: peaked rows)")
      ->capture_default_str();
  cmd->add_option("--text-from-step", t.mix.text_from_step,
                  "Curriculum: before this step only the synthetic windows (--markov, --repeated-random, --previous-token)")
      ->capture_default_str();
  cmd->add_option("--min-span", t.mix.min_span, "Shortest copied span / repeat period")->capture_default_str();
  cmd->add_option("--max-span", t.mix.max_span, "Longest copied span / repeat period")->capture_default_str();
  cmd->add_option("--log-every", t.log_every, "Steps between log rows")->check(whole_number_from(1))->capture_default_str();
  cmd->add_option("--eval-every", t.eval_every, "Steps between held-out loss + head scores (0: only at the end)")
      ->check(whole_number_from(0))
      ->capture_default_str();
  cmd->add_option("--checkpoint-every", t.checkpoint_every, "Steps between checkpoints (0: only at the end)")
      ->check(whole_number_from(0))
      ->capture_default_str();
  cmd->add_flag("--resume", t.resume,
                "Continue the run in --out from its last checkpoint, with the run's own options (one that differs is "
                "refused; more --steps extend a run with --decay constant)");
  cmd->add_flag("--force", t.force, "Replace the model or run already in --out (refused without it)");
  cmd->add_flag("--quiet", opts->quiet, "No progress output (errors only)");
  cmd->add_option("--plot", opts->plot, "Redraw a train_log.csv as SVG instead of training");
  cmd->add_option("--plot-out", opts->plot_out, "The SVG file --plot writes")->capture_default_str();
  cmd->callback([opts, cmd, &exit_code] {
    // --plot redraws a log and trains nothing: an option of the other mode was ignored
    if (opts->plot.empty() && cmd->count("--plot-out")) {
      exit_code = print_error("--plot-out names the SVG of --plot: give --plot LOG.csv too (training writes none)", 2);
      return;
    }
    if (!opts->plot.empty())
      for (const CLI::Option* option : cmd->get_options())
        if (option->count() && option->get_name() != "--plot" && option->get_name() != "--plot-out" &&
            option->get_name() != "--help") {
          exit_code = print_error(option->get_name() + " is a training option; --plot only redraws a log (it takes "
                                  "--plot-out)", 2);
          return;
        }
    exit_code = run_train(*opts);
  });
}

}  // namespace headlab::cli
