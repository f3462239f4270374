// python/src/binding.h — what the module's files share: the loaded model (a Session), the
// engine's errors as Python exceptions, numpy arrays that own the engine's buffers, and the
// inputs (text, texts, ids) made the model's by the same functions the CLI calls.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "headlab.h"

namespace headlab::python {
namespace py = pybind11;

// One loaded model: the weights, the tokenizer and a pool of workspaces (one per thread that
// runs it at a time). Shared by every Python handle of the same (path, dtype, compute): a
// model loads once per process; the last handle dropped frees it.
struct Session {
  std::string path, name, dtype, compute;
  model::Parameters params;
  std::unique_ptr<model::BpeTokenizer> tokenizer;  // null when the model has none

  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // A workspace for one call on this thread, returned to the pool when the handle goes.
  struct WorkspaceLease {
    Session* owner;
    std::unique_ptr<model::Workspace> ws;
    ~WorkspaceLease();
    model::Workspace& operator*() { return *ws; }
  };
  WorkspaceLease workspace();

  std::mutex pool_mutex;
  std::vector<std::unique_ptr<model::Workspace>> pool;
};
int sessions_alive();

// Raises the Python exception of the error's code (headlab.InvalidArgumentError, ...), with
// the engine's message. Needs the GIL.
[[noreturn]] void raise_error(const Error& e);
template <class T>
T take(Result<T>&& r) {
  if (!r) raise_error(r.error());
  return std::move(*r);
}
inline void check(const Status& s) {
  if (!s) raise_error(s.error());
}
void register_errors(py::module_& m);

// numpy arrays over memory the engine made, without a copy: the array keeps it alive.
template <class T>
py::array_t<T> array_from(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule base(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(shape, owned->data(), base);
}
py::array_t<float> array_from_shared(const std::shared_ptr<float[]>& memory, float* data,
                                     std::vector<py::ssize_t> shape);

// The model's inputs from what Python gives: a str (one text), a list of str (a batch), or
// ids (a list of ints or a 1-D array: one prompt; a list of lists or a 2-D array: a batch).
// Texts go through analysis::run_input_from_text by the BOS rule (TL's default_prepend_bos
// unless prepend_bos says), ids through run_input_from_ids as they are (no BOS unless
// prepend_bos=True), as `headlab cache --text/--ids` does.
struct Inputs {
  std::vector<analysis::RunInput> prompts;
  bool from_ids = false;
  std::vector<std::vector<int>> ids() const;
};
Inputs inputs_from(const Session& s, py::handle input, std::optional<bool> prepend_bos, bool truncate);
// A whole number for an argument (an int or numpy integer; not a bool, a float or a str), in
// +-2^30; else invalid_argument naming `what`.
bool is_whole(py::handle h);
int whole_arg(py::handle h, const std::string& what);
// ids only (a list of ints or a 1-D array), or nothing when `input` is text.
std::optional<std::vector<int>> ids_from(py::handle input);
// A token's text ("" for an unknown id), bytes that are not UTF-8 replaced.
py::str token_text(const Session& s, int id);

void bind_model(py::module_& m, py::class_<Session, std::shared_ptr<Session>>& cls);
void bind_research(py::class_<Session, std::shared_ptr<Session>>& cls);

// Interventions and steering as Python gives them (forward, intervene, patch):
//   ablate=[(layer, head), (layer, head, "mean")], block=[(layer, head or -1, key)],
//   uniform=[(layer, head)], steer=[Steering or dict(layer=, vector=, coef=, from_=)]
model::Interventions interventions_from(py::handle ablate, py::handle block, py::handle uniform);
std::vector<research::Steering> steering_from(const Session& s, py::handle steer);
py::dict steering_to_dict(const research::Steering& st);

}  // namespace headlab::python
