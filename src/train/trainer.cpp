// train/trainer.cpp — preparation (every refusal before work starts), the loop, logs and
// checkpoints with the optimiser state that --resume needs.
#include "formats/model_files.h"
#include "train/trainer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "analysis/scan_text.h"
#include "core/sentence.h"
#include "formats/hf/checkpoint.h"
#include "model/config.h"
#include "model/thread_pool.h"
#include "tokenizer/bpe_tokenizer.h"
#include "train/parallel.h"
#include "util/file.h"

namespace headlab::train {
namespace fs = std::filesystem;

namespace {

std::atomic<bool> g_stop_requested{false};

constexpr char kStateMagic[8] = {'H', 'L', 'T', 'R', 'N', 'S', 'T', '1'};

// The text files a --corpus / --heldout argument names: the file, or a directory's *.txt
// files in name order.
Result<std::vector<std::string>> list_text_files(const std::string& path, const char* what) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return make_error(ErrorCode::not_found, std::string(what) + " " + path + " does not exist");
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty())
      return make_error(ErrorCode::invalid_argument, std::string(what) + " directory " + path + " holds no .txt file");
  } else {
    files.push_back(path);
  }
  return files;
}

struct Documents {
  std::vector<int> tokens;  // BOS between documents
  std::string text;         // with keep_text: the documents joined by <|endoftext|>
};

// Tokenises each document as plain text (an "<|endoftext|>" inside a file is text, as in
// GPT-2's encode_ordinary: only the trainer puts BOS between documents).
Result<Documents> tokenize_documents(const std::vector<std::string>& paths, const model::BpeTokenizer& tokenizer,
                                     int bos, const char* what, bool keep_text) {
  Documents docs;
  std::vector<int>& tokens = docs.tokens;
  std::size_t bytes = 0;
  for (const std::string& arg : paths) {
    auto files = list_text_files(arg, what);
    if (!files) return tl::unexpected(files.error());
    for (const std::string& f : *files) {
      auto text = file_read(f);
      if (!text) return tl::unexpected(text.error());
      if (!core::is_valid_utf8(*text))
        return make_error(ErrorCode::invalid_argument, std::string(what) + " file " + f + " is not valid UTF-8 text");
      bytes += text->size();
      if (text->empty()) continue;
      if (!tokens.empty()) tokens.push_back(bos);
      if (Status st = tokenizer.encode_append(*text, tokens, {.special = false}); !st)
        return make_error(st.error().code, std::string(what) + " file " + f + ": " + st.error().message);
      if (keep_text) {
        if (!docs.text.empty()) docs.text += model::kEndOfText;
        docs.text += *text;
      }
    }
  }
  if (bytes == 0)
    return make_error(ErrorCode::invalid_argument, std::string(what) + " is empty: no text to train or evaluate on");
  return docs;
}

std::vector<std::size_t> decayed_tensors() {
  // matrices and embeddings decay (nanoGPT: every parameter of 2 or more dimensions)
  return {0, 1, 4, 6, 10, 12, 16};  // wte, wpe, qkvw, attprojw, fcw, fcprojw, lm_head
}

Status write_file_atomic(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) return make_error(ErrorCode::io_error, "cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return make_error(ErrorCode::io_error, "cannot rename " + tmp + " to " + path + ": " + ec.message());
  return {};
}

nlohmann::ordered_json options_json(const TrainOptions& o) {
  nlohmann::ordered_json j;
  j["config"] = o.config_path;
  j["tokenizer"] = o.tokenizer_dir;
  j["corpus"] = o.corpus;
  j["heldout"] = o.heldout;
  j["steps"] = o.steps;
  j["batch"] = o.batch;
  j["context"] = o.context;
  j["lr"] = o.lr;
  j["warmup"] = o.warmup;
  j["decay"] = o.decay == LrDecay::cosine ? "cosine" : "constant";
  j["min_lr_fraction"] = o.min_lr_fraction;
  j["weight_decay"] = o.weight_decay;
  j["grad_clip"] = o.grad_clip;
  j["seed"] = o.seed;
  j["init_std"] = o.init_std;
  j["sinusoid_positions"] = o.sinusoid_positions;
  j["positions"] = o.positions;
  j["rope_theta"] = o.rope_theta;
  j["rotary_fraction"] = o.rotary_fraction;
  j["copied_span"] = o.mix.copied_span;
  j["repeated_random"] = o.mix.repeated_random;
  j["previous_token"] = o.mix.previous_token;
  j["markov"] = o.mix.markov;
  j["markov_min_states"] = o.mix.markov_min_states;
  j["markov_max_states"] = o.mix.markov_max_states;
  j["markov_alpha"] = o.mix.markov_alpha;
  j["text_from_step"] = o.mix.text_from_step;
  j["min_span"] = o.mix.min_span;
  j["max_span"] = o.mix.max_span;
  return j;
}

// --resume continues a run exactly: its options are the ones train_log.json kept. Another
// --lr, --batch, --seed, --corpus or --steps was taken silently (a new --steps moved the
// cosine schedule; fewer steps than done ended "done" having done nothing). --config and
// --tokenizer are not read on --resume (the run's folder holds both).
Status resume_options_check(const TrainOptions& o) {
  const std::string path = o.out_dir + "/train_log.json";
  auto text = file_read(path);
  if (!text) return {};  // no log yet (stopped before its first row): the state file decides
  const auto kept = nlohmann::ordered_json::parse(*text, nullptr, false);
  if (kept.is_discarded() || !kept.contains("options") || !kept["options"].is_object()) return {};
  const nlohmann::ordered_json now = options_json(o);
  std::string differ;
  for (auto it = kept["options"].begin(); it != kept["options"].end(); ++it) {
    if (it.key() == "config" || it.key() == "tokenizer" || !now.contains(it.key()) || now[it.key()] == it.value()) continue;
    // more steps extend a run whose learning rate is constant; a cosine is laid over --steps
    if (it.key() == "steps" && o.decay == LrDecay::constant) continue;
    std::string flag = "--" + it.key();
    for (char& c : flag) c = c == '_' ? '-' : c;
    differ += (differ.empty() ? "" : ", ") + flag + " " + now[it.key()].dump() + " (the run's: " + it.value().dump() + ")";
  }
  if (differ.empty()) return {};
  return make_error(ErrorCode::invalid_argument, "--resume continues the run in " + o.out_dir +
                                                     " with its own options, and these differ from them (" + path +
                                                     "): " + differ + ". Give the run's, or start a new run in another folder");
}

// The held-out loss on fixed windows (the same every evaluation: a fixed seed).
double eval_loss(TrainModel& m, const std::vector<int>& heldout, int bos) {
  if (static_cast<int>(heldout.size()) < m.T) return std::numeric_limits<double>::quiet_NaN();
  Rng rng(12345);
  Batch b = batch_allocate(m.B, m.T);
  double sum = 0.0;
  const int rounds = 2;
  for (int r = 0; r < rounds; ++r) {
    batch_fill(b, heldout, DataMix{}, m.config.vocab_size, bos, rng);
    sum += train_forward(m, b.inputs.data(), b.targets.data());
  }
  return sum / rounds;
}

enum class Bound { inclusive, exclusive };

// invalid_argument unless value is a finite number >= min (> min when exclusive) and <= max.
Status require_number(double value, const char* name, double min, Bound bound = Bound::inclusive,
                      double max = std::numeric_limits<double>::max()) {
  char got[64];
  std::snprintf(got, sizeof got, "%g", value);
  if (!std::isfinite(value))
    return make_error(ErrorCode::invalid_argument, std::string(name) + " must be a finite number, got " + got);
  const bool low = bound == Bound::exclusive ? !(value > min) : !(value >= min);
  if (low || value > max) {
    char range[96];
    if (max < std::numeric_limits<double>::max())
      std::snprintf(range, sizeof range, "in [%g, %g]", min, max);
    else
      std::snprintf(range, sizeof range, bound == Bound::exclusive ? "> %g" : ">= %g", min);
    return make_error(ErrorCode::invalid_argument, std::string(name) + " must be " + range + ", got " + got);
  }
  return {};
}

}  // namespace

void train_request_stop() { g_stop_requested.store(true); }

double optimizer_step(TrainModel& m, std::vector<float>& mom, std::vector<float>& vel, const TrainOptions& o,
                      int step) {
  // the norm's sum by parts over the pool, the parts added in order
  float* g = m.grads_memory.data();
  const std::size_t n = m.grads_memory.size();
  const int parts = model::thread_pool_size();
  std::vector<double> part_sums(parts, 0.0);
  for_numbered_parts(n, parts, [&](int part, std::size_t i0, std::size_t i1) {
    part_sums[part] = grad_sum_of_squares(g + i0, i1 - i0);
  });
  double sum = 0.0;
  for (double s : part_sums) sum += s;
  const double norm = std::sqrt(sum);
  const float clip = clip_factor(norm, o.grad_clip);
  if (clip != 1.0f)
    for_parts(n, [&](std::size_t i0, std::size_t i1) {
      for (std::size_t i = i0; i < i1; ++i) g[i] *= clip;
    });
  const LrSchedule schedule{o.lr, o.warmup, o.steps, o.decay, o.min_lr_fraction};
  const float lr = learning_rate_at(schedule, step);
  auto sizes = model::parameters_sizes(m.config);
  std::vector<float> decay_of(model::kNumParameterTensors, 0.0f);
  for (std::size_t t : decayed_tensors()) decay_of[t] = o.weight_decay;
  auto params = model::parameters_list(m.params.t);
  auto grads = model::parameters_list(m.grads);
  std::size_t offset = 0;
  for (int t = 0; t < model::kNumParameterTensors; ++t) {
    if (sizes[t] > 0)
      for_parts(sizes[t], [&](std::size_t i0, std::size_t i1) {
        adamw_update(params[t] + i0, mom.data() + offset + i0, vel.data() + offset + i0, grads[t] + i0, i1 - i0, lr,
                     decay_of[t], step + 1, o.adamw);
      }, 8);
    offset += sizes[t];
  }
  return norm;
}

namespace {

// The config with the run's position options applied (TrainOptions::positions). Errors:
// invalid_argument naming the option.
Result<model::ModelConfig> config_with_positions(model::ModelConfig c, const TrainOptions& o) {
  using P = model::ModelConfig::Positions;
  auto bad = [](const std::string& m) { return make_error(ErrorCode::invalid_argument, m); };
  if (!o.positions.empty()) {
    if (o.positions == "learned") c.positions = P::learned;
    else if (o.positions == "rotary") c.positions = P::rotary;
    else if (o.positions == "none") c.positions = P::none;
    else return bad("--positions must be learned, rotary or none, not \"" + o.positions + "\"");
  }
  if (c.positions != P::rotary && (o.rope_theta != 0.0f || o.rotary_fraction != 0.0f))
    return bad("--rope-theta and --rotary-fraction set rotary positions: add --positions rotary");
  if (c.positions != P::learned && o.sinusoid_positions > 0.0f)
    return bad("--sinusoid-positions starts the learned position embeddings (wpe): it needs --positions learned");
  if (o.rope_theta != 0.0f) {
    if (!std::isfinite(o.rope_theta) || !(o.rope_theta > 1.0f) || o.rope_theta > 1e12f)
      return bad("--rope-theta must be a number above 1 (GPT-NeoX uses 10000, Llama 3 500000)");
    c.rope_theta = o.rope_theta;
  }
  if (o.rotary_fraction != 0.0f) {
    const int HS = c.head_size();
    const bool in_range = std::isfinite(o.rotary_fraction) && o.rotary_fraction > 0.0f && o.rotary_fraction <= 1.0f;
    const int d = in_range ? static_cast<int>(std::lround(double(o.rotary_fraction) * HS)) : 0;
    if (d < 2 || d % 2 != 0)
      return bad("--rotary-fraction must give an even number of channels from 2 to the head size " +
                 std::to_string(HS) + " (fraction x " + std::to_string(HS) + ")");
    c.rotary_dim = d;
  }
  return c;
}

bool same_positions(const model::ModelConfig& a, const model::ModelConfig& b) {
  return a.positions == b.positions && a.rotary_size() == b.rotary_size() && a.rope_theta == b.rope_theta;
}

}  // namespace

Result<TrainSession> train_prepare(const TrainOptions& o) {
  if (o.steps < 1) return make_error(ErrorCode::invalid_argument, "--steps must be at least 1");
  if (o.batch < 1) return make_error(ErrorCode::invalid_argument, "--batch must be at least 1");
  if (o.out_dir.empty()) return make_error(ErrorCode::invalid_argument, "an output directory (--out) is required");
  // A new run into a folder that holds a model or a run replaced them, and left the old
  // heldout.txt beside the new weights: refused unless the caller says replace (--force).
  if (!o.resume && !o.force)
    for (const char* held : {"model.safetensors", "train_state.bin"}) {
      std::error_code ec;
      if (fs::exists(fs::path(o.out_dir) / held, ec))
        return make_error(ErrorCode::invalid_argument,
                          "--out " + o.out_dir + " already holds a " + (held[0] == 'm' ? "model" : "run") + " (" + held +
                              "): give a new folder, --resume to continue its run, or --force to replace it");
    }
  // NaN fails every comparison, so each number is checked as "finite and in range" (a
  // check of "< 0" alone lets nan through, and then every weight becomes NaN)
  if (Status st = require_number(o.lr, "--lr", 0.0, Bound::exclusive); !st) return tl::unexpected(st.error());
  if (Status st = require_number(o.init_std, "--init-std", 0.0); !st) return tl::unexpected(st.error());
  if (Status st = require_number(o.sinusoid_positions, "--sinusoid-positions", 0.0); !st)
    return tl::unexpected(st.error());
  if (Status st = require_number(o.min_lr_fraction, "--min-lr-fraction", 0.0, Bound::inclusive, 1.0); !st)
    return tl::unexpected(st.error());
  if (Status st = require_number(o.weight_decay, "--weight-decay", 0.0); !st) return tl::unexpected(st.error());
  if (Status st = require_number(o.grad_clip, "--grad-clip", 0.0); !st) return tl::unexpected(st.error());
  if (o.warmup < 0) return make_error(ErrorCode::invalid_argument, "--warmup must be >= 0");
  for (auto [value, name] : {std::pair{o.mix.copied_span, "--copied-span"}, {o.mix.repeated_random, "--repeated-random"},
                             {o.mix.previous_token, "--previous-token"}, {o.mix.markov, "--markov"}})
    if (Status st = require_number(value, name, 0.0, Bound::inclusive, 1.0); !st) return tl::unexpected(st.error());
  if (o.mix.copied_span + o.mix.repeated_random + o.mix.previous_token + o.mix.markov > 1)
    return make_error(ErrorCode::invalid_argument, "the data mix fractions must be >= 0 and sum to at most 1");
  if (o.mix.min_span < 1 || o.mix.max_span < o.mix.min_span)
    return make_error(ErrorCode::invalid_argument, "spans need 1 <= --min-span <= --max-span");
  if (o.mix.markov_min_states < 2 || o.mix.markov_max_states < o.mix.markov_min_states)
    return make_error(ErrorCode::invalid_argument, "Markov chains need 2 <= --markov-min-states <= --markov-max-states");
  if (o.mix.text_from_step < 0) return make_error(ErrorCode::invalid_argument, "--text-from-step must be >= 0");
  // data_mix_at_step: before the step only --markov, --repeated-random and --previous-token windows
  if (o.mix.text_from_step > 0 && o.mix.repeated_random + o.mix.previous_token + o.mix.markov == 0)
    return make_error(ErrorCode::invalid_argument,
                      "--text-from-step keeps the corpus out until that step, but no synthetic windows are asked for "
                      "to train on before it (it changed nothing): give --markov, --repeated-random or "
                      "--previous-token, or drop --text-from-step");
  if (!(o.mix.markov_alpha > 0) || o.mix.markov_alpha > 1000)
    return make_error(ErrorCode::invalid_argument, "--markov-alpha must be in (0, 1000]");
  const bool needs_corpus = o.mix.repeated_random + o.mix.previous_token + o.mix.markov < 1.0;
  if (needs_corpus && o.corpus.empty())
    return make_error(ErrorCode::invalid_argument,
                      "no --corpus given: name the training text, or train on repeated random tokens only "
                      "(--repeated-random, --previous-token and --markov summing to 1)");

  TrainSession s;
  s.options = o;
  // 1. the model's config (and, on --resume, the checkpoint's weights)
  const std::string resume_state = o.out_dir + "/train_state.bin";
  Result<model::ModelConfig> config = o.resume ? model::config_load(o.out_dir + "/config.json")
                                               : model::config_load(o.config_path);
  if (!config) return tl::unexpected(config.error());
  {
    auto placed = config_with_positions(*config, o);
    if (!placed) return tl::unexpected(placed.error());
    if (o.resume)
      if (Status st = resume_options_check(o); !st) return tl::unexpected(st.error());
    if (o.resume && !same_positions(*placed, *config))
      return make_error(ErrorCode::invalid_argument,
                        "--positions, --rope-theta or --rotary-fraction differ from the checkpoint's config.json in " +
                            o.out_dir + ": resume with the run's own options");
    config = std::move(*placed);
  }
  // 2. the tokenizer, which must be the model's
  const std::string tok_dir = o.resume ? o.out_dir : o.tokenizer_dir;
  // (GPT-2's two files: the checkpoint copies them next to the weights)
  for (const char* name : {"vocab.json", "merges.txt"})
    if (std::error_code ec; !fs::exists(fs::path(tok_dir) / name, ec))
      return make_error(ErrorCode::not_found, "no tokenizer file " + (fs::path(tok_dir) / name).string());
  auto tokenizer = model::model_tokenizer_load(tok_dir);
  if (!tokenizer) return tl::unexpected(tokenizer.error());
  const int V = config->vocab_size;
  if (tokenizer->vocab_size() != V)
    return make_error(ErrorCode::invalid_argument,
                      "the config's vocab_size is " + std::to_string(V) + " but the tokenizer in " + tok_dir + " has " +
                          std::to_string(tokenizer->vocab_size()) + " tokens");
  if (tokenizer->endoftext_id() < 0)
    return make_error(ErrorCode::invalid_argument, "the tokenizer in " + tok_dir + " has no <|endoftext|> token");
  if (config->bos_token_id != tokenizer->endoftext_id())
    return make_error(ErrorCode::invalid_argument, "the config's bos_token_id must be <|endoftext|>'s id " +
                                                       std::to_string(tokenizer->endoftext_id()));
  const int bos = config->bos_token_id;
  const int T = o.context > 0 ? o.context : config->n_ctx;
  if (T < 5 || T > config->n_ctx)  // the scanner's probes need 5 (it failed at the first evaluation, mid-run)
    return make_error(ErrorCode::invalid_argument, "--context " + std::to_string(T) + " is not from 5 to the config's n_ctx (" +
                                                       std::to_string(config->n_ctx) + ")");
  // 3. memory, before reading a byte of corpus
  auto model = train_model_create(*config, o.batch, T, o.max_memory_bytes);
  if (!model) return tl::unexpected(model.error());
  s.model = std::move(*model);
  // 4. the text
  if (needs_corpus || !o.corpus.empty()) {
    auto docs = tokenize_documents(o.corpus, *tokenizer, bos, "the corpus", /*keep_text=*/false);
    if (!docs) return tl::unexpected(docs.error());
    if (static_cast<int>(docs->tokens.size()) < T)
      return make_error(ErrorCode::invalid_argument, "the corpus has " + std::to_string(docs->tokens.size()) +
                                                         " tokens, fewer than one window of " + std::to_string(T));
    s.corpus_tokens = std::move(docs->tokens);
  }
  if (!o.heldout.empty()) {
    auto docs = tokenize_documents(o.heldout, *tokenizer, bos, "the held-out text", /*keep_text=*/true);
    if (!docs) return tl::unexpected(docs.error());
    s.heldout_tokens = std::move(docs->tokens);
    s.heldout_text = std::move(docs->text);
  }
  s.is_punct_by_id = analysis::punctuation_table(*tokenizer, V, bos);

  const std::size_t n = model::parameters_count(*config);
  s.m.assign(n, 0.0f);
  s.v.assign(n, 0.0f);
  if (!o.resume) {
    model::parameters_init_random(s.model.params, o.seed);
    if (o.init_std > 0.0f) {
      // every N(0, 0.02) tensor (and the residual projections with it) scaled to init_std
      const float scale = o.init_std / 0.02f;
      auto list = model::parameters_list(s.model.params.t);
      auto sizes = model::parameters_sizes(*config);
      for (int t : {0, 1, 4, 6, 10, 12, 16})
        for (std::size_t i = 0; i < sizes[t]; ++i) list[t][i] *= scale;
    }
    if (o.sinusoid_positions > 0.0f) {
      // wpe[t, 2i] = A sin(t / 10000^(2i/C)),  wpe[t, 2i+1] = A cos(...)      (n_ctx, C)
      float* wpe = s.model.params.t.wpe;
      const int C = config->n_embd;
      for (int t = 0; t < config->n_ctx; ++t)
        for (int i = 0; i + 1 < C; i += 2) {
          const double angle = t / std::pow(10000.0, double(i) / C);
          wpe[std::size_t(t) * C + i] = o.sinusoid_positions * static_cast<float>(std::sin(angle));
          wpe[std::size_t(t) * C + i + 1] = o.sinusoid_positions * static_cast<float>(std::cos(angle));
        }
    }
    s.rng = Rng(o.seed * 0x9E3779B97F4A7C15ull + 7);
    return s;
  }
  // 5. --resume: weights, optimiser moments, step, random state, the log so far
  auto params = model::model_load(o.out_dir, {.rows = true});  // float32 rows: the trainer changes them
  if (!params) return tl::unexpected(params.error());
  std::copy(params->memory.begin(), params->memory.end(), s.model.params.memory.begin());
  std::ifstream f(resume_state, std::ios::binary);
  if (!f) return make_error(ErrorCode::not_found, "cannot resume: no " + resume_state);
  char magic[8];
  std::uint64_t count = 0, rng_state = 0;
  std::int64_t step = 0;
  f.read(magic, 8);
  f.read(reinterpret_cast<char*>(&step), sizeof step);
  f.read(reinterpret_cast<char*>(&rng_state), sizeof rng_state);
  f.read(reinterpret_cast<char*>(&count), sizeof count);
  if (!f || std::memcmp(magic, kStateMagic, 8) != 0 || count != n)
    return make_error(ErrorCode::corrupt, resume_state + " is not a training state of this model");
  f.read(reinterpret_cast<char*>(s.m.data()), static_cast<std::streamsize>(n * sizeof(float)));
  f.read(reinterpret_cast<char*>(s.v.data()), static_cast<std::streamsize>(n * sizeof(float)));
  if (!f) return make_error(ErrorCode::corrupt, resume_state + " is truncated");
  s.step = static_cast<int>(step);
  s.rng.state = rng_state;
  if (o.steps <= s.step)  // it ended "done" having done nothing
    return make_error(ErrorCode::invalid_argument, "the run in " + o.out_dir + " has done " + std::to_string(s.step) +
                                                       " steps already; --steps " + std::to_string(o.steps) +
                                                       " adds none (give more, with --decay constant)");
  // the log rows so far
  if (auto text = file_read(o.out_dir + "/train_log.json")) {
    // a log that does not parse starts again empty, as before train_log.h
    auto rows = train_log_json_read(*text, o.out_dir + "/train_log.json");
    for (const TrainLogRecord& rec : rows ? *rows : std::vector<TrainLogRecord>{}) {
      if (rec.step > s.step) break;
      s.log.push_back(rec);
    }
  }
  return s;
}

Status train_save_checkpoint(const TrainSession& s) {
  const std::string& dir = s.options.out_dir;
  if (Status st = model::checkpoint_save(dir, s.model.params, model::Dtype::F32); !st) return st;
  // the tokenizer travels with the model (copied unless it already is the output dir)
  if (!s.options.resume && !s.options.tokenizer_dir.empty()) {
    std::error_code ec;
    for (const char* name : {"vocab.json", "merges.txt"}) {
      fs::path from = fs::path(s.options.tokenizer_dir) / name, to = fs::path(dir) / name;
      if (fs::exists(to, ec) && fs::equivalent(from, to, ec)) continue;
      fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
      if (ec) return make_error(ErrorCode::io_error, "cannot copy " + from.string() + " to " + dir + ": " + ec.message());
    }
  }
  // the held-out text, where `headlab scan` and the server look for the scanner's text
  // (rewritten only when it differs in size: the same file on every checkpoint)
  if (!s.heldout_text.empty()) {
    const std::string path = dir + "/heldout.txt";
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec || size != s.heldout_text.size())
      if (Status st = write_file_atomic(path, s.heldout_text); !st) return st;
  }
  std::string state(kStateMagic, 8);
  const std::int64_t step = s.step;
  const std::uint64_t rng_state = s.rng.state, count = s.m.size();
  state.append(reinterpret_cast<const char*>(&step), sizeof step);
  state.append(reinterpret_cast<const char*>(&rng_state), sizeof rng_state);
  state.append(reinterpret_cast<const char*>(&count), sizeof count);
  state.append(reinterpret_cast<const char*>(s.m.data()), s.m.size() * sizeof(float));
  state.append(reinterpret_cast<const char*>(s.v.data()), s.v.size() * sizeof(float));
  if (Status st = write_file_atomic(dir + "/train_state.bin", state); !st) return st;
  if (Status st = write_file_atomic(dir + "/train_log.csv", train_log_csv(s.log)); !st) return st;
  return write_file_atomic(dir + "/train_log.json", train_log_json(s));
}

std::string train_log_json(const TrainSession& s) {
  nlohmann::ordered_json j;
  j["options"] = options_json(s.options);
  j["config"] = nlohmann::json::parse(model::config_to_json(s.model.config), nullptr, false);
  j["log"] = nlohmann::ordered_json::parse(train_log_json_rows(s.log));
  return j.dump(1) + "\n";
}

Result<TrainSummary> train_run(TrainSession& s, const ProgressCallback& progress) {
  const TrainOptions& o = s.options;
  TrainModel& m = s.model;
  const int V = m.config.vocab_size, bos = m.config.bos_token_id;
  const LrSchedule schedule{o.lr, o.warmup, o.steps, o.decay, o.min_lr_fraction};
  Batch batch = batch_allocate(m.B, m.T);
  // natural text for the scanner: held-out text if any, else the corpus
  const std::vector<int>& scan_text = !s.heldout_tokens.empty() ? s.heldout_tokens : s.corpus_tokens;

  g_stop_requested.store(false);
  TrainSummary summary;
  const double elapsed_before = s.log.empty() ? 0.0 : s.log.back().elapsed_s;
  const auto t_start = std::chrono::steady_clock::now();
  auto t_row = t_start;
  double loss_sum = 0.0, tps_smooth = 0.0;
  int loss_n = 0, tokens_since_row = 0;
  double last_norm = 0.0;

  auto evaluate = [&](TrainLogRecord& rec) -> Status {
    rec.evaluated = true;
    rec.eval_loss = s.heldout_tokens.empty() ? std::nan("") : eval_loss(m, s.heldout_tokens, bos);
    analysis::ScanOptions so;
    so.natural_windows = 2;
    so.random_probes = 2;
    so.window_length = std::min(m.T, 128);
    so.seed = 99;
    std::vector<int> text = scan_text;
    if (static_cast<int>(text.size()) < so.window_length) text.clear();  // random-only run
    if (text.empty()) {  // no natural text: score on random tokens for the position scores
      Rng r(5);
      for (int i = 0; i < so.window_length; ++i) text.push_back(r.below(V - 1));
    }
    auto report = analysis::scan_ids(m.params, text, s.is_punct_by_id, so);
    if (!report) return tl::unexpected(report.error());
    rec.induction = analysis::best_head(*report, &analysis::HeadScores::induction).score;
    rec.previous_token = analysis::best_head(*report, &analysis::HeadScores::previous_token).score;
    rec.first_token = analysis::best_head(*report, &analysis::HeadScores::first_token).score;
    rec.icl_ratio = report->icl.ratio();
    return {};
  };

  int saved_step = o.resume ? s.step : -1;  // the step of the checkpoint in out_dir, -1: none yet
  // A loss or gradient that is not finite makes every weight NaN from this step on: the run
  // stops before it is saved (it ended "done" with a model no loader accepts).
  auto diverged = [&](const char* what, double value) {
    char said[64], lr[64];
    std::snprintf(said, sizeof said, "%s", std::isnan(value) ? "NaN" : value > 0 ? "infinite" : "-infinite");
    std::snprintf(lr, sizeof lr, "%g", o.lr);
    return make_error(ErrorCode::invalid_argument,
                      "the run diverged at step " + std::to_string(s.step + 1) + ": the " + what + " is " + said +
                          "; lower --lr (now " + lr + ") or raise --warmup. " +
                          (saved_step >= 0 ? "The checkpoint of step " + std::to_string(saved_step) + " in " + o.out_dir +
                                                 " is kept (--resume continues it)"
                                           : "Nothing was saved"));
  };
  while (s.step < o.steps) {
    const auto t0 = std::chrono::steady_clock::now();
    // 1. a batch from the mix; 2. forward; 3. backward
    batch_fill(batch, s.corpus_tokens, data_mix_at_step(o.mix, s.step), V, bos, s.rng);
    const float loss = train_forward(m, batch.inputs.data(), batch.targets.data());
    if (!std::isfinite(loss)) return diverged("loss", loss);
    train_zero_grad(m);
    train_backward(m);
    // 4. clip the global gradient norm, then AdamW with this step's learning rate
    const float lr = learning_rate_at(schedule, s.step);
    last_norm = optimizer_step(m, s.m, s.v, o, s.step);
    if (!std::isfinite(last_norm)) return diverged("gradient norm", last_norm);
    ++s.step;
    loss_sum += loss;
    ++loss_n;
    tokens_since_row += m.B * m.T;
    const auto t1 = std::chrono::steady_clock::now();
    const double step_s = std::chrono::duration<double>(t1 - t0).count();
    const double tps = step_s > 0 ? m.B * m.T / step_s : 0.0;
    tps_smooth = tps_smooth == 0.0 ? tps : 0.9 * tps_smooth + 0.1 * tps;

    const bool last = s.step == o.steps;
    const bool stop = g_stop_requested.load();
    TrainLogRecord* written = nullptr;
    if (s.step % o.log_every == 0 || last || stop) {
      TrainLogRecord rec;
      rec.step = s.step;
      rec.loss = loss_sum / loss_n;
      rec.lr = lr;
      rec.grad_norm = last_norm;
      const double row_s = std::chrono::duration<double>(t1 - t_row).count();
      rec.tokens_per_s = row_s > 0 ? tokens_since_row / row_s : 0.0;
      if ((o.eval_every > 0 && s.step % o.eval_every == 0) || last)
        if (Status st = evaluate(rec); !st) return tl::unexpected(st.error());
      rec.elapsed_s = elapsed_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
      s.log.push_back(rec);
      written = &s.log.back();
      loss_sum = 0.0;
      loss_n = 0;
      tokens_since_row = 0;
      t_row = std::chrono::steady_clock::now();
    }
    if ((o.checkpoint_every > 0 && s.step % o.checkpoint_every == 0) || last || stop) {
      if (Status st = train_save_checkpoint(s); !st) return tl::unexpected(st.error());
      saved_step = s.step;
    }
    if (progress) {
      TrainProgress p;
      p.step = s.step;
      p.total = o.steps;
      p.loss = loss;
      p.tokens_per_s = tps_smooth;
      p.eta_s = tps_smooth > 0 ? double(o.steps - s.step) * m.B * m.T / tps_smooth : 0.0;
      p.record = written;
      progress(p);
    }
    summary.final_loss = loss;
    if (stop) {
      summary.interrupted = true;
      break;
    }
  }
  summary.steps_done = s.step;
  if (!s.log.empty()) summary.last = s.log.back();
  return summary;
}

}  // namespace headlab::train
