"""The activation cache run_with_cache returns: TransformerLens's names and shapes, batch first.

    cache["blocks.0.attn.hook_pattern"]      # (B, NH, T, T)
    cache["pattern", 0]                      # the same, TL's shorthand (name, layer)
    cache["resid_pre", 3], cache["embed"]    # blocks.3.hook_resid_pre, hook_embed
"""

# TL's utils.get_act_name shorthands: short name -> the name after "blocks.{l}." (or the whole name)
_SHORT = {
    "embed": "hook_embed", "pos_embed": "hook_pos_embed",
    "resid_pre": "hook_resid_pre", "resid_mid": "hook_resid_mid", "resid_post": "hook_resid_post",
    "attn_out": "hook_attn_out", "mlp_out": "hook_mlp_out",
    "q": "attn.hook_q", "k": "attn.hook_k", "v": "attn.hook_v", "z": "attn.hook_z",
    "rot_q": "attn.hook_rot_q", "rot_k": "attn.hook_rot_k",
    "attn_scores": "attn.hook_attn_scores", "pattern": "attn.hook_pattern", "attn": "attn.hook_pattern",
    "result": "attn.hook_result",
    "pre": "mlp.hook_pre", "pre_linear": "mlp.hook_pre_linear", "post": "mlp.hook_post",
    "scale": "ln_final.hook_scale", "normalized": "ln_final.hook_normalized",
}


def act_name(name, layer=None):
    """TransformerLens's get_act_name: ("pattern", 0) -> "blocks.0.attn.hook_pattern"."""
    full = _SHORT.get(name, name)
    if layer is not None and (isinstance(layer, bool) or not hasattr(layer, "__index__")):
        raise KeyError(f"the layer of ({name!r}, {layer!r}) must be a whole number")
    if layer is not None and layer < 0:
        raise KeyError(f"({name!r}, {layer}): a negative layer needs the model's layer count; "
                       f"give model.cfg['n_layers'] + ({layer})")
    if layer is None or name in ("embed", "pos_embed"):
        return full
    if name in ("scale", "normalized"):
        raise KeyError(f"{name!r} with a layer: name the norm, e.g. 'blocks.{layer}.ln1.hook_scale'")
    return f"blocks.{layer}.{full}"


class ActivationCache:
    """A dict of numpy arrays under TL's hook names, with the prompts' tokens.

    tokens: each prompt's ids, unpadded; lengths: their lengths (a batch is right-padded to the longest).
    """

    def __init__(self, tensors, tokens):
        self._tensors = tensors
        self.tokens = tokens
        self.lengths = [len(t) for t in tokens]

    def __getitem__(self, key):
        if isinstance(key, tuple):
            key = act_name(*key)
        try:
            return self._tensors[key]
        except KeyError:
            raise KeyError(f"{key!r} is not in this cache; it holds {len(self._tensors)} hooks "
                           f"(run_with_cache's names_filter chose them): {', '.join(list(self._tensors)[:6])}...") from None

    def __contains__(self, key):
        if isinstance(key, tuple):
            try:
                key = act_name(*key)
            except (KeyError, TypeError):  # a name no hook has: not in the cache
                return False
        return key in self._tensors

    def __iter__(self):
        return iter(self._tensors)

    def __len__(self):
        return len(self._tensors)

    def keys(self):
        return self._tensors.keys()

    def values(self):
        return self._tensors.values()

    def items(self):
        return self._tensors.items()

    def nbytes(self):
        return sum(a.nbytes for a in self._tensors.values())

    def __repr__(self):
        return f"<headlab.ActivationCache: {len(self._tensors)} hooks, {len(self.tokens)} prompt(s), {self.nbytes() / 1e6:.2f} MB>"
