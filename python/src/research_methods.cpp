// python/src/research_methods.cpp — the research toolbox's measures on a loaded model, each
// the function `headlab patch / lens / attribute / compose / scan / intervene` and the API
// call (research/*.h, analysis/scan_text.h), its answer as a dict of numpy arrays and lists.
#include <algorithm>

#include "binding.h"
#include "research/attribution_patching.h"

namespace headlab::python {

namespace {

// An answer token as the CLI takes it: text that is one token (" Mary") or "#id"; an int is an id.
std::string answer_text(py::handle h) {
  if (h.is_none()) return "";
  if (is_whole(h)) {
    const int id = whole_arg(h, "an answer id");
    if (id < 0) raise_error({ErrorCode::invalid_argument, "answer id " + std::to_string(id) + " is not a token id (0 or more)"});
    return "#" + std::to_string(id);
  }
  if (!py::isinstance<py::str>(h))
    raise_error({ErrorCode::invalid_argument, "an answer is a token's text (' Mary') or its id (an int), not a " +
                                                  std::string(py::str(h.get_type().attr("__name__")))});
  return h.cast<std::string>();
}

// layers= / positions=: None (every one) or a list (or range) of whole numbers, each once.
// An empty list swept everything, and a repeat was dropped, each silently.
std::vector<int> index_list(py::handle h, const std::string& what) {
  std::vector<int> out;
  if (h.is_none()) return out;
  if (!py::isinstance<py::iterable>(h) || py::isinstance<py::str>(h))
    raise_error({ErrorCode::invalid_argument, what + " must be a list of whole numbers (or a range), like [0, 2] or range(2, 5)"});
  for (py::handle x : h) {
    const int v = whole_arg(x, what + ": each");
    if (std::find(out.begin(), out.end(), v) != out.end())
      raise_error({ErrorCode::invalid_argument, what + ": " + std::to_string(v) + " is listed twice"});
    out.push_back(v);
  }
  if (out.empty()) raise_error({ErrorCode::invalid_argument, what + " is an empty list: leave it out (None) for every one"});
  return out;
}

// The loss metric's positions: slice(9, 16) (TL's loss_per_token[:, 9:16]), (9, 16), "9:16";
// None in a slice or a pair leaves that end open. None: every position.
std::optional<research::LossPositions> loss_positions_from(py::handle h) {
  if (h.is_none()) return std::nullopt;
  const std::string form = "loss_positions: give slice(from, to), (from, to) or \"from:to\", like slice(9, 16)";
  research::LossPositions lp;
  auto end = [&](py::handle x, int& v) {
    if (x.is_none()) return;
    if (!py::isinstance<py::int_>(x) || x.cast<long long>() < 0 || x.cast<long long>() > 10000000)
      raise_error({ErrorCode::invalid_argument, form + " (whole numbers from 0)"});
    v = x.cast<int>();
  };
  if (py::isinstance<py::str>(h)) {
    auto parsed = research::parse_loss_positions(h.cast<std::string>());
    if (!parsed) raise_error({ErrorCode::invalid_argument, form});
    return parsed;
  }
  if (py::isinstance<py::slice>(h)) {
    py::object step = h.attr("step");
    if (!step.is_none() && step.cast<long long>() != 1) raise_error({ErrorCode::invalid_argument, form + " (no step)"});
    end(h.attr("start"), lp.from), end(h.attr("stop"), lp.to);
    return lp;
  }
  if (py::isinstance<py::sequence>(h) && py::len(h) == 2) {
    auto seq = py::reinterpret_borrow<py::sequence>(h);
    end(seq[0], lp.from), end(seq[1], lp.to);
    return lp;
  }
  raise_error({ErrorCode::invalid_argument, form});
}

research::TextPrompt text_prompt(py::handle input, std::optional<bool> bos, const char* method) {
  research::TextPrompt p;
  const bool texts = py::isinstance<py::sequence>(input) && !py::isinstance<py::str>(input) && py::len(input) > 0 &&
                     py::isinstance<py::str>(py::reinterpret_borrow<py::sequence>(input)[0]);
  if (texts) raise_error({ErrorCode::invalid_argument, std::string(method) + " takes one text (or one prompt's ids), not a list of texts"});
  if (!py::isinstance<py::str>(input) && !py::isinstance<py::sequence>(input) && !py::isinstance<py::array>(input))
    raise_error({ErrorCode::invalid_argument, std::string(method) + " takes a text or token ids, not a " +
                                                  std::string(py::str(input.get_type().attr("__name__")))});
  if (auto ids = ids_from(input)) p.ids = std::move(*ids);
  else p.text = input.cast<std::string>();
  p.bos = bos;
  return p;
}

py::list str_tokens(const Session& s, const analysis::RunInput& in) {
  py::list out;
  for (const model::Token& t : in.tokens) out.append(token_text(s, t.id));
  return out;
}

py::list outcome_top(const Session& s, const analysis::NextTokenOutcome& o) {
  py::list rows;
  for (const auto& preds : o.top_next) {
    py::list row;
    for (const analysis::Prediction& p : preds) row.append(py::make_tuple(p.id, token_text(s, p.id), p.logit, p.prob));
    rows.append(row);
  }
  return rows;
}

// Patching's prompt pairs (research/patch_input.h, as `headlab patch` makes them): texts (one
// pair, or lists of them with one answer for all or one each) or token ids used as given.
research::PatchInput patch_input(const Session& s, py::handle clean, py::handle corrupted, py::handle answer,
                                 py::handle wrong, std::optional<bool> prepend_bos, research::PatchMetric metric) {
  analysis::RunInputOptions io;
  io.bos = prepend_bos;
  Result<research::PatchInput> in = make_error(ErrorCode::internal, "no input");
  const bool texts = py::isinstance<py::str>(clean) ||
                     (!py::isinstance<py::array>(clean) && py::isinstance<py::sequence>(clean) && py::len(clean) > 0 &&
                      py::isinstance<py::str>(py::reinterpret_borrow<py::sequence>(clean)[0]));
  if (!texts) {
    auto clean_ids = ids_from(clean);
    auto corrupted_ids = ids_from(corrupted);
    if (!corrupted_ids) raise_error({ErrorCode::invalid_argument, "clean is token ids: give corrupted as token ids too"});
    in = research::patch_input_from_ids(s.tokenizer.get(), s.params.config, std::move(*clean_ids), std::move(*corrupted_ids),
                                        answer_text(answer), answer_text(wrong), io, metric);
  } else {
    if (!s.tokenizer) raise_error({ErrorCode::invalid_argument, "this model has no tokenizer: give token ids"});
    // one pair of texts, or lists of them (with one answer for all or one each)
    std::vector<research::PromptPair> prompts;
    auto list_of = [](py::handle h) {
      std::vector<py::object> out;
      if (py::isinstance<py::str>(h) || h.is_none() || py::isinstance<py::int_>(h) || !py::isinstance<py::iterable>(h))
        out.push_back(py::reinterpret_borrow<py::object>(h));  // one (answer_text says what a float is not)
      else for (py::handle x : h) out.push_back(py::reinterpret_borrow<py::object>(x));
      return out;
    };
    auto cl = list_of(clean), co = list_of(corrupted), an = list_of(answer), wr = list_of(wrong);
    if (co.size() != cl.size())
      raise_error({ErrorCode::invalid_argument, "clean and corrupted: " + std::to_string(cl.size()) + " and " +
                                                    std::to_string(co.size()) + " prompts; give one corrupted prompt per clean one"});
    for (std::size_t i = 0; i < cl.size(); i++) {
      auto pick = [&](const std::vector<py::object>& v) { return answer_text(v.size() == 1 ? v[0] : (i < v.size() ? v[i] : py::none())); };
      prompts.push_back({py::str(cl[i]).cast<std::string>(), py::str(co[i]).cast<std::string>(), pick(an), pick(wr), int(i + 1)});
    }
    in = research::patch_input_from_prompts(*s.tokenizer, s.params.config, prompts, io, metric);
  }
  return take(std::move(in));
}

}  // namespace

void bind_research(py::class_<Session, std::shared_ptr<Session>>& cls) {
  cls.def("patch", [](Session& s, py::handle clean, py::handle corrupted, py::handle answer, py::handle wrong,
                      const std::string& what, const std::string& metric, bool noising, py::handle layers,
                      py::handle positions, std::optional<bool> prepend_bos, py::handle steer, const std::string& method,
                      py::handle loss_positions) {
    research::PatchRequest rq;
    auto how = research::parse_patch_method(method);
    if (!how) raise_error({ErrorCode::invalid_argument, "method: \"" + method + "\" is not activation or attribution"});
    auto w = research::parse_patch_what(what);
    if (!w) raise_error({ErrorCode::invalid_argument, "what: \"" + what + "\" is not one of " + research::patch_what_list()});
    auto mt = research::parse_patch_metric(metric);
    if (!mt) raise_error({ErrorCode::invalid_argument, "metric: \"" + metric + "\" is not one of logit_diff, normalized, loss, logprob"});
    rq.what = *w;
    rq.metric = *mt;
    rq.noising = noising;
    rq.layers = index_list(layers, "layers");
    rq.positions = index_list(positions, "positions");
    rq.loss_positions = loss_positions_from(loss_positions);
    rq.steering = steering_from(s, steer);
    research::PatchInput input = patch_input(s, clean, corrupted, answer, wrong, prepend_bos, rq.metric);
    Result<research::PatchResult> r = make_error(ErrorCode::internal, "not run");
    {
      py::gil_scoped_release nogil;
      auto ws = s.workspace();
      // the dispatch of `headlab patch --method` and POST /api/model/patch's "method"
      r = *how == research::PatchMethod::attribution ? research::attribution_patch(s.params, input.pairs, rq, *ws)
                                                     : research::patch(s.params, input.pairs, rq, *ws);
    }
    research::PatchResult p = take(std::move(r));
    py::dict d;
    d["method"] = std::string(research::patch_method_name(*how));
    d["what"] = std::string(research::patch_what_name(p.what));
    d["metric"] = std::string(research::patch_metric_name(p.metric));
    d["noising"] = p.noising;
    if (p.loss_positions)
      d["loss_positions"] = py::make_tuple(p.loss_positions->from,
                                           p.loss_positions->to < 0 ? py::object(py::none()) : py::int_(p.loss_positions->to));
    d["axes"] = p.axes;
    d["values"] = array_from(std::move(p.values), std::vector<py::ssize_t>(p.shape.begin(), p.shape.end()));
    d["patch_types"] = p.patch_types;
    d["layers"] = p.layers;
    d["positions"] = p.positions;
    d["heads"] = p.heads;
    d["clean"] = p.clean;
    d["corrupted"] = p.corrupted;
    d["skipped"] = p.skipped;
    d["forwards"] = p.cost.forwards;
    d["pairs"] = input.pairs.size();
    d["clean_tokens"] = str_tokens(s, input.clean.front());
    d["corrupted_tokens"] = str_tokens(s, input.corrupted.front());
    d["clean_ids"] = input.clean.front().ids();  // the views mark where the corrupted token differs
    d["corrupted_ids"] = input.corrupted.front().ids();
    return d;
  }, py::arg("clean"), py::arg("corrupted"), py::arg("answer") = py::none(), py::arg("wrong") = py::none(),
     py::arg("what") = "resid_pre", py::arg("metric") = "logit_diff", py::arg("noising") = false,
     py::arg("layers") = py::none(), py::arg("positions") = py::none(), py::arg("prepend_bos") = py::none(),
     py::arg("steer") = py::none(), py::arg("method") = "activation", py::arg("loss_positions") = py::none(),
     "Activation patching (research/patching.h, `headlab patch`): TransformerLens's get_act_patch_<what>.\n"
     "clean/corrupted: texts (or lists of texts: a batch of pairs) or token ids; answer/wrong: one-token\n"
     "texts (\" Mary\"), \"#id\" or ints. Returns values with TL's axes and the clean and corrupted metrics.\n"
     "method=\"attribution\" (research/attribution_patching.h, `headlab patch --method attribution`): the same\n"
     "sweep estimated to first order from one backward per pair; the answer's shape is the same, 'method' says which.\n"
     "loss_positions=slice(9, 16) with metric=\"loss\": the mean loss over positions 9..15 only (TL's\n"
     "loss_per_token[:, 9:16]; position t's loss is token t+1's), e.g. a repeated sequence's second copy.");

  cls.def("path_patch", [](Session& s, py::handle clean, py::handle corrupted, py::handle answer, py::handle wrong,
                           const std::string& senders, const std::string& receivers, const std::string& metric,
                           bool denoising, std::optional<bool> prepend_bos, py::handle loss_positions) {
    research::PathPatchRequest rq;
    auto mt = research::parse_patch_metric(metric);
    if (!mt) raise_error({ErrorCode::invalid_argument, "metric: \"" + metric + "\" is not one of logit_diff, normalized, loss, logprob"});
    rq.metric = *mt;
    rq.loss_positions = loss_positions_from(loss_positions);
    rq.noising = !denoising;  // ARENA's direction unless denoising, as `headlab patch --path`
    rq.senders = take(research::parse_path_senders(senders));
    rq.receivers = take(research::parse_path_receivers(receivers));
    research::PatchInput input = patch_input(s, clean, corrupted, answer, wrong, prepend_bos, rq.metric);
    Result<research::PathPatchResult> r = make_error(ErrorCode::internal, "not run");
    {
      py::gil_scoped_release nogil;
      auto ws = s.workspace();
      r = research::path_patch(s.params, input.pairs, rq, *ws);
    }
    research::PathPatchResult p = take(std::move(r));
    std::vector<std::string> names;
    for (const research::PathReceiver& x : p.receivers) names.push_back(research::path_receiver_name(x));
    py::dict d;
    d["metric"] = std::string(research::patch_metric_name(p.metric));
    d["noising"] = p.noising;
    if (p.loss_positions)
      d["loss_positions"] = py::make_tuple(p.loss_positions->from,
                                           p.loss_positions->to < 0 ? py::object(py::none()) : py::int_(p.loss_positions->to));
    d["receivers"] = names;
    d["axes"] = std::vector<std::string>{"layer", "head"};
    d["layers"] = p.layers;
    d["values"] = array_from(std::move(p.values), {py::ssize_t(p.layers.size()), py::ssize_t(p.heads)});
    d["clean"] = p.clean;
    d["corrupted"] = p.corrupted;
    d["skipped"] = p.skipped;
    d["clean_tokens"] = str_tokens(s, input.clean.front());
    d["clean_ids"] = input.clean.front().ids();
    return d;
  }, py::arg("clean"), py::arg("corrupted"), py::arg("answer") = py::none(), py::arg("wrong") = py::none(),
     py::arg("senders") = "all", py::arg("receivers") = "final", py::arg("metric") = "logit_diff",
     py::arg("denoising") = false, py::arg("prepend_bos") = py::none(), py::arg("loss_positions") = py::none(),
     "Path patching (research/path_patching.h, `headlab patch --path`; IOI appendix B): each sender head's z from\n"
     "the other run, every other head frozen, into the logits ('final') or receivers ('1.2:q,1.3:k').\n"
     "loss_positions=slice(9, 16) with metric=\"loss\": the mean loss over positions 9..15 only, as in patch().\n"
     "values: (layers, NH), NaN where no sender was asked for.");

  cls.def("lens", [](Session& s, py::handle input, std::vector<std::string> answers, int top_k, bool incl_mid,
                     std::optional<bool> prepend_bos) {
    research::LensTextRequest rq;
    rq.prompt = text_prompt(input, prepend_bos, "lens");
    rq.answers = std::move(answers);
    rq.top_k = top_k;
    rq.incl_mid = incl_mid;
    Result<research::LensTextAnswer> r = make_error(ErrorCode::internal, "not run");
    {
      py::gil_scoped_release nogil;
      auto ws = s.workspace();
      r = research::logit_lens_text(s.params, s.tokenizer.get(), rq, *ws);
    }
    research::LensTextAnswer a = take(std::move(r));
    const research::LensResult& L = a.lens;
    const py::ssize_t E = L.entries, T = L.T, A = py::ssize_t(a.answers.size()), K = top_k;
    std::vector<float> entropy, kl, ans_logit, ans_prob, ans_logprob, top_logit, top_prob;
    std::vector<int> ans_rank, top_id;
    for (const research::LensCell& c : L.cells) {
      entropy.push_back(c.entropy);
      kl.push_back(c.kl_final);
      for (const research::LensAnswer& x : c.answers) {
        ans_logit.push_back(x.logit);
        ans_prob.push_back(x.prob);
        ans_logprob.push_back(x.logprob);
        ans_rank.push_back(x.rank);
      }
      for (py::ssize_t k = 0; k < K; k++) {
        const bool has = k < py::ssize_t(c.top.size());
        top_id.push_back(has ? c.top[std::size_t(k)].id : -1);
        top_logit.push_back(has ? c.top[std::size_t(k)].logit : 0.0f);
        top_prob.push_back(has ? c.top[std::size_t(k)].prob : 0.0f);
      }
    }
    py::dict d;
    d["labels"] = L.labels;
    d["tokens"] = str_tokens(s, a.input);
    d["ids"] = a.input.ids();
    d["answers"] = a.answers;
    py::list answer_tokens, top_tokens;  // the texts of answers and top_ids, for the views
    for (int id : a.answers) answer_tokens.append(token_text(s, id));
    for (py::ssize_t e = 0; e < E; e++) {
      py::list row;
      for (py::ssize_t t = 0; t < T; t++) {
        py::list cell;
        for (py::ssize_t k = 0; k < K; k++) {
          const int id = top_id[std::size_t((e * T + t) * K + k)];
          cell.append(id >= 0 ? token_text(s, id) : py::str(""));
        }
        row.append(cell);
      }
      top_tokens.append(row);
    }
    d["answer_tokens"] = answer_tokens;
    d["top_tokens"] = top_tokens;  // (entries, T, top_k) texts, "" where top_ids is -1
    d["entropy"] = array_from(std::move(entropy), {E, T});
    d["kl_final"] = array_from(std::move(kl), {E, T});
    d["answer_logit"] = array_from(std::move(ans_logit), {E, T, A});
    d["answer_prob"] = array_from(std::move(ans_prob), {E, T, A});
    d["answer_logprob"] = array_from(std::move(ans_logprob), {E, T, A});
    d["answer_rank"] = array_from(std::move(ans_rank), {E, T, A});
    d["top_ids"] = array_from(std::move(top_id), {E, T, K});
    d["top_logits"] = array_from(std::move(top_logit), {E, T, K});
    d["top_probs"] = array_from(std::move(top_prob), {E, T, K});
    return d;
  }, py::arg("input"), py::arg("answers") = std::vector<std::string>{}, py::arg("top_k") = 5, py::arg("incl_mid") = false,
     py::arg("prepend_bos") = py::none(),
     "The logit lens (research/lens.h, `headlab lens`): (entries, T) entropy and KL to the final, (entries, T, answers)\n"
     "rank/prob/logprob of each answer token, (entries, T, top_k) top tokens.");

  cls.def("attribute", [](Session& s, py::handle input, py::handle answer, py::handle wrong, int position,
                          std::optional<bool> prepend_bos) {
    research::AttributionTextRequest rq;
    rq.prompt = text_prompt(input, prepend_bos, "attribute");
    rq.answer = answer_text(answer);
    rq.wrong = answer_text(wrong);
    rq.position = position;
    Result<research::AttributionTextAnswer> r = make_error(ErrorCode::internal, "not run");
    {
      py::gil_scoped_release nogil;
      auto ws = s.workspace();
      r = research::direct_logit_attribution_text(s.params, s.tokenizer.get(), rq, *ws);
    }
    research::AttributionTextAnswer a = take(std::move(r));
    const research::Attribution& at = a.attribution;
    std::vector<std::string> labels, kinds;
    std::vector<int> layers, heads;
    std::vector<float> values;
    for (const research::AttributionPart& p : at.parts) {
      labels.push_back(p.label);
      kinds.push_back(std::string(research::part_kind_name(p.kind)));
      layers.push_back(p.layer);
      heads.push_back(p.head);
      values.push_back(p.value);
    }
    py::dict d;
    d["labels"] = labels;
    d["kinds"] = kinds;
    d["layers"] = layers;
    d["heads"] = heads;
    d["values"] = array_from(std::move(values), {py::ssize_t(labels.size())});
    d["sum"] = at.sum;
    d["logit_diff"] = at.logit_diff;
    d["logit_diff_uncapped"] = at.logit_diff_uncapped;
    d["final_scale"] = at.final_scale;
    d["position"] = at.position;
    d["answer"] = at.answer;
    d["wrong"] = at.wrong;
    d["tokens"] = str_tokens(s, a.input);
    return d;
  }, py::arg("input"), py::arg("answer"), py::arg("wrong") = py::none(), py::arg("position") = -1,
     py::arg("prepend_bos") = py::none(),
     "Direct logit attribution (research/attribution.h, `headlab attribute`) of logit(answer) - logit(wrong) at\n"
     "a position (the last by default) to embed, pos_embed, every head, attention biases, MLPs and ln_final's bias.");

  cls.def("composition_scores", [](Session& s, bool fold_ln, int baseline_samples, std::uint64_t seed) {
    research::CompositionOptions co{.fold_ln = fold_ln, .baseline_samples = baseline_samples, .seed = seed};
    Result<research::CompositionScores> r = make_error(ErrorCode::internal, "not run");
    {
      py::gil_scoped_release nogil;
      r = research::composition_scores(s.params, co);
    }
    research::CompositionScores c = take(std::move(r));
    const std::vector<py::ssize_t> shape = {c.L, c.NH, c.L, c.NH};
    py::dict d;
    d["q"] = array_from(std::move(c.q), shape);
    d["k"] = array_from(std::move(c.k), shape);
    d["v"] = array_from(std::move(c.v), shape);
    d["baseline_mean"] = c.baseline_mean;
    d["baseline_std"] = c.baseline_std;
    d["baseline_samples"] = c.baseline_samples;
    d["fold_ln"] = c.fold_ln;
    return d;
  }, py::arg("fold_ln") = false, py::arg("baseline_samples") = 64, py::arg("seed") = 27,
     "Q/K/V-composition scores (research/composition.h, `headlab compose`): (L, NH, L, NH) each,\n"
     "[sender layer][sender head][receiver layer][receiver head], and the random baseline.");

  cls.def("head_circuits", [](Session& s, int layer, int head, int top, bool fold_ln) {
    research::CircuitOptions co{.top = top, .fold_ln = fold_ln};
    Result<research::HeadCircuits> r = make_error(ErrorCode::internal, "not run");
    {
      py::gil_scoped_release nogil;
      r = research::head_circuits(s.params, layer, head, co);
    }
    research::HeadCircuits c = take(std::move(r));
    auto pairs = [&](const std::vector<research::TokenPair>& v) {
      py::list out;
      for (const research::TokenPair& p : v)
        out.append(py::make_tuple(token_text(s, p.row), token_text(s, p.col), p.value, p.row, p.col));
      return out;
    };
    py::dict d;
    d["copying_score"] = c.copying_score;
    d["ov_self_top1"] = c.ov_self_top1;
    d["ov_top"] = pairs(c.ov_top);
    d["qk_top"] = pairs(c.qk_top);
    d["ov_eigenvalues"] = c.ov_eigenvalues;
    return d;
  }, py::arg("layer"), py::arg("head"), py::arg("top") = 10, py::arg("fold_ln") = false,
     "A head's OV and QK circuits over the vocabulary and its copying score (research/composition.h).");

  cls.def("scan", [](Session& s, std::optional<std::string> text, int natural_windows, int window_length,
                     int random_probes, int repeat_length, std::uint64_t seed) {
    if (!s.tokenizer) raise_error({ErrorCode::invalid_argument, "scan needs the model's tokenizer"});
    std::string t = text ? *text : take(analysis::heldout_text_read(s.path));
    analysis::ScanOptions so;
    so.natural_windows = natural_windows;
    so.window_length = window_length;
    so.random_probes = random_probes;
    so.repeat_length = repeat_length;
    so.seed = seed;
    Result<analysis::ScanReport> r = make_error(ErrorCode::internal, "not run");
    {
      py::gil_scoped_release nogil;
      r = analysis::scan_text(s.params, *s.tokenizer, t, so);
    }
    analysis::ScanReport rep = take(std::move(r));
    py::list heads;
    for (const analysis::HeadReport& h : rep.heads) {
      py::dict hd, scores, chance;
      hd["layer"] = h.layer;
      hd["head"] = h.head;
      hd["name"] = h.name;
      for (const analysis::ScoreField& f : analysis::score_fields()) {
        if (f.needs_weights && !h.scores.has_weights) continue;
        scores[f.name] = (h.scores.*f.member).score;
        chance[f.name] = (h.scores.*f.member).chance;
      }
      hd["scores"] = scores;
      hd["chance"] = chance;
      py::list labels;
      for (const analysis::Label& l : h.labels) labels.append(py::make_tuple(l.name, l.score, l.threshold));
      hd["labels"] = labels;
      heads.append(hd);
    }
    py::dict d;
    d["heads"] = heads;
    d["repeat_length"] = rep.repeat_length;
    d["natural_tokens"] = rep.natural_tokens;
    if (rep.has_icl) d["icl"] = py::dict(py::arg("loss_first_copy") = rep.icl.loss_first_copy,
                                         py::arg("loss_second_copy") = rep.icl.loss_second_copy);
    return d;
  }, py::arg("text") = py::none(), py::arg("natural_windows") = 4, py::arg("window_length") = 0,
     py::arg("random_probes") = 4, py::arg("repeat_length") = 0, py::arg("seed") = 1,
     "The head scanner (analysis/scan_text.h, `headlab scan`): every head's scores and labels, ranked;\n"
     "text: held-out text (default: the model folder's heldout.txt).");

  cls.def("intervene", [](Session& s, py::handle input, py::handle ablate, py::handle block, py::handle uniform,
                          py::handle steer, int top_k, std::optional<bool> prepend_bos) {
    Inputs in = inputs_from(s, input, prepend_bos, false);
    if (in.prompts.size() != 1) raise_error({ErrorCode::invalid_argument, "intervene takes one prompt"});
    research::InterveneRequest rq;
    rq.interventions = interventions_from(ablate, block, uniform);
    rq.steering = steering_from(s, steer);
    rq.top_k = top_k;
    const std::vector<int> ids = in.prompts[0].ids();
    Result<research::InterveneReport> r = make_error(ErrorCode::internal, "not run");
    {
      py::gil_scoped_release nogil;
      auto ws = s.workspace();
      r = research::intervene_run(s.params, s.tokenizer.get(), ids, rq, *ws);
    }
    research::InterveneReport rep = take(std::move(r));
    auto outcome = [&](analysis::NextTokenOutcome& o) {
      py::dict d;
      d["loss"] = o.loss;
      d["token_loss"] = array_from(std::move(o.token_loss), {py::ssize_t(rep.T > 0 ? rep.T - 1 : 0)});
      d["top_next"] = outcome_top(s, o);
      return d;
    };
    py::dict d;
    d["tokens"] = str_tokens(s, in.prompts[0]);
    d["baseline"] = outcome(rep.baseline);
    d["intervened"] = outcome(rep.intervened);
    return d;
  }, py::arg("input"), py::arg("ablate") = py::none(), py::arg("block") = py::none(), py::arg("uniform") = py::none(),
     py::arg("steer") = py::none(), py::arg("top_k") = 5, py::arg("prepend_bos") = py::none(),
     "One run as it is and one with the interventions (research/intervene.h, `headlab intervene`):\n"
     "their losses and next-token predictions.");

  cls.def("steering_vector", [](Session& s, py::handle plus, py::handle minus, int layer, float coef,
                                std::optional<bool> prepend_bos) {
    Inputs a = inputs_from(s, plus, prepend_bos, false), b = inputs_from(s, minus, prepend_bos, false);
    const std::vector<int> pa = a.prompts[0].ids(), pb = b.prompts[0].ids();
    Result<research::Steering> r = make_error(ErrorCode::internal, "not run");
    {
      py::gil_scoped_release nogil;
      auto ws = s.workspace();
      r = research::steering_from_prompts(s.params, pa, pb, layer, coef, *ws);
    }
    return steering_to_dict(take(std::move(r)));
  }, py::arg("plus"), py::arg("minus"), py::arg("layer"), py::arg("coef") = 1.0f, py::arg("prepend_bos") = py::none(),
     "ActAdd's steering (research/steering.h): resid_pre at `layer` of plus minus minus, for steer=.");
}

}  // namespace headlab::python
