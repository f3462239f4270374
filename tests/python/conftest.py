"""Fixtures of the Python module's tests (tests/python/run.sh runs them): the built-in model, the
CLI binary the numbers are compared with, and its JSON answers."""
import json
import os
import subprocess

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TINY = os.path.join(ROOT, "models", "headlab-tiny")


@pytest.fixture(scope="session")
def tiny():
    import headlab
    return headlab.load(TINY, cache=False)


@pytest.fixture(scope="session")
def cli():
    """cli(*args) -> stdout of `headlab args...` (HEADLAB_BIN, else build/headlab)."""
    binary = os.environ.get("HEADLAB_BIN", os.path.join(ROOT, "build", "headlab"))
    if not os.access(binary, os.X_OK):
        pytest.fail(f"the CLI {binary} is not built: set HEADLAB_BIN or build headlab_cli")

    def run(*args):
        r = subprocess.run([binary, *args], capture_output=True, text=True)
        assert r.returncode == 0, f"headlab {' '.join(args)} failed: {r.stderr}"
        return r.stdout

    run.json = lambda *args: json.loads(run(*args, "--format", "json"))
    return run
