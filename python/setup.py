"""Builds headlab's Python module against the installed library (cmake --install; README.md,
"Python"). Offline, with Debian's setuptools and pybind11:

    HEADLAB_PREFIX=/path/to/prefix pip install --no-build-isolation ./python

HEADLAB_PREFIX is where `cmake --install build --prefix ...` put headlab (its
lib/pkgconfig/headlab.pc is read); without it, pkg-config's own search path is used.
The notebook views (headlab.views) are the web app's components built into one script,
web/dist-notebook/headlab_views.js (`npm run build --prefix web`): installed as package data,
and the install fails without it; beside it web/src/explorer/research/patch_compare_bands.json, the
words the explorer's comparison says a correlation with (headlab.views.correlation_words).
"""
import os
import shlex
import shutil
import subprocess

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup
from setuptools.command.build_py import build_py


def headlab_flags():
    env = dict(os.environ)
    prefix = os.environ.get("HEADLAB_PREFIX")
    if prefix:
        pc = os.path.join(os.path.abspath(prefix), "lib", "pkgconfig")
        env["PKG_CONFIG_PATH"] = pc + os.pathsep + env.get("PKG_CONFIG_PATH", "")
    try:
        out = subprocess.run(["pkg-config", "--cflags", "--libs", "headlab"], env=env, check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("headlab's installed library was not found by pkg-config (headlab.pc): build and install it "
                         "first (cmake --build build --target headlab_shared && cmake --install build --prefix PREFIX), "
                         "then set HEADLAB_PREFIX=PREFIX. " + str(getattr(e, "stderr", e))) from None
    flags = shlex.split(out)
    include = [f[2:] for f in flags if f.startswith("-I")]
    libdirs = [f[2:] for f in flags if f.startswith("-L")]
    libs = [f[2:] for f in flags if f.startswith("-l")]
    return include, libdirs, libs


include, libdirs, libs = headlab_flags()
here = os.path.dirname(os.path.abspath(__file__))
ext = Pybind11Extension(
    "headlab._headlab",
    [os.path.join("src", f) for f in ("module.cpp", "model_methods.cpp", "research_methods.cpp")],
    include_dirs=include,
    library_dirs=libdirs,
    libraries=libs,
    runtime_library_dirs=libdirs,  # the module finds libheadlab.so where it was installed
    cxx_std=20,
    extra_compile_args=["-O2", "-fvisibility=hidden"],
)


class build_py_with_views(build_py):
    """build_py, then the web build's notebook script and the comparison's bands copied in beside views.py."""

    def run(self):
        super().run()
        bundle = os.path.join(here, "..", "web", "dist-notebook", "headlab_views.js")
        if not os.path.isfile(bundle):
            raise SystemExit(f"headlab.views needs the web app's notebook build, and {os.path.normpath(bundle)} is "
                             "missing: run `npm run build --prefix web` in the checkout first")
        target = os.path.join(self.build_lib, "headlab", "headlab_views.js")
        self.mkpath(os.path.dirname(target))
        shutil.copyfile(bundle, target)
        bands = os.path.join(here, "..", "web", "src", "explorer", "research", "patch_compare_bands.json")
        shutil.copyfile(bands, os.path.join(self.build_lib, "headlab", "patch_compare_bands.json"))


setup(
    name="headlab",
    version="0.1.0",
    description="headlab's transformer engine and research toolbox for Python (TransformerLens-style hooks)",
    packages=["headlab"],
    ext_modules=[ext],
    cmdclass={"build_ext": build_ext, "build_py": build_py_with_views},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
)
