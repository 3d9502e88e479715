# SPDX-License-Identifier: Apache-2.0
"""Build of the `mooncake` Python package: the C extension mooncake.store
over libmooncake, and the pure-Python mooncake.async_store.

Where libmooncake comes from:
  MOONCAKE_BUILD   a build tree of this repository (default: ../.output
                   when it holds lib/libmooncake.so); its lib/ is linked
                   and recorded as the extension's run path, so a venv
                   install works without LD_LIBRARY_PATH;
  otherwise        the system's (include/mooncake/ and libmooncake.so
                   installed, as by the libmooncake-dev package).
  MOONCAKE_NO_RPATH=1  no run path even with MOONCAKE_BUILD (the Debian
                   package links the build tree's library and runs against
                   libmooncake0's).
Offline: `pip install --no-build-isolation ./python` uses the setuptools
already installed (Debian's python3-setuptools, or the venv's).
"""
import os

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)
build = os.environ.get("MOONCAKE_BUILD") or os.path.join(top, ".output")
if not os.path.isabs(build):
    build = os.path.join(top, build)
include_dirs, library_dirs, rpath = [], [], []
if os.path.exists(os.path.join(build, "lib", "libmooncake.so")):
    include_dirs.append(os.path.join(top, "include"))
    library_dirs.append(os.path.join(build, "lib"))
    if not os.environ.get("MOONCAKE_NO_RPATH"):
        rpath.append(os.path.join(build, "lib"))
elif os.path.isdir(os.path.join(top, "include", "mooncake")):
    include_dirs.append(os.path.join(top, "include"))

ext = Extension(
    "mooncake.store",
    sources=[os.path.join("src", f) for f in
             ("store.c", "store-get.c", "store-query.c", "store-zcopy.c", "config.c", "buffer.c")],
    include_dirs=include_dirs,
    library_dirs=library_dirs,
    runtime_library_dirs=rpath,
    libraries=["mooncake"],
    extra_compile_args=["-std=gnu17", "-Wall", "-Wextra", "-Wno-unused-parameter",
                        "-Wno-missing-field-initializers", "-D_GNU_SOURCE"],
)

setup(
    name="mooncake",
    version="0.1.0",
    description="Mooncake Store client (the original's mooncake.store API over libmooncake)",
    license="Apache-2.0",
    packages=["mooncake"],
    ext_modules=[ext],
    python_requires=">=3.9",
)
