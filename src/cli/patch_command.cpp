// cli/patch_command.cpp — `headlab patch`: activation patching (TransformerLens's get_act_patch_*)
// of one prompt pair or a file of them, printed as a grid (layers x positions, or heads), JSON (the
// API's answer, POST /api/model/patch, written by the server's codec) or CSV (one row per cell).
// An adapter over research/patch_input.h and research/patching.h, which the API calls too.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/config_note.h"
#include "cli/dtype_option.h"
#include "cli/steer_option.h"
#include "cli/text_or_ids.h"  // add_bos_flags
#include "formats/model_files.h"
#include "research/attribution_patching.h"
#include "research/patch_input.h"
#include "research/patching.h"
#include "research/prompts.h"
#include "server/api/handlers/path_patch_codec.h"
#include "research/path_patching.h"
#include "server/api/patch_codec.h"
#include "util/file.h"

namespace headlab::cli {
namespace {

using research::PatchResult;

struct PatchOptions {
  std::string model;
  std::string dtype = "auto";
  std::string compute = "f32";
  bool no_cache = false;
  std::string clean, corrupted, answer, wrong;
  std::string clean_ids, corrupted_ids;
  std::string prompts;
  std::optional<bool> bos;
  std::string what;  // empty: resid_pre
  std::string metric = "logit_diff";
  bool noising = false;
  bool denoising = false;
  std::string method = "activation";  // or attribution (research/attribution_patching.h)
  bool path = false;  // path patching (research/path_patching.h) instead of activation patching
  std::string senders = "all", receivers = "final";
  bool tl_loop = false;
  std::string layers, positions;
  std::string loss_positions;  // --metric loss over positions [from, to): "9:16"
  SteerOptions steering;  // --steer, --steer-prompts, --steer-from: every run of the sweep steered
  std::string format = "table";
  std::string out;
};

// "3-5,7" -> {3, 4, 5, 7}. Errors name the option and show the form.
Result<std::vector<int>> parse_index_list(const std::string& text, const std::string& option) {
  std::vector<int> out;
  auto bad = [&] {
    return make_error(ErrorCode::invalid_argument, option + ": \"" + text +
                                                       "\" is not a list of whole numbers and ranges (like 3-5, or 0,2,4, "
                                                       "or 1-3,7)");
  };
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    auto number = [](const std::string& s, int& v) {
      if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string::npos) return false;
      v = std::stoi(s);
      return true;
    };
    int a = 0, b = 0;
    const auto dash = part.find('-');
    if (dash == std::string::npos) {
      if (!number(part, a)) return bad();
      b = a;
    } else if (!number(part.substr(0, dash), a) || !number(part.substr(dash + 1), b) || b < a) {
      return bad();
    }
    if (b - a > 100000) return bad();
    for (int v = a; v <= b; v++) out.push_back(v);
  }
  if (out.empty()) return bad();
  return out;
}

// The first pair's token at a position, for a column: "Mary" or "Mary|John" where the runs differ.
std::string position_label(const server::ModelPatchResult& m, const model::BpeTokenizer* tok, int pos) {
  if (pos >= static_cast<int>(m.tokens.size())) return "(pad)";
  std::string a = research::patch_token_label(tok, m.tokens[pos].id);
  const int b_id = m.corrupted_tokens[pos].id;
  if (b_id != m.tokens[pos].id) a += "|" + research::patch_token_label(tok, b_id);
  return a;
}

std::string cell(float v) {
  if (std::isnan(v)) return "-";  // path patching: a head that was not a sender
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// Right-aligned in `width` (cut with "~" when longer).
std::string fit(std::string s, std::size_t width) {
  if (s.size() > width) s = s.substr(0, width - 1) + "~";
  return std::string(width - s.size(), ' ') + s;
}

// One grid: header rows over the columns (their first cell names them), then a row per label.
void grid(std::ostringstream& out, const std::vector<std::vector<std::string>>& header,
          const std::vector<std::string>& rows, int n_cols, const std::function<float(int, int)>& value) {
  constexpr std::size_t w = 7;  // "-12.345"
  std::size_t rw = 0;
  for (const std::string& r : rows) rw = std::max(rw, r.size());
  for (const auto& h : header) rw = std::max(rw, h[0].size());
  for (const auto& h : header) {
    out << h[0] << std::string(rw - h[0].size(), ' ');
    for (int c = 0; c < n_cols; c++) out << ' ' << fit(h[std::size_t(c) + 1], w);
    out << '\n';
  }
  for (int r = 0; r < static_cast<int>(rows.size()); r++) {
    out << rows[r] << std::string(rw - rows[r].size(), ' ');
    for (int c = 0; c < n_cols; c++) out << ' ' << fit(cell(value(r, c)), w);
    out << '\n';
  }
}

// The positions' header: their index, the clean token, and the corrupted token where it differs.
std::vector<std::vector<std::string>> position_header(const server::ModelPatchResult& m, const model::BpeTokenizer* tok) {
  std::vector<std::vector<std::string>> h = {{"pos"}, {"clean"}, {"corrupted"}};
  bool differ = false;
  for (int p : m.result.positions) {
    h[0].push_back(std::to_string(p));
    const bool in = p < static_cast<int>(m.tokens.size());
    h[1].push_back(in ? research::patch_token_label(tok, m.tokens[p].id) : "(pad)");
    const bool d = in && m.corrupted_tokens[p].id != m.tokens[p].id;
    h[2].push_back(d ? research::patch_token_label(tok, m.corrupted_tokens[p].id) : "");
    differ = differ || d;
  }
  if (!differ) h.pop_back();
  return h;
}

// The table: a header saying what was patched and the metric's two ends, then the grid(s):
// (layer, pos): layers x positions; (layer, head): layers x heads; by position: layer.head x positions.
std::string patch_table(const server::ModelPatchResult& m, const model::BpeTokenizer* tok, const model::ModelConfig& c) {
  const PatchResult& r = m.result;
  std::ostringstream out;
  const bool attribution = m.method == research::PatchMethod::attribution;
  if (attribution) out << "Attribution patching (each value a first-order estimate: the base run's metric + gradient . difference)\n";
  out << "Patching " << research::patch_what_name(r.what) << " ("
      << (r.noising ? "noising: corrupted activations into the clean run" : "denoising: clean activations into the corrupted run")
      << "), metric " << research::patch_metric_name(r.metric)
      << (r.loss_positions ? " over positions " + research::loss_positions_text(*r.loss_positions) : std::string())
      << ": clean " << cell(r.clean) << ", corrupted "
      << cell(r.corrupted) << ".\n" << m.pairs << (m.pairs == 1 ? " pair, " : " pairs, ") << r.cost.forwards
      << (attribution ? " forwards and one backward per pair.\n"
                      : " forwards, " + std::to_string(r.skipped) + " of them skipped (the patched slice was the same in both runs).\n");
  for (const auto& st : r.steering)
    out << "Every run steered: " << st.coef << (st.rows == 1 ? " x the vector" : " x ActAdd's " + std::to_string(st.rows) + " rows")
        << " added to blocks." << st.layer << ".hook_resid_pre from position " << st.from << ".\n";
  const bool every = !r.patch_types.empty();
  const std::size_t types = every ? r.patch_types.size() : 1;
  const std::size_t per_type = r.values.size() / types;
  const std::vector<std::string> axes(r.axes.begin() + (every ? 1 : 0), r.axes.end());
  const int nP = static_cast<int>(r.positions.size()), H = r.heads;
  for (std::size_t t = 0; t < types; t++) {
    const float* v = r.values.data() + t * per_type;
    out << '\n';
    if (every) out << r.patch_types[t] << ":\n";
    std::vector<std::string> rows;
    if (axes == std::vector<std::string>{"layer", "pos"}) {
      for (int l : r.layers) rows.push_back("layer " + std::to_string(l));
      grid(out, position_header(m, tok), rows, nP, [&](int i, int j) { return v[std::size_t(i) * nP + j]; });
    } else if (axes == std::vector<std::string>{"layer", "head"}) {
      std::vector<std::string> heads = {"head"};
      for (int h = 0; h < H; h++) heads.push_back(std::to_string(h));
      for (int l : r.layers) rows.push_back("layer " + std::to_string(l));
      grid(out, {heads}, rows, H, [&](int i, int j) { return v[std::size_t(i) * H + j]; });
    } else {
      const bool head_first = axes[1] == "head";  // (layer, head, dest_pos): TL's order for patterns
      for (int l : r.layers)
        for (int h = 0; h < H; h++) rows.push_back("layer " + std::to_string(l) + " head " + std::to_string(h));
      grid(out, position_header(m, tok), rows, nP, [&](int i, int j) {
        const int li = i / H, h = i % H;
        return head_first ? v[(std::size_t(li) * H + h) * nP + j] : v[(std::size_t(li) * nP + j) * H + h];
      });
    }
  }
  const bool kv = r.what == research::PatchWhat::k_all_pos || r.what == research::PatchWhat::v_all_pos ||
                  r.what == research::PatchWhat::k_by_pos || r.what == research::PatchWhat::v_by_pos;
  if (kv && c.kv_heads() != c.n_head)
    out << "\n(k and v: the heads are the model's " << H << " KV heads, as TransformerLens indexes hook_k and hook_v)\n";
  if (every && r.what != research::PatchWhat::block_every && c.kv_heads() != c.n_head)
    out << "\n(k and v: the model's " << c.kv_heads() << " KV heads, the other heads' columns 0, as TransformerLens)\n";
  return out.str();
}

// CSV: one row per cell, the axes' indices (patch_type by name), the position's token, the value.
std::string patch_csv(const server::ModelPatchResult& m, const model::BpeTokenizer* tok) {
  const PatchResult& r = m.result;
  std::ostringstream out;
  bool has_pos = false;
  for (std::size_t d = 0; d < r.axes.size(); d++) {
    out << (d ? "," : "") << r.axes[d];
    has_pos = has_pos || r.axes[d] == "pos" || r.axes[d] == "dest_pos";
  }
  out << (has_pos ? ",token" : "") << ",value\n";
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::vector<int> index(r.shape.size(), 0);
  for (std::size_t at = 0; at < r.values.size(); at++) {
    std::size_t rest = at;
    for (std::size_t d = r.shape.size(); d-- > 0;) index[d] = static_cast<int>(rest % r.shape[d]), rest /= r.shape[d];
    std::string token;
    for (std::size_t d = 0; d < r.axes.size(); d++) {
      const std::string& a = r.axes[d];
      out << (d ? "," : "");
      if (a == "patch_type") out << r.patch_types[index[d]];
      else if (a == "layer") out << r.layers[index[d]];
      else if (a == "pos" || a == "dest_pos") out << r.positions[index[d]], token = position_label(m, tok, r.positions[index[d]]);
      else out << index[d];
    }
    if (has_pos) out << ',' << quoted(token);
    char buf[32];
    std::snprintf(buf, sizeof buf, ",%.9g\n", r.values[at]);
    out << buf;
  }
  return out.str();
}

// "headlab: patching resid_pre: 120/480 runs" on stderr, once a sweep has taken a second.
class Progress {
 public:
  explicit Progress(std::string what) : what_(std::move(what)), start_(std::chrono::steady_clock::now()) {}
  ~Progress() { finish(); }
  // Ends the progress line (once), so what follows starts on a line of its own.
  void finish() {
    if (shown_) std::fprintf(stderr, "\n");
    shown_ = false;
  }
  void operator()(std::size_t done, std::size_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (now - start_ < std::chrono::seconds(1)) return;
    if (shown_ && done != total && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    shown_ = true;
    std::fprintf(stderr, "\rheadlab: patching %s: %zu/%zu runs (%zu%%)", what_.c_str(), done, total,
                 total ? done * 100 / total : 100);
    std::fflush(stderr);
  }

 private:
  std::string what_;
  std::chrono::steady_clock::time_point start_, last_;
  bool shown_ = false;
};

// The output to --out or stdout.
int emit(const PatchOptions& o, const std::string& text);

// Path patching's table: what ran, then the (layer, head) grid, "-" where a head was not a sender.
std::string path_table(const server::ModelPathPatchResult& m) {
  const research::PathPatchResult& r = m.result;
  std::ostringstream out;
  std::string into = "the final residual stream (the logits, through the MLPs only)";
  if (!r.receivers.empty()) {
    into.clear();
    for (const auto& x : r.receivers) into += (into.empty() ? "" : ", ") + research::path_receiver_name(x);
    into = "the inputs of " + into;
  }
  out << "Path patching each sender head into " << into << ".\n"
      << (r.noising ? "Noising (ARENA's): the clean run with the sender's output from the corrupted run"
                    : "Denoising: the corrupted run with the sender's output from the clean run")
      << " and every other head frozen to that run's own" << (r.receivers.empty() ? "" : "; then only the receivers' inputs put into it")
      << ".\nMetric " << research::patch_metric_name(r.metric)
      << (r.loss_positions ? " over positions " + research::loss_positions_text(*r.loss_positions) : std::string())
      << ": clean " << cell(r.clean) << ", corrupted "
      << cell(r.corrupted) << ". " << m.pairs << (m.pairs == 1 ? " pair, " : " pairs, ") << r.cost.forwards
      << " forwards, " << r.skipped << " sender runs skipped (no path to a receiver, or the same output in both runs).\n\n";
  std::vector<std::string> heads = {"head"}, rows;
  for (int h = 0; h < r.heads; h++) heads.push_back(std::to_string(h));
  for (int l : r.layers) rows.push_back("layer " + std::to_string(l));
  grid(out, {heads}, rows, r.heads, [&](int i, int j) { return r.values[r.offset(i, j)]; });
  return out.str();
}

// CSV: layer,head,value for every sender run.
std::string path_csv(const server::ModelPathPatchResult& m) {
  const research::PathPatchResult& r = m.result;
  std::ostringstream out;
  out << "layer,head,value\n";
  for (std::size_t li = 0; li < r.layers.size(); li++)
    for (int h = 0; h < r.heads; h++) {
      const float v = r.values[r.offset(static_cast<int>(li), h)];
      if (std::isnan(v)) continue;
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", v);
      out << r.layers[li] << ',' << h << ',' << buf << '\n';
    }
  return out.str();
}

int run_path_patch(const PatchOptions& o, const model::Parameters& params, research::PatchInput& in,
                   research::PathPatchRequest rq) {
  model::Workspace ws;
  Progress progress("paths");
  rq.progress = [&progress](std::size_t done, std::size_t total) { progress(done, total); };
  auto result = research::path_patch(params, in.pairs, rq, ws);
  rq.progress = nullptr;
  progress.finish();
  if (!result) return print_error(result.error().message, result.error().code == ErrorCode::invalid_argument ? 2 : 1);
  server::ModelPathPatchResult m{std::move(*result), in.clean.front().tokens, in.corrupted.front().tokens,
                                 static_cast<int>(in.pairs.size()), rq.senders.empty()};
  return emit(o, o.format == "json" ? server::encode_model_path_patch(m) + "\n"
                 : o.format == "csv" ? path_csv(m)
                                     : path_table(m));
}

int run_patch(const PatchOptions& o) {
  // 1. what the user typed, before the model is loaded
  const bool as_ids = !o.clean_ids.empty() || !o.corrupted_ids.empty();
  if (int(!o.prompts.empty()) + int(!o.clean.empty()) + int(as_ids) != 1)
    return print_error("give one prompt pair (--clean TEXT --corrupted TEXT, or --clean-ids --corrupted-ids) or a "
                       "file of them (--prompts FILE)",
                       2);
  if (as_ids && (o.clean_ids.empty() || o.corrupted_ids.empty() || !o.corrupted.empty()))
    return print_error("give both --clean-ids and --corrupted-ids (token ids, used as given: no BOS is added)", 2);
  if (!o.clean.empty() && o.corrupted.empty())
    return print_error("give --corrupted TEXT too: the clean prompt with the detail that changes the answer", 2);
  if (!o.prompts.empty() && (!o.corrupted.empty() || !o.answer.empty() || !o.wrong.empty()))
    return print_error("--prompts FILE carries each pair's corrupted prompt, answer and wrong token: leave out "
                       "--corrupted, --answer and --wrong",
                       2);
  if (o.noising && o.denoising) return print_error("give --noising or --denoising, not both", 2);
  auto method = research::parse_patch_method(o.method);
  if (!method) return print_error("--method: \"" + o.method + "\" is not activation or attribution", 2);
  const bool attribution = *method == research::PatchMethod::attribution;
  if (attribution && (o.path || o.tl_loop))
    return print_error(std::string("--method attribution estimates activation patching's sweeps from one backward; ") +
                           (o.path ? "path patching (--path) has no attribution form here" : "--tl-loop is activation patching's") +
                           ": leave it out",
                       2);
  research::PathPatchRequest path_rq;
  if (o.path) {
    if (!o.what.empty() || !o.layers.empty() || !o.positions.empty() || !o.steering.steer.empty() ||
        !o.steering.steer_prompts.empty())
      return print_error("--path sweeps sender heads (--senders) into receivers (--receivers); --what, --layers, "
                         "--positions and --steer are activation patching's: leave them out",
                         2);
    auto senders = research::parse_path_senders(o.senders);
    if (!senders) return print_error("--senders: " + senders.error().message, 2);
    auto receivers = research::parse_path_receivers(o.receivers);
    if (!receivers) return print_error("--receivers: " + receivers.error().message, 2);
    path_rq.senders = std::move(*senders);
    path_rq.receivers = std::move(*receivers);
    path_rq.noising = !o.denoising;  // ARENA's direction unless --denoising
    if (o.tl_loop) path_rq.shortcuts = {false, false, false, false};
  } else if (o.senders != "all" || o.receivers != "final") {
    return print_error("--senders and --receivers are path patching's: add --path", 2);
  }
  const std::string what_name = o.what.empty() ? "resid_pre" : o.what;
  auto what = research::parse_patch_what(what_name);
  if (!what) return print_error("--what: \"" + o.what + "\" is not one of " + research::patch_what_list(), 2);
  auto metric = research::parse_patch_metric(o.metric);
  if (!metric) return print_error("--metric: \"" + o.metric + "\" is not one of logit_diff, normalized, loss, logprob", 2);
  research::PatchRequest rq;
  rq.what = *what;
  rq.metric = *metric;
  rq.noising = o.noising;
  path_rq.metric = *metric;
  if (o.tl_loop) rq.shortcuts = {false, false, false, false, false, false};
  if (!o.layers.empty()) {
    auto l = parse_index_list(o.layers, "--layers");
    if (!l) return print_error(l.error().message, 2);
    rq.layers = std::move(*l);
  }
  if (!o.positions.empty()) {
    auto p = parse_index_list(o.positions, "--positions");
    if (!p) return print_error(p.error().message, 2);
    rq.positions = std::move(*p);
  }
  if (!o.loss_positions.empty()) {
    rq.loss_positions = research::parse_loss_positions(o.loss_positions);
    if (!rq.loss_positions)
      return print_error("--loss-positions: \"" + o.loss_positions +
                             "\" is not FROM:TO (like 9:16, positions 9 to 15; 9: runs to the end, :16 from 0)",
                         2);
    if (*metric != research::PatchMetric::loss)
      return print_error("--loss-positions says which positions' losses --metric loss averages: add --metric loss, "
                         "or leave it out (the metric is " + o.metric + ")",
                         2);
    path_rq.loss_positions = rq.loss_positions;
  }
  std::vector<research::PromptPair> prompts;
  if (!o.prompts.empty()) {
    auto text = file_read(o.prompts);
    if (!text) return print_error(text.error().message);  // it names the file
    auto parsed = research::parse_prompts(*text);
    if (!parsed) return print_error(o.prompts + ": " + parsed.error().message, 2);
    prompts = std::move(*parsed);
  } else if (!as_ids) {
    prompts.push_back({o.clean, o.corrupted, o.answer, o.wrong, 0});
  }

  // 2. the model and the prompts as its tokens
  auto params = model::model_load(
      o.model, {.dtype = dtype_choice(o.dtype), .compute = compute_choice(o.compute), .cache = !o.no_cache});
  if (!params) return print_error(params.error().message);
  dtype_note(*params, o.dtype, o.compute);
  config_note(o.model);
  std::unique_ptr<model::BpeTokenizer> tok;  // none: ids and "#id" answers only
  if (auto t = model::model_tokenizer_load(o.model)) {
    tok = std::make_unique<model::BpeTokenizer>(std::move(*t));
  } else if (!as_ids || t.error().code != ErrorCode::not_found) {
    return print_error(t.error().message);
  }
  if (tok)
    if (Status fits = model::config_check_tokenizer(params->config, tok->vocab_size(), o.model); !fits)
      return print_error(fits.error().message);
  analysis::RunInputOptions io;
  io.bos = o.bos;
  Result<research::PatchInput> in = make_error(ErrorCode::internal, "no input");
  if (as_ids) {
    auto clean = parse_id_list(o.clean_ids, "--clean-ids");
    if (!clean) return print_error(clean.error().message, 2);
    auto corrupted = parse_id_list(o.corrupted_ids, "--corrupted-ids");
    if (!corrupted) return print_error(corrupted.error().message, 2);
    in = research::patch_input_from_ids(tok.get(), params->config, std::move(*clean), std::move(*corrupted), o.answer,
                                        o.wrong, io, rq.metric);
  } else {
    in = research::patch_input_from_prompts(*tok, params->config, prompts, io, rq.metric);
  }
  if (!in) return print_error((o.prompts.empty() ? "" : o.prompts + ": ") + in.error().message, 2);

  if (o.path) return run_path_patch(o, *params, *in, std::move(path_rq));

  // 3. steering, in every run of the sweep (ActAdd's texts tokenised as the prompts are: with
  //    ids, no BOS unless --bos)
  model::Workspace ws;
  auto steering = steering_from_options(o.steering, *params, tok.get(), as_ids ? std::optional<bool>(o.bos.value_or(false)) : o.bos, ws);
  if (!steering)
    return print_error(steering.error().message, steering.error().code == ErrorCode::invalid_argument ? 2 : 1);
  rq.steering = std::move(*steering);

  // 4. the sweep, with progress past a second
  Progress progress(what_name);
  rq.progress = [&progress](std::size_t done, std::size_t total) { progress(done, total); };
  auto result = attribution ? research::attribution_patch(*params, in->pairs, rq, ws)
                            : research::patch(*params, in->pairs, rq, ws);
  rq.progress = nullptr;
  progress.finish();
  if (!result) return print_error(result.error().message, result.error().code == ErrorCode::invalid_argument ? 2 : 1);
  server::ModelPatchResult m{std::move(*result), in->clean.front().tokens, in->corrupted.front().tokens,
                             static_cast<int>(in->pairs.size()), *method};

  std::string text = o.format == "json" ? server::encode_model_patch(m) + "\n"
                     : o.format == "csv" ? patch_csv(m, tok.get())
                                         : patch_table(m, tok.get(), params->config);
  return emit(o, text);
}

int emit(const PatchOptions& o, const std::string& text) {
  if (!o.out.empty()) {
    std::ofstream f(o.out, std::ios::binary);
    if (!f) return print_error(cannot_write(o.out));
    f << text;
    f.close();
    if (!f) return print_error(o.out + ": write failed");
    std::fprintf(stderr, "headlab: wrote %zu bytes to %s\n", text.size(), o.out.c_str());
    return 0;
  }
  std::cout << text;
  return std::cout.flush() ? 0 : print_error("writing the output failed");
}

}  // namespace

void add_patch_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<PatchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "patch",
      "Activation patching: which activations carry the answer. Runs a corrupted prompt with one\n"
      "slice of one activation (a layer's residual at a position, a head's output, ...) taken from\n"
      "the clean prompt's run, once per slice, and measures how far the answer comes back\n"
      "(TransformerLens's get_act_patch_* functions, the same axes and values). --noising does the\n"
      "reverse: the clean run with one corrupted slice, to find what breaks the answer.\n\n"
      "What (--what), TransformerLens's axes in the JSON's order:\n"
      "  resid_pre, resid_mid, attn_out, mlp_out          (layer, pos)\n"
      "  z_all_pos, q_all_pos, k_all_pos, v_all_pos, pattern_all_pos    (layer, head)\n"
      "  z_by_pos, q_by_pos, k_by_pos, v_by_pos           (layer, pos, head)\n"
      "  pattern_by_pos                                   (layer, head, dest_pos)\n"
      "  block_every (resid_pre, attn_out, mlp_out stacked), attn_head_all_pos_every and\n"
      "  attn_head_by_pos_every (z, q, k, v, pattern stacked)\n"
      "k and v index the KV heads of a GQA model (Llama, Mistral, Gemma), as TransformerLens does.\n\n"
      "Metrics (--metric): logit_diff, the answer's logit minus the wrong token's at the last\n"
      "position (per pair, averaged); normalized, (patched - corrupted) / (clean - corrupted) of\n"
      "it, so 1 is the clean run and 0 the corrupted one; loss, the mean next-token loss of the\n"
      "run's own tokens; logprob, the answer's log-probability at the last position. The answer\n"
      "and wrong token must be one token each (with its leading space after a word: ' Mary').\n"
      "Both prompts of a pair must have the same number of tokens.\n"
      "--loss-positions FROM:TO averages the loss over positions FROM..TO-1 only, TransformerLens's\n"
      "loss_per_token[:, FROM:TO]: position t's loss is that of token t+1, so on BOS + 8 tokens + the\n"
      "same 8 again, 9:16 is the losses of the second copy's tokens 10 to 16, the ones an induction\n"
      "head can predict (9: runs to the end; :8 from 0). Each run's loss is of its own tokens.\n\n"
      "Examples:\n"
      "  headlab patch --model models/gpt2 --clean \"When Mary and John went to the store, John gave a drink to\"\n"
      "      --corrupted \"When Mary and John went to the store, Mary gave a drink to\" --answer ' Mary' --wrong ' John'\n"
      "  headlab patch --model models/gpt2 --prompts ioi.jsonl --what z_all_pos --metric normalized --format json --out heads.json\n"
      "  headlab patch --model models/headlab-tiny --what v_by_pos --layers 1 --metric normalized\n"
      "      --clean \" gray whale ink crown plum fog violin arch gray whale ink crown plum fog\" --answer ' viol'\n"
      "      --corrupted \" gray whale ink crown plum fog arch violin gray whale ink crown plum fog\" --wrong ' ar'\n"
      "  headlab patch --model models/gpt2 --prompts ioi.jsonl --what resid_pre --layers 3-5 --positions 10-14 --format csv\n"
      "  headlab patch --model models/headlab-tiny --metric loss --loss-positions 9:16 --what attn_out\n"
      "      --clean \" close living reform today percent hands single worth close living reform today percent hands single worth\"\n"
      "      --corrupted \" press doubt account level threat schools former history close living reform today percent hands single worth\"\n"
      "      (the loss over the second copy: at layer 1 each of its positions restores its own share)\n"
      "  headlab patch --model tests/fixtures/model/families/llama --clean-ids \"1 5 9 12 30\" --corrupted-ids \"1 5 7 12 30\"\n"
      "      --answer '#3' --wrong '#4' --what k_all_pos     (ids as given, answers as ids: no tokenizer needed)\n\n"
      "--prompts FILE: one JSON object a line, {\"clean\": ..., \"corrupted\": ..., \"answer\": ..., \"wrong\": ...};\n"
      "pairs may differ in length (a position past a pair's end leaves its run as it was).\n"
      "--steer, --steer-prompts and --steer-from steer every run of the sweep, the clean and corrupted\n"
      "ones too, as `headlab intervene` does (its --help says how): which slices carry the answer\n"
      "once the residual stream is pushed along a direction.\n"
      "A sweep longer than a second shows its progress on stderr. docs/research.md has a worked example.\n\n"
      "Attribution patching (--method attribution; Nanda 2023, Syed et al. 2023, Kramar et al. 2024):\n"
      "every index of the sweep from one forward and one backward of the base run and one forward of\n"
      "the source run, each value the first-order estimate m(base) + sum over the slice of dm/da . (a_source\n"
      "- a_base), in activation patching's axes and units, for every --what above.\n"
      "  headlab patch --method attribution --model models/gpt2 --prompts ioi.jsonl --what z_all_pos --metric normalized\n\n"
      "Path patching (--path; Wang et al. 2022's IOI paper, appendix B, as ARENA's IOI chapter): how much\n"
      "of one head's effect goes by one path. For each sender head, the clean run with that head's\n"
      "output (hook_z) taken from the corrupted run and every other head's output frozen to the clean\n"
      "run's (the MLPs recomputed): with --receivers final (the default) its logits are read, so only\n"
      "the sender's direct path to the logits, through the MLPs, counts; with receiver heads' inputs\n"
      "(--receivers 1.2:k,1.3:q: LAYER.HEAD:q, :k or :v; k and v name KV heads) those inputs are kept\n"
      "and put into a fresh clean run, whose logits are read: the sender -> receiver path alone.\n"
      "The answer is a (layer, head) grid over the senders (--senders all, or 0.3,1.*), \"-\" where a\n"
      "head was not asked for. The metric drops from the clean value where a path matters; --denoising\n"
      "runs the reverse (the corrupted run, the sender from the clean run). --metric as above.\n"
      "  headlab patch --path --model models/headlab-tiny --clean-ids \"4095 2680 3755 2099 0 3657 2151 2680 3755 2099 0 3657\"\n"
      "      --corrupted-ids \"4095 2680 3755 2099 0 3657 2507 2680 3755 2099 0 3657\" --answer '#2151' --wrong '#2507'\n"
      "  headlab patch --path --receivers 1.0:k,1.1:k,1.2:k,1.3:k --senders 0.* --metric logprob --model models/headlab-tiny\n"
      "      ... (the same pair: which layer-0 heads act through the induction heads' keys)\n"
      "  headlab patch --path --model models/gpt2 --prompts ioi.jsonl --receivers 9.9:q,9.6:q,10.0:q --metric normalized");
  cmd->add_option("--model", opts->model,
                  "A Hugging Face folder (GPT-2, GPT-NeoX, Llama, Mistral, Qwen 2/3, Gemma 2/3) or a .gguf file")
      ->required();
  add_dtype_option(cmd, opts->dtype);
  add_compute_option(cmd, opts->compute);
  add_cache_option(cmd, opts->no_cache);
  cmd->add_option("--clean", opts->clean, "The clean prompt: the model gets the answer right");
  cmd->add_option("--corrupted", opts->corrupted, "The corrupted prompt: the same tokens but the detail that changes the answer");
  cmd->add_option("--clean-ids", opts->clean_ids, "The clean prompt as token ids, separated by commas or spaces (no BOS is added)");
  cmd->add_option("--corrupted-ids", opts->corrupted_ids, "The corrupted prompt as token ids");
  cmd->add_option("--answer", opts->answer, "The clean run's answer, one token (' Mary') or an id ('#1234')");
  cmd->add_option("--wrong", opts->wrong, "The corrupted run's answer, one token (' John') or an id ('#1234')");
  cmd->add_option("--prompts", opts->prompts, "A file of prompt pairs, one JSON object a line (instead of --clean ...)");
  add_bos_flags(cmd, opts->bos, "--bos puts the model's BOS token first, --no-bos leaves it out; neither: the family's default");
  cmd->add_option("--what", opts->what, "What to patch (see above; default resid_pre)");
  cmd->add_option("--metric", opts->metric, "logit_diff, normalized, loss or logprob")->capture_default_str();
  cmd->add_flag("--noising", opts->noising,
                "Patch corrupted activations into the clean run (the default with --path; without it, denoising is)");
  cmd->add_flag("--denoising", opts->denoising,
                "Patch clean activations into the corrupted run (the default without --path)");
  cmd->add_option("--method", opts->method,
                  "activation (one patched run per index, exact) or attribution (one backward per pair: each value the "
                  "first-order estimate m(base) + gradient . (source - base))")
      ->capture_default_str();
  cmd->add_flag("--path", opts->path, "Path patching: each sender head into --receivers, every other head frozen (see above)");
  cmd->add_option("--senders", opts->senders, "--path: the sender heads, like 0.3,1.* (default: all)");
  cmd->add_option("--receivers", opts->receivers,
                  "--path: final (the logits, the default) or receiver heads' inputs, like 1.2:k,1.3:q (k, v: KV heads)");
  cmd->add_flag("--tl-loop", opts->tl_loop,
                "Run TransformerLens's loop (a full forward per index, every logit) instead of the shortcuts: the same "
                "numbers, slower (to check them, or to time the shortcuts)");
  // An empty list names none: it was read as "every one", as the option left out is.
  const auto names_some = [](const char* what) {
    return CLI::Validator(
        [what](std::string& v) -> std::string {
          return v.find_first_not_of(" \t") == std::string::npos
                     ? std::string("is empty, which names no ") + what + ": list some, like 3-5, or leave the option out for every one"
                     : std::string();
        },
        "");
  };
  cmd->add_option("--layers", opts->layers, "Only these layers, like 3-5 or 0,2,4 (default: every layer)")
      ->check(names_some("layer"));
  cmd->add_option("--positions", opts->positions, "Only these positions, like 10-14 (default: every position; BOS is 0)")
      ->check(names_some("position"));
  cmd->add_option("--loss-positions", opts->loss_positions,
                  "--metric loss: the mean next-token loss over positions FROM:TO only, like 9:16 (position t's loss "
                  "is token t+1's; 9: to the end)");
  add_steer_options(cmd, opts->steering);
  cmd->add_option("--format", opts->format, "table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  cmd->add_option("--out", opts->out, "Write the output to this file");
  cmd->callback([opts, &exit_code] { exit_code = run_patch(*opts); });
}

}  // namespace headlab::cli
