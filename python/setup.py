# SPDX-License-Identifier: BSD-3-Clause
"""The extension naa._naa, compiled and linked against the libnaa that pkg-config finds
(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig for an installation outside the system's directories),
with a run-time path to its library directory, so that `import naa` needs no LD_LIBRARY_PATH."""
import glob
import os
import shlex
import subprocess

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "naa"], check=True, capture_output=True,
                             text=True).stdout
    except FileNotFoundError:
        raise SystemExit("naa: pkg-config is not installed; it finds the installed libnaa")
    except subprocess.CalledProcessError as e:
        raise SystemExit("naa: pkg-config finds no libnaa (naa.pc): install libnaa first and, for "
                         "an installation in PREFIX, set PKG_CONFIG_PATH=PREFIX/lib/pkgconfig\n"
                         + e.stderr.strip())
    return out.strip()


def flags(option, prefix):
    return [f[len(prefix):] for f in shlex.split(pkg_config(option)) if f.startswith(prefix)]


libdirs = flags("--libs-only-L", "-L") or [pkg_config("--variable=libdir")]
extension = Extension(
    "naa._naa",
    sources=sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "naa", "*.c"))),
    depends=[os.path.join("naa", "naapy.h")],
    include_dirs=flags("--cflags-only-I", "-I"),
    library_dirs=libdirs,
    libraries=flags("--libs-only-l", "-l"),
    runtime_library_dirs=libdirs,
    extra_compile_args=["-fvisibility=hidden"],
)

setup(version=pkg_config("--modversion"), ext_modules=[extension])
