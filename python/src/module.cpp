// python/src/module.cpp — `import headlab._headlab`: headlab.load, the loaded model (Session)
// shared per process, the engine's errors as exceptions, and the inputs and interventions as
// Python gives them. The methods are in model_methods.cpp and research_methods.cpp; each
// calls the function the CLI and the API call (include/headlab.h), never a second one.
#include <atomic>
#include <filesystem>
#include <map>
#include <tuple>

#include "binding.h"
#include "model/blas.h"

namespace headlab::python {

namespace {
std::atomic<int> g_sessions{0};
// (path, dtype, compute) -> the model while some handle holds it
std::mutex g_loaded_mutex;
std::map<std::tuple<std::string, std::string, std::string>, std::weak_ptr<Session>> g_loaded;

PyObject* g_error_classes[int(ErrorCode::internal) + 1] = {};
}  // namespace

Session::Session() { g_sessions++; }
Session::~Session() { g_sessions--; }
int sessions_alive() { return g_sessions.load(); }

Session::WorkspaceLease::~WorkspaceLease() {
  std::lock_guard<std::mutex> lock(owner->pool_mutex);
  owner->pool.push_back(std::move(ws));
}
Session::WorkspaceLease Session::workspace() {
  std::unique_ptr<model::Workspace> ws;
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    if (!pool.empty()) {
      ws = std::move(pool.back());
      pool.pop_back();
    }
  }
  if (!ws) ws = std::make_unique<model::Workspace>();
  return WorkspaceLease{this, std::move(ws)};  // built in place (C++17): never moved
}

void raise_error(const Error& e) {
  PyObject* cls = g_error_classes[int(e.code)];
  if (!cls) cls = g_error_classes[int(ErrorCode::internal)];
  py::object err = py::reinterpret_borrow<py::object>(cls)(e.message);
  err.attr("code") = std::string(error_code_name(e.code));
  PyErr_SetObject(cls, err.ptr());
  throw py::error_already_set();
}

void register_errors(py::module_& m) {
  // headlab.Error is every engine error's base; each code's class also derives from the
  // built-in a Python user would catch for it (bad values: ValueError, no such file:
  // FileNotFoundError).
  PyObject* base = PyErr_NewExceptionWithDoc("headlab.Error",
                                             "An error of the headlab engine; .code names its kind (invalid_argument, ...).",
                                             PyExc_Exception, nullptr);
  m.add_object("Error", py::reinterpret_borrow<py::object>(base));
  struct Kind {
    ErrorCode code;
    const char* name;
    PyObject* builtin;
  };
  const Kind kinds[] = {
      {ErrorCode::invalid_argument, "InvalidArgumentError", PyExc_ValueError},
      {ErrorCode::too_long, "TooLongError", PyExc_ValueError},
      {ErrorCode::not_found, "NotFoundError", PyExc_FileNotFoundError},
      {ErrorCode::io_error, "IOError", PyExc_OSError},
      {ErrorCode::corrupt, "CorruptError", nullptr},
      {ErrorCode::unsupported, "UnsupportedError", nullptr},
      {ErrorCode::unavailable, "UnavailableError", nullptr},
      {ErrorCode::internal, "InternalError", nullptr},
  };
  for (const Kind& k : kinds) {
    py::tuple bases = k.builtin ? py::make_tuple(py::handle(base), py::handle(k.builtin)) : py::make_tuple(py::handle(base));
    PyObject* cls = PyErr_NewException((std::string("headlab.") + k.name).c_str(), bases.ptr(), nullptr);
    g_error_classes[int(k.code)] = cls;
    m.add_object(k.name, py::reinterpret_borrow<py::object>(cls));
  }
  for (PyObject*& cls : g_error_classes)
    if (!cls) cls = base;
}

py::array_t<float> array_from_shared(const std::shared_ptr<float[]>& memory, float* data,
                                     std::vector<py::ssize_t> shape) {
  auto* owned = new std::shared_ptr<float[]>(memory);
  py::capsule base(owned, [](void* p) { delete static_cast<std::shared_ptr<float[]>*>(p); });
  return py::array_t<float>(shape, data, base);
}

py::str token_text(const Session& s, int id) {
  const std::string bytes = s.tokenizer ? s.tokenizer->token_bytes(id) : std::string();
  PyObject* u = PyUnicode_DecodeUTF8(bytes.data(), py::ssize_t(bytes.size()), "replace");
  if (!u) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(u);
}

std::vector<std::vector<int>> Inputs::ids() const {
  std::vector<std::vector<int>> out;
  for (const analysis::RunInput& in : prompts) out.push_back(in.ids());
  return out;
}

namespace {

bool is_text(py::handle h) { return py::isinstance<py::str>(h); }

}  // namespace

bool is_whole(py::handle h) { return PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr()); }

int whole_arg(py::handle h, const std::string& what) {
  if (!is_whole(h))
    raise_error({ErrorCode::invalid_argument, what + " must be a whole number, not a " +
                                                  std::string(py::str(h.get_type().attr("__name__")))});
  const long long v = py::int_(py::reinterpret_borrow<py::object>(h)).cast<long long>();
  if (v < -(1LL << 30) || v > (1LL << 30)) raise_error({ErrorCode::invalid_argument, what + " is out of range: " + std::to_string(v)});
  return int(v);
}

namespace {

// ids from a sequence of ints or a 1-D integer array. A float, a bool or a NaN is no token id:
// forcecast alone truncated 1.5 to 1 and read True as 1.
std::vector<int> ids_of(py::handle h) {
  if (py::isinstance<py::array>(h)) {
    const char kind = py::reinterpret_borrow<py::array>(h).dtype().kind();
    if (kind != 'i' && kind != 'u')
      raise_error({ErrorCode::invalid_argument, "token ids must be integers; this array holds " +
                                                    std::string(py::str(py::reinterpret_borrow<py::array>(h).dtype()))});
  } else if (py::isinstance<py::sequence>(h) && !py::isinstance<py::str>(h)) {
    py::ssize_t i = 0;
    for (py::handle x : h) {
      if (!is_whole(x))
        raise_error({ErrorCode::invalid_argument, "token ids must be ints; item " + std::to_string(i) + " is a " +
                                                      std::string(py::str(x.get_type().attr("__name__")))});
      i++;
    }
  } else {
    raise_error({ErrorCode::invalid_argument, std::string("token ids must be a list of ints or a 1-D integer array, not a ") +
                                                  std::string(py::str(h.get_type().attr("__name__")))});
  }
  py::array_t<long long, py::array::c_style | py::array::forcecast> a = py::array_t<long long>::ensure(h);
  if (!a || a.ndim() != 1)
    raise_error({ErrorCode::invalid_argument, "token ids must be a list of ints or a 1-D integer array"});
  std::vector<int> ids;
  for (py::ssize_t i = 0; i < a.shape(0); i++) {
    const long long v = a.at(i);
    if (v < 0 || v > (1LL << 30))
      raise_error({ErrorCode::invalid_argument, "token id " + std::to_string(v) + " is not a token id (a non-negative integer)"});
    ids.push_back(int(v));
  }
  return ids;
}

}  // namespace

std::optional<std::vector<int>> ids_from(py::handle input) {
  if (is_text(input)) return std::nullopt;
  return ids_of(input);
}

Inputs inputs_from(const Session& s, py::handle input, std::optional<bool> bos, bool truncate) {
  Inputs out;
  analysis::RunInputOptions io;
  io.truncate = truncate;
  io.truncate_hint = "pass truncate=True";
  std::vector<std::string> texts;
  std::vector<std::vector<int>> ids;
  if (is_text(input)) {
    texts.push_back(input.cast<std::string>());
  } else if (py::isinstance<py::array>(input)) {
    py::array a = py::reinterpret_borrow<py::array>(input);
    if (a.ndim() == 1) {
      ids.push_back(ids_of(a));
    } else if (a.ndim() == 2) {
      for (py::ssize_t b = 0; b < a.shape(0); b++) ids.push_back(ids_of(a[py::int_(b)]));
    } else {
      raise_error({ErrorCode::invalid_argument, "token ids must be a 1-D (T) or 2-D (B, T) array, not " +
                                                    std::to_string(a.ndim()) + "-D"});
    }
  } else if (py::isinstance<py::sequence>(input)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(input);
    if (seq.size() == 0) raise_error({ErrorCode::invalid_argument, "no input: give a text, a list of texts or token ids"});
    py::handle first = seq[0];
    if (is_text(first)) {
      for (py::handle h : seq) {
        if (!is_text(h)) raise_error({ErrorCode::invalid_argument, "a batch of texts must hold only str"});
        texts.push_back(h.cast<std::string>());
      }
    } else if (py::isinstance<py::sequence>(first) || py::isinstance<py::array>(first)) {
      for (py::handle h : seq) ids.push_back(ids_of(h));
    } else {
      ids.push_back(ids_of(seq));
    }
  } else {
    raise_error({ErrorCode::invalid_argument, std::string("the input must be a str, a list of str or token ids, not ") +
                                                  std::string(py::str(input.get_type().attr("__name__")))});
  }
  if (!ids.empty()) {
    out.from_ids = true;
    io.bos = bos.value_or(false);  // given ids are the input as they are
    for (std::vector<int>& one : ids)
      out.prompts.push_back(take(analysis::run_input_from_ids(s.tokenizer.get(), s.params.config, std::move(one), io)));
    return out;
  }
  if (!s.tokenizer) raise_error({ErrorCode::invalid_argument, "this model has no tokenizer: give token ids"});
  io.bos = bos;
  for (std::size_t i = 0; i < texts.size(); i++) {
    auto in = analysis::run_input_from_text(*s.tokenizer, s.params.config, texts[i], io);
    if (!in && texts.size() > 1) {
      Error e = in.error();
      e.message = "text " + std::to_string(i) + ": " + e.message;
      raise_error(e);
    }
    out.prompts.push_back(take(std::move(in)));
  }
  return out;
}

namespace {
// One entry of ablate=/block=/uniform=: a tuple or list, never a bare number (ablate=(0, 1)
// iterated its ints and failed with "'int' object is not iterable").
py::tuple entry_of(py::handle h, const char* what, const char* form) {
  if (!py::isinstance<py::tuple>(h) && !py::isinstance<py::list>(h))
    raise_error({ErrorCode::invalid_argument, std::string(what) + ": each entry is " + form + ", in a list: " + what +
                                                  "=[" + form + "]; got a " + std::string(py::str(h.get_type().attr("__name__")))});
  return py::tuple(py::reinterpret_borrow<py::object>(h));
}
py::iterable entries_of(py::handle h, const char* what) {
  if (!py::isinstance<py::iterable>(h) || py::isinstance<py::str>(h))
    raise_error({ErrorCode::invalid_argument, std::string(what) + " must be a list of entries, like " + what + "=[(0, 1)]"});
  return py::reinterpret_borrow<py::iterable>(h);
}
}  // namespace

model::Interventions interventions_from(py::handle ablate, py::handle block, py::handle uniform) {
  model::Interventions iv;
  if (!ablate.is_none())
    for (py::handle h : entries_of(ablate, "ablate")) {
      py::tuple t = entry_of(h, "ablate", "(layer, head)");
      if (t.size() != 2 && t.size() != 3)
        raise_error({ErrorCode::invalid_argument, "ablate: each entry is (layer, head) or (layer, head, \"zero\"|\"mean\")"});
      model::HeadAblation a{whole_arg(t[0], "ablate: a layer"), whole_arg(t[1], "ablate: a head"), model::Ablation::zero};
      if (t.size() == 3) {
        if (!py::isinstance<py::str>(t[2])) raise_error({ErrorCode::invalid_argument, "ablate: the third item is \"zero\" or \"mean\""});
        const std::string kind = t[2].cast<std::string>();
        if (kind == "mean") a.kind = model::Ablation::mean;
        else if (kind != "zero")
          raise_error({ErrorCode::invalid_argument, "ablate: \"" + kind + "\" is not zero or mean"});
      }
      iv.ablate.push_back(a);
    }
  if (!block.is_none())
    for (py::handle h : entries_of(block, "block")) {
      py::tuple t = entry_of(h, "block", "(layer, head or -1, key)");
      if (t.size() != 3) raise_error({ErrorCode::invalid_argument, "block: each entry is (layer, head or -1, key)"});
      iv.block.push_back({whole_arg(t[0], "block: a layer"), whole_arg(t[1], "block: a head"), whole_arg(t[2], "block: a key")});
    }
  if (!uniform.is_none())
    for (py::handle h : entries_of(uniform, "uniform")) {
      py::tuple t = entry_of(h, "uniform", "(layer, head)");
      if (t.size() != 2) raise_error({ErrorCode::invalid_argument, "uniform: each entry is (layer, head)"});
      iv.replace.push_back({whole_arg(t[0], "uniform: a layer"), whole_arg(t[1], "uniform: a head"),
                            model::PatternReplacementKind::uniform, {}});
    }
  return iv;
}

py::dict steering_to_dict(const research::Steering& st) {
  py::dict d;
  d["layer"] = st.layer;
  d["coef"] = st.coef;
  d["from_"] = st.from;
  std::vector<float> v = st.vector;
  const int rows = st.rows;
  const py::ssize_t C = rows > 0 ? py::ssize_t(v.size()) / rows : 0;
  d["vector"] = rows == 1 ? array_from(std::move(v), {C}) : array_from(std::move(v), {py::ssize_t(rows), C});
  return d;
}

std::vector<research::Steering> steering_from(const Session& s, py::handle steer) {
  std::vector<research::Steering> out;
  if (steer.is_none()) return out;
  py::list items;
  if (py::isinstance<py::dict>(steer)) items.append(steer);
  else items = py::list(py::reinterpret_borrow<py::object>(steer));
  for (py::handle h : items) {
    if (!py::isinstance<py::dict>(h))
      raise_error({ErrorCode::invalid_argument, "steer: each entry is a dict(layer=, vector=, coef=1.0, from_=0) "
                                                "(model.steering_vector(...) makes one)"});
    py::dict d = py::reinterpret_borrow<py::dict>(h);
    research::Steering st;
    for (auto [k, v] : d) {  // a typo such as 'from' changed nothing, silently
      const std::string key = py::str(k);
      if (key != "layer" && key != "vector" && key != "coef" && key != "from_")
        raise_error({ErrorCode::invalid_argument, "steer: unknown key '" + key + "'" +
                                                      (key == "from" ? " (the first position is 'from_': 'from' is Python's keyword)" : "") +
                                                      "; a steering's keys are layer, vector, coef, from_"});
    }
    if (!d.contains("layer") || !d.contains("vector"))
      raise_error({ErrorCode::invalid_argument, "steer: a steering needs 'layer' and 'vector'"});
    st.layer = whole_arg(d["layer"], "steer: 'layer'");
    if (d.contains("coef")) {
      py::handle c = d["coef"];
      if (PyBool_Check(c.ptr()) || !PyNumber_Check(c.ptr()) || py::isinstance<py::str>(c))
        raise_error({ErrorCode::invalid_argument, "steer: 'coef' must be a number"});
      st.coef = py::float_(py::reinterpret_borrow<py::object>(c)).cast<float>();
    }
    if (d.contains("from_")) st.from = whole_arg(d["from_"], "steer: 'from_'");
    py::array_t<float, py::array::c_style | py::array::forcecast> v = py::array_t<float>::ensure(d["vector"]);
    if (!v || (v.ndim() != 1 && v.ndim() != 2))
      raise_error({ErrorCode::invalid_argument, "steer: 'vector' must be (C) or (rows, C) numbers"});
    st.rows = v.ndim() == 2 ? int(v.shape(0)) : 1;
    st.vector.assign(v.data(), v.data() + v.size());
    check(research::steering_check(s.params.config, st));
    out.push_back(std::move(st));
  }
  return out;
}

namespace {

std::shared_ptr<Session> load(const std::string& path, const std::string& dtype, const std::string& compute, bool cache) {
  if (path.empty()) raise_error({ErrorCode::invalid_argument, "load: the path is empty; give a model folder or a .gguf file"});
  auto where = std::filesystem::absolute(path).lexically_normal();
  if (where.filename().empty()) where = where.parent_path();  // "dir/" is "dir"
  const auto key = std::make_tuple(where.string(), dtype, compute);
  {
    std::lock_guard<std::mutex> lock(g_loaded_mutex);
    if (auto it = g_loaded.find(key); it != g_loaded.end())
      if (auto s = it->second.lock()) return s;
  }
  const model::DtypeChoice d = take(model::dtype_choice_parse(dtype));
  const model::ComputeChoice c = take(model::compute_choice_parse(compute));
  auto s = std::make_shared<Session>();
  s->path = path;
  s->dtype = dtype;
  s->compute = compute;
  const auto p = std::filesystem::path(path).lexically_normal();
  s->name = p.filename().empty() ? p.parent_path().filename().string() : p.filename().string();
  Status loaded;
  {
    py::gil_scoped_release nogil;
    // the same door and checks as the CLI (cli/text_or_ids.cpp: load_model_for_cli)
    auto params = model::model_load(path, {.dtype = d, .compute = c, .cache = cache});
    if (!params) {
      loaded = tl::unexpected(params.error());
    } else {
      s->params = std::move(*params);
      if (auto t = model::model_tokenizer_load(path)) {
        s->tokenizer = std::make_unique<model::BpeTokenizer>(std::move(*t));
        loaded = model::config_check_tokenizer(s->params.config, s->tokenizer->vocab_size(), path);
      } else if (t.error().code != ErrorCode::not_found) {
        loaded = tl::unexpected(t.error());
      }
    }
  }
  check(loaded);
  std::lock_guard<std::mutex> lock(g_loaded_mutex);
  g_loaded[key] = s;
  return s;
}

}  // namespace

}  // namespace headlab::python

PYBIND11_MODULE(_headlab, m) {
  using namespace headlab::python;
  m.doc() = "headlab's engine and research toolbox (include/headlab.h), for Python";
  register_errors(m);
  py::class_<Session, std::shared_ptr<Session>> cls(m, "Model", "A loaded model: headlab.load(path) makes one.");
  m.def("load", &load, py::arg("path"), py::arg("dtype") = "auto", py::arg("compute") = "f32", py::arg("cache") = true,
        "Loads a Hugging Face folder (GPT-2, GPT-NeoX, Llama, Mistral, Qwen 2/3, Gemma 2/3) or a .gguf file, once per\n"
        "process: loading the same path, dtype and compute again returns the model already loaded.\n"
        "dtype: auto (the file's), f32, bf16, f16; compute: f32, bf16 (a bf16 matrix's inputs rounded to bfloat16)\n"
        "or q8 (a GGUF's Q4_0/Q8_0/Q4_K/Q5_K/Q6_K blocks multiplied by inputs rounded to 8 bits, as llama.cpp does);\n"
        "cache: keep the packed weights in a cache file beside the model (as the CLI does unless --no-cache).");
  m.def("_sessions_alive", &sessions_alive, "Models loaded and not yet freed (for tests).");
  m.def("library_version", &headlab::library_version);
  // OpenBLAS chooses its kernels when it loads; the CLI re-executes itself with the best ones
  // (model/blas.h), which a module cannot: __init__.py warns when they rank below the CPU's.
  m.def("_blas", [] {
    const char* best = headlab::model::blas_core_for(headlab::model::cpu_features());
    return py::make_tuple(std::string(headlab::model::blas_core_name()), std::string(best),
                          headlab::model::blas_core_rank(headlab::model::blas_core_name()),
                          headlab::model::blas_core_rank(best), headlab::model::blas_kernels_description());
  });
  bind_model(m, cls);
  bind_research(cls);
}
