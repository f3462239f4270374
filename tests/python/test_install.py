"""python/install.sh's staleness check of the notebook views: it builds web/dist-notebook/headlab_views.js
when it is missing or older than a file under web/src, web/vite.notebook.config.ts or web/package.json,
and names that file. Run on a copy of install.sh in a temporary checkout of those files, with npm, cmake
and the venv's python stubbed (each records its call), so nothing is really built."""
import os
import shutil
import stat
import subprocess

import pytest

from conftest import ROOT

SOURCES = ["web/src/notebook/PatchFigure.svelte", "web/src/explorer/research/patch_compare.ts", "web/vite.notebook.config.ts",
           "web/package.json"]
BUNDLE = "web/dist-notebook/headlab_views.js"


def stub(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


@pytest.fixture
def checkout(tmp_path):
    """A checkout holding install.sh, the views' sources and a bundle newer than all of them."""
    root = tmp_path / "checkout"
    (root / "python").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "python", "install.sh"), root / "python" / "install.sh")
    for rel in SOURCES + [BUNDLE]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    for rel in SOURCES:
        os.utime(root / rel, (1_000_000_000, 1_000_000_000))
    os.utime(root / BUNDLE, (1_000_000_100, 1_000_000_100))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    # npm run build --prefix WEB writes the bundle, as the real build does
    stub(bin_dir / "npm", f'echo "npm $*" >> {log}\nmkdir -p "$4/dist-notebook" && echo built > "$4/dist-notebook/headlab_views.js"\n')
    stub(bin_dir / "cmake", f'echo "cmake $1" >> {log}\n')
    venv_bin = tmp_path / "prefix" / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    stub(venv_bin / "python", f'echo "pip" >> {log}\n')

    def install():
        env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        env.pop("HEADLAB_BUILD_DIR", None)
        r = subprocess.run(["bash", str(root / "python" / "install.sh"), str(tmp_path / "prefix")],
                           capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
        calls = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        return r.stdout, [c for c in calls if c.startswith("npm")]

    install.root = root
    return install


def test_fresh_views_are_installed_as_they_are(checkout):
    out, npm = checkout()
    assert npm == []
    assert "notebook views" not in out


@pytest.mark.parametrize("source", SOURCES)
def test_a_newer_source_rebuilds_the_views_and_is_named(checkout, source):
    os.utime(checkout.root / source, (1_000_000_200, 1_000_000_200))
    out, npm = checkout()
    assert npm == [f"npm run build --prefix {checkout.root}/web"]
    assert f"rebuilding the notebook views: {source} is newer than {BUNDLE}" in out
    _, again = checkout()  # the rebuilt bundle is newer than every source now
    assert again == []


def test_missing_views_are_built(checkout):
    os.remove(checkout.root / BUNDLE)
    out, npm = checkout()
    assert npm == [f"npm run build --prefix {checkout.root}/web"]
    assert "web/dist-notebook is missing" in out
