"""A cache from the module round-trips into the PyTorch reference (tools/reference/research_reference.py,
float64 from the weights as stored): every hook equals the reference's, and the reference run
continued from headlab's cached resid_pre of block 1 gives headlab's logits."""
import os
import sys

import numpy as np
import pytest

from conftest import ROOT, TINY

torch = pytest.importorskip("torch")  # Debian's python3-torch
sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))
import research_reference as rr  # noqa: E402

TEXT = " the cat sat on the mat and the dog sat on the log. the cat sat on the"


def test_every_cached_hook_equals_the_pytorch_reference(tiny):
    logits, cache = tiny.run_with_cache(TEXT)
    ids = cache.tokens[0]
    m = rr.load("headlab_tiny", TINY)
    ref_logits, ref = rr.run_with_hooks(m, ids)
    assert set(cache.keys()) == set(ref.keys())
    for name in cache:
        want = ref[name].numpy()
        got = cache[name][0]
        finite = np.isfinite(want)
        assert (np.isfinite(got) == finite).all(), name  # the masked scores are -inf in both
        np.testing.assert_allclose(got[finite], want[finite], atol=2e-4, rtol=1e-3, err_msg=name)
    np.testing.assert_allclose(logits[0], ref_logits.numpy(), atol=2e-4, rtol=1e-3)


def test_the_reference_continues_from_headlabs_cached_residual(tiny):
    logits, cache = tiny.run_with_cache(TEXT, names_filter="blocks.1.hook_resid_pre")
    resid = torch.from_numpy(cache["resid_pre", 1][0].astype(np.float64))
    m = rr.load("headlab_tiny", TINY)
    patched, _ = rr.run_with_hooks(m, cache.tokens[0], {"blocks.1.hook_resid_pre": lambda x: resid})
    np.testing.assert_allclose(logits[0], patched.numpy(), atol=2e-4, rtol=1e-3)
