// python/src/model_methods.cpp — the model's own methods: its config, tokens, a forward with
// interventions and steering (model::forward, as `headlab run`/`intervene` run it), and
// run_with_cache with steering (research::cache_run, as `headlab cache`), the GIL released
// while the engine runs.
#include "binding.h"

namespace headlab::python {

namespace {

py::dict config_dict(const model::ModelConfig& c) {
  // TransformerLens's HookedTransformerConfig names where they exist
  py::dict d;
  d["family"] = c.family;
  d["n_layers"] = c.n_layer;
  d["n_heads"] = c.n_head;
  d["n_key_value_heads"] = c.kv_heads();
  d["d_model"] = c.n_embd;
  d["d_head"] = c.head_size();
  d["d_mlp"] = c.mlp ? c.mlp_width() : 0;
  d["d_vocab"] = c.vocab_size;
  d["n_ctx"] = c.n_ctx;
  d["attn_only"] = !c.mlp;
  d["parallel_attn_mlp"] = c.parallel_residual;
  d["default_prepend_bos"] = c.default_prepend_bos();
  d["bos_token_id"] = c.bos_token_id;
  return d;
}

// names_filter as TransformerLens takes it: None (every hook), a name or glob ("," separates
// several, as --hooks), a list of them, or a function of a name.
std::string hook_globs(const Session& s, py::handle filter) {
  if (filter.is_none()) return "*";
  if (py::isinstance<py::str>(filter)) return filter.cast<std::string>();
  std::string globs;
  if (PyCallable_Check(filter.ptr())) {
    for (const model::NamedHook& h : model::model_hooks(s.params.config)) {
      const std::string name = model::hook_name(h.point, h.layer);
      if (py::reinterpret_borrow<py::object>(filter)(name).cast<bool>()) globs += (globs.empty() ? "" : ",") + name;
    }
    if (globs.empty()) raise_error({ErrorCode::invalid_argument, "names_filter: the function selects no hook of this model"});
    return globs;
  }
  for (py::handle h : filter) globs += (globs.empty() ? "" : ",") + h.cast<std::string>();
  return globs;
}

}  // namespace

void bind_model(py::module_& m, py::class_<Session, std::shared_ptr<Session>>& cls) {
  (void)m;
  cls.def_property_readonly("name", [](const Session& s) { return s.name; })
      .def_property_readonly("path", [](const Session& s) { return s.path; })
      .def_property_readonly("cfg", [](const Session& s) { return config_dict(s.params.config); },
                             "The model's shape under TransformerLens's config names (n_layers, n_heads, d_model, ...).")
      .def("__repr__", [](const Session& s) {
        const model::ModelConfig& c = s.params.config;
        return "<headlab.Model " + s.name + ": " + c.family + ", " + std::to_string(c.n_layer) + " layers, " +
               std::to_string(c.n_head) + " heads, d_model " + std::to_string(c.n_embd) + ">";
      });

  cls.def("to_tokens", [](const Session& s, py::handle input, std::optional<bool> prepend_bos, bool truncate) {
    Inputs in = inputs_from(s, input, prepend_bos, truncate);
    const std::size_t B = in.prompts.size(), T = in.prompts[0].tokens.size();
    for (const analysis::RunInput& p : in.prompts)
      if (p.tokens.size() != T)
        raise_error({ErrorCode::invalid_argument, "the texts have different token counts (" + std::to_string(T) + " and " +
                                                      std::to_string(p.tokens.size()) +
                                                      "): pass the list itself to run_with_cache, which pads on the right"});
    std::vector<long long> ids;
    for (const analysis::RunInput& p : in.prompts)
      for (const model::Token& t : p.tokens) ids.push_back(t.id);
    return array_from(std::move(ids), {py::ssize_t(B), py::ssize_t(T)});
  }, py::arg("input"), py::arg("prepend_bos") = py::none(), py::arg("truncate") = false,
     "A text (or a list of texts of one length) as (B, T) int64 token ids, BOS first by the family's rule\n"
     "(TransformerLens's default_prepend_bos) unless prepend_bos says.");

  cls.def("to_str_tokens", [](const Session& s, py::handle input, std::optional<bool> prepend_bos) {
    Inputs in = inputs_from(s, input, prepend_bos, false);
    auto one = [&](const analysis::RunInput& p) {
      py::list out;
      for (const model::Token& t : p.tokens) out.append(token_text(s, t.id));
      return out;
    };
    // one prompt (a text, ids, or a (1, T) array, as TL's to_str_tokens): a flat list
    const bool texts = !py::isinstance<py::str>(input) && !py::isinstance<py::array>(input) &&
                       py::isinstance<py::sequence>(input) && py::len(input) > 0 &&
                       py::isinstance<py::str>(py::reinterpret_borrow<py::sequence>(input)[0]);
    if (in.prompts.size() == 1 && !texts) return py::object(one(in.prompts[0]));
    py::list all;
    for (const analysis::RunInput& p : in.prompts) all.append(one(p));
    return py::object(all);
  }, py::arg("input"), py::arg("prepend_bos") = py::none(), "Each token of the input as its text.");

  cls.def("to_string", [](const Session& s, py::handle ids) {
    if (!s.tokenizer) raise_error({ErrorCode::invalid_argument, "this model has no tokenizer"});
    std::optional<std::vector<int>> given = ids_from(ids);  // a str is no ids (it was dereferenced as some)
    if (!given) raise_error({ErrorCode::invalid_argument, "to_string takes token ids (a list of ints or an integer array), not a str"});
    std::vector<int> v = std::move(*given);
    const std::string text = take(s.tokenizer->decode(v));
    PyObject* u = PyUnicode_DecodeUTF8(text.data(), py::ssize_t(text.size()), "replace");
    if (!u) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(u);
  }, py::arg("ids"), "The text of token ids.");

  cls.def("hook_names", [](const Session& s) {
    py::list out;
    for (const model::NamedHook& h : model::model_hooks(s.params.config)) out.append(model::hook_name(h.point, h.layer));
    return out;
  }, "Every hook point of this model under TransformerLens's names, in the forward's order.");

  cls.def("forward", [](Session& s, py::handle input, std::optional<bool> prepend_bos, py::handle ablate,
                        py::handle block, py::handle uniform, py::handle steer, bool truncate) {
    Inputs in = inputs_from(s, input, prepend_bos, truncate);
    model::ForwardOptions opt;
    opt.interventions = interventions_from(ablate, block, uniform);
    const std::vector<research::Steering> steering = steering_from(s, steer);
    model::ForwardHooks hooks = research::steering_hooks(s.params.config, steering);
    if (!steering.empty()) opt.hooks = &hooks;
    const std::vector<std::vector<int>> ids = in.ids();
    std::size_t T = 0;
    for (const auto& one : ids) T = std::max(T, one.size());
    for (const research::Steering& st : steering) check(research::steering_reaches(st, int(T)));
    const std::size_t B = ids.size(), V = std::size_t(s.params.config.vocab_size);
    std::vector<float> logits;
    Status st;
    {
      py::gil_scoped_release nogil;
      auto ws = s.workspace();
      model::ForwardOutput out;
      for (std::size_t b = 0; b < B && st; b++) {
        st = model::forward(s.params, ids[b], opt, out, *ws);
        if (!st) break;
        if (B == 1) {
          logits = std::move(out.logits);
        } else {
          if (logits.empty()) logits.assign(B * T * V, 0.0f);
          std::copy(out.logits.begin(), out.logits.end(), logits.begin() + std::ptrdiff_t(b * T * V));
        }
      }
    }
    check(st);
    return array_from(std::move(logits), {py::ssize_t(B), py::ssize_t(T), py::ssize_t(V)});
  }, py::arg("input"), py::arg("prepend_bos") = py::none(), py::arg("ablate") = py::none(), py::arg("block") = py::none(),
     py::arg("uniform") = py::none(), py::arg("steer") = py::none(), py::arg("truncate") = false,
     "The logits (B, T, V) of a forward (model/forward.h), with head interventions and steering when given:\n"
     "  ablate=[(layer, head), (layer, head, 'mean')], block=[(layer, head or -1, key)], uniform=[(layer, head)],\n"
     "  steer=[dict(layer=, vector=, coef=1.0, from_=0)] (model.steering_vector makes one).\n"
     "A batch of unequal lengths is right-padded with zero logits.");

  cls.def("_run_with_cache", [](Session& s, py::handle input, py::handle names_filter, std::optional<bool> prepend_bos,
                                bool truncate, int max_mb, bool return_logits, py::handle steer) {
    if (max_mb < 1) raise_error({ErrorCode::invalid_argument, "max_mb must be at least 1"});
    Inputs in = inputs_from(s, input, prepend_bos, truncate);
    const research::HookSelection sel = take(research::hook_select(s.params.config, hook_globs(s, names_filter)));
    research::CacheOptions co;
    co.max_bytes = std::size_t(max_mb) << 20;
    co.budget_hint = "raise max_mb (now " + std::to_string(max_mb) + ")";
    co.logits = return_logits;
    co.steering = steering_from(s, steer);
    const std::vector<std::vector<int>> ids = in.ids();
    Result<research::ActivationCache> cache = make_error(ErrorCode::internal, "not run");
    {
      py::gil_scoped_release nogil;
      auto ws = s.workspace();
      cache = research::cache_run(s.params, ids, sel, co, *ws);
    }
    research::ActivationCache c = take(std::move(cache));
    py::dict tensors;
    for (research::CachedTensor& t : c.tensors) {
      std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
      tensors[py::str(t.name)] = array_from_shared(c.memory, t.values.data(), shape);
    }
    py::object logits = py::none();
    if (return_logits)
      logits = array_from(std::move(c.logits), {py::ssize_t(ids.size()), py::ssize_t(c.T),
                                                py::ssize_t(s.params.config.vocab_size)});
    return py::make_tuple(logits, tensors, c.tokens);
  }, py::arg("input"), py::arg("names_filter") = py::none(), py::arg("prepend_bos") = py::none(),
     py::arg("truncate") = false, py::arg("max_mb") = 2048, py::arg("return_logits") = true,
     py::arg("steer") = py::none());
}

}  // namespace headlab::python
