"""Build the Cython kernels in rcfmt/_native.

Compiler directives live here and only here. Set ``RCFMT_DEBUG=1`` to build with
bounds checks, wraparound checks and initialized-memory checks on (CI runs the test
suite once on such a build). ``RCFMT_BUILD_ONLY=a,b`` limits the build to the named
modules (useful while developing one kernel).
"""
import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("RCFMT_DEBUG", "") not in ("", "0")
ONLY = {m for m in os.environ.get("RCFMT_BUILD_ONLY", "").split(",") if m}

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": False,
    "cdivision": not DEBUG,
    "initializedcheck": DEBUG,
    "nonecheck": DEBUG,
    "embedsignature": True,
}

# Portable optimisation only: no -march=native in anything we distribute.
COMPILE_ARGS = ["-O0", "-g"] if DEBUG else ["-O3", "-fno-strict-aliasing"]

native = Path("rcfmt") / "_native"
extensions = [
    Extension(
        f"rcfmt._native.{pyx.stem}",
        [str(pyx)],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=COMPILE_ARGS,
    )
    for pyx in sorted(native.glob("*.pyx"))
    if not ONLY or pyx.stem in ONLY
]

setup(
    # Separate build trees: a release build must never pick up debug objects.
    options={"build": {"build_base": "build/debug" if DEBUG else "build/release"}},
    ext_modules=cythonize(
        extensions,
        compiler_directives=DIRECTIVES,
        # A debug build must not reuse C files generated for a release build.
        force=DEBUG,
        build_dir="build/cython-debug" if DEBUG else "build/cython",
    ),
)
