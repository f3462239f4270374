"""headlab for Python: the engine and research toolbox of headlab (include/headlab.h), in a notebook.

    import headlab
    model = headlab.load("models/headlab-tiny")                  # a Hugging Face folder or a .gguf file
    tokens = model.to_tokens("When Mary and John went to the store")  # (1, T) int64
    logits, cache = model.run_with_cache(tokens, names_filter="blocks.*.attn.hook_pattern")
    cache["blocks.0.attn.hook_pattern"].shape                   # (1, NH, T, T), TransformerLens's names and shapes
    headlab.views.attention_patterns(cache["pattern", 0][0], model.to_str_tokens(tokens))  # the lessons' grid, inline

headlab.views draws inline in Jupyter with the web app's own components (the lessons' weights grid, the
explorer's patching heatmap and lens table), built into one script that installs with the module.

Every method calls the function the CLI (`headlab cache`, `patch`, `lens`, ...) and the API call; the
engine runs with the GIL released; its errors raise headlab.Error subclasses with its message
(InvalidArgumentError and TooLongError are ValueErrors, NotFoundError a FileNotFoundError).
A model loads once per process: load() of the same path again returns it; the last reference
dropped frees it. One model may be called from several threads at once.
"""
import contextvars as _contextvars
import os as _os

from ._headlab import (  # noqa: F401
    CorruptError,
    Error,
    InternalError,
    InvalidArgumentError,
    IOError,
    Model,
    NotFoundError,
    TooLongError,
    UnavailableError,
    UnsupportedError,
    library_version,
)
from .cache import ActivationCache
from . import _headlab
from . import views  # noqa: F401

def load(path, dtype="auto", compute="f32", cache=True):
    return _headlab.load(_os.fspath(path), dtype, compute, cache)


load.__doc__ = _headlab.load.__doc__ + "\npath: a str or an os.PathLike (pathlib.Path)."

__all__ = ["load", "Model", "ActivationCache", "Error", "InvalidArgumentError", "TooLongError", "NotFoundError",
           "CorruptError", "UnsupportedError", "views"]


def _run_with_cache(self, input, names_filter=None, *, prepend_bos=None, truncate=False, max_mb=2048,
                    return_logits=True, steer=None):
    """TransformerLens's run_with_cache (research/cache.h, `headlab cache`): (logits, cache).

    input: a text, a list of texts (right-padded to the longest: padded positions hold 0,
    attn_scores -inf), or token ids ((T), (B, T), a list of lists). names_filter: None (every
    hook), a name or glob ('blocks.*.attn.hook_pattern'; ',' separates several), a list of them,
    or a function of a name. logits: (B, T, V) float32; each cached tensor: TL's shape with the
    batch axis first, a numpy view of the engine's memory (no copy). max_mb bounds the cache.
    steer: [dict(layer=, vector=, coef=1.0, from_=0)] (model.steering_vector makes one), or a
    `with model.hooks(steer=...)` block: every prompt's run steered, as `headlab cache --steer`;
    the cached blocks.{layer}.hook_resid_pre is the steered one.
    """
    logits, tensors, tokens = self._run_with_cache(input, names_filter, prepend_bos, truncate, max_mb, return_logits,
                                                   steer)
    cache = ActivationCache(tensors, tokens)
    return (logits, cache) if return_logits else cache


Model.run_with_cache = _run_with_cache


def _check_blas():
    """OpenBLAS picks its kernels when it loads, and Debian's 0.3.21 picks slow ones on recent CPUs;
    the CLI re-executes itself with the CPU's best (src/model/blas.h), a module cannot: it says so."""
    import os
    import warnings
    core, best, rank, best_rank, _ = _headlab._blas()
    if "OPENBLAS_CORETYPE" not in os.environ and 0 <= rank < best_rank:
        warnings.warn(f"OpenBLAS loaded its {core} kernels; this CPU runs {best}'s, several times faster for large "
                      f"models: start Python with OPENBLAS_CORETYPE={best} in the environment", stacklevel=3)


_check_blas()


_KINDS = ("ablate", "block", "uniform", "steer")


def _as_list(value):
    """An argument of hooks() as a list of entries: None is none, a steering dict is one."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [value]
    return list(value)


class _Hooks:
    """The block model.hooks(...) returns: reusable, and nested blocks add up (the inner one's
    interventions and steering join the outer one's for the calls inside it)."""

    def __init__(self, model, **given):
        self._model = model
        self._given = {k: _as_list(v) for k, v in given.items()}
        self._tokens = []

    def __enter__(self):
        active = dict(_ACTIVE.get())
        outer = active.get(id(self._model), {})
        merged = {k: (outer.get(k) or []) + self._given[k] for k in _KINDS}
        active[id(self._model)] = {k: (v or None) for k, v in merged.items()}
        self._tokens.append(_ACTIVE.set(active))
        return self._model

    def __exit__(self, *exc):
        _ACTIVE.reset(self._tokens.pop())
        return False


def _hooks(self, ablate=None, block=None, uniform=None, steer=None):
    """Interventions as a context manager: inside the block, model.forward(...) and
    model.intervene(...) apply them (and model.patch(...) and model.run_with_cache(...) the
    steering; these two refuse head interventions they would not apply; the other methods that
    run the model refuse the block), as if passed as arguments. Blocks nest: an inner block adds
    to the outer one. A block may be entered again. The block is this thread's (a context
    variable): another thread's calls are not changed.

        with model.hooks(ablate=[(1, 4)]):
            logits = model.forward("The cat sat")
    """
    return _Hooks(self, ablate=ablate, block=block, uniform=uniform, steer=steer)


# the interventions of the `with model.hooks(...)` blocks this thread (context) is inside, by model
_ACTIVE = _contextvars.ContextVar("headlab_active_hooks", default={})


def _with_active(name, keys):
    method = getattr(Model, name)

    def call(self, *args, **kwargs):
        active = _ACTIVE.get().get(id(self))
        if active:
            ignored = [k for k in _KINDS if k not in keys and active.get(k) is not None]
            if ignored:
                if not keys:
                    raise InvalidArgumentError(f"model.{name} does not apply a `with model.hooks(...)` block "
                                               f"({', '.join(k + '=' for k in ignored)}): call it outside the block")
                raise InvalidArgumentError(f"model.{name} applies only steer= of a `with model.hooks(...)` block, "
                                           f"not {', '.join(ignored)}=: call it outside the block, or use model.forward "
                                           f"or model.intervene")
            for k in keys:
                if active.get(k) is not None:
                    if kwargs.get(k) is None:
                        kwargs[k] = active[k]
                    else:  # the call's own and the block's, together
                        kwargs[k] = active[k] + _as_list(kwargs[k])
        return method(self, *args, **kwargs)

    call.__doc__ = method.__doc__
    call.__name__ = name
    return call


Model.hooks = _hooks
Model.forward = _with_active("forward", ("ablate", "block", "uniform", "steer"))
Model.intervene = _with_active("intervene", ("ablate", "block", "uniform", "steer"))
Model.patch = _with_active("patch", ("steer",))
Model.run_with_cache = _with_active("run_with_cache", ("steer",))
# the methods that run the model but take no interventions: inside a block they would ignore it
for _name in ("lens", "attribute", "path_patch", "scan", "steering_vector"):
    setattr(Model, _name, _with_active(_name, ()))
Model.__call__ = lambda self, *a, **k: self.forward(*a, **k)
