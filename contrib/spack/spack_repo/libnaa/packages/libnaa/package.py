# SPDX-License-Identifier: BSD-3-Clause
# Spack recipe for libnaa, package API v2 (Spack 1.x). How to use it and how to refresh the
# release checksum: contrib/spack/README.md. test/spack/check_recipe.py (make check) holds
# it to configure.ac.
import glob
import os
import subprocess
import time

from spack_repo.builtin.build_systems.autotools import AutotoolsPackage

from spack.package import *


class Libnaa(AutotoolsPackage):
    """libnaa offloads computations of HPC codes (C, C++, Fortran, MPI jobs) to
    network-attached accelerators (FPGAs or servers reached over RDMA) with five
    MPI-flavoured calls, speaking the NAAICE MRSP wire protocol. Includes naa-server,
    a software NAA."""

    # Where releases will be published (contrib/spack/README.md): not online yet.
    homepage = "https://github.com/libnaa/libnaa"
    url = "https://github.com/libnaa/libnaa/releases/download/v0.1.0/libnaa-0.1.0.tar.gz"
    git = "https://github.com/libnaa/libnaa.git"

    maintainers("libnaa")

    license("BSD-3-Clause")

    version("main", branch="main")
    version("0.1.0", sha256="1808c117b935d231905309dd16b1e7e2b71520ddc4d7fb3cee0d1ffed609b4fc")

    variant("libfabric", default=True, description="libfabric transports (ofi+tcp, ofi+PROVIDER)")
    variant("verbs", default=False, description="verbs transport (rdma-core: RoCE, InfiniBand)")
    variant("slurm", default=False, description="Slurm SPANK plugin (needs slurm/spank.h)")
    variant("pmix", default=False, description="one licence query per node through PMIx")
    variant("fortran", default=False, description="Fortran 2008 module (naa.mod) and libnaaf")
    variant("python", default=False, description="Python package naa (import naa)")
    variant(
        "builtin-transports",
        default=False,
        description="transports linked into libnaa.so, not modules (lib/libnaa/libnaa-*.so)",
    )

    # A conflict, not a requires(): Spack 1.x prints a conflict's own message first.
    conflicts(
        "~libfabric ~verbs",
        msg="libnaa needs a transport: +libfabric (ofi+tcp) and/or +verbs (RoCE, InfiniBand)",
    )

    depends_on("c", type="build")
    depends_on("cxx", type="build")  # C++17
    depends_on("fortran", type="build", when="+fortran")

    # The extension module naa._naa is built for this Python and installed into its
    # site-packages under the prefix (configure's pyexecdir).
    extends("python", when="+python")
    depends_on("python@3.10:", type=("build", "link", "run"), when="+python")
    depends_on("py-numpy", type="test", when="+python")  # the pytest suite in make check
    depends_on("py-pytest", type="test", when="+python")

    # Release tarballs carry configure; a git checkout needs Spack's autoreconf phase.
    with when("@main"):
        depends_on("autoconf@2.69:", type="build")
        depends_on("automake@1.16:", type="build")
        depends_on("libtool", type="build")
        depends_on("m4", type="build")

    # configure finds cmocka and PMIx with pkg-config, and autoreconf (@main) needs its pkg.m4.
    # One declaration for all of them: Spack 1.1's solver cannot give a virtual two dependency
    # types (build under one condition, test under another) when both hold for the root of
    # spack install --test=root (test/spack/check_recipe.py holds the recipe to one).
    depends_on("pkgconfig", type="build")

    # lib/transport/ofi/ofi_fabric.hpp asks fi_getinfo for API 1.9; tcp is the default ofi+tcp
    # transport. 1.17 is accepted on purpose (Debian 12's, often the site's tuned one): its tcp
    # provider can be crashed by a peer (naa(7)), which configure and naa-server warn about;
    # contrib/spack/README.md says to prefer another version.
    depends_on("libfabric@1.9: fabrics=tcp", when="+libfabric")
    depends_on("rdma-core", when="+verbs")
    depends_on("slurm", when="+slurm")  # headers only: libslurm is dlopened at run time
    depends_on("pmix", when="+pmix")  # headers only (found with pkg-config): libpmix is dlopened
    depends_on("cmocka@1.1:", type="test")  # make check

    def configure_args(self):
        spec = self.spec
        # Each of these is auto-detected by configure when not given: pass every one so that
        # what Spack concretized is what gets built, whatever else is on the build host.
        args = []
        args += self.with_or_without("libfabric", activation_value="prefix")
        args += self.with_or_without("verbs", activation_value=lambda _: spec["rdma-core"].prefix)
        args += self.with_or_without("slurm", activation_value="prefix")
        args += self.with_or_without("pmix")
        args += self.enable_or_disable("fortran")  # naa.mod goes to <prefix>/lib/fortran/modules
        args += self.enable_or_disable("python")
        args += self.enable_or_disable("builtin-transports")
        if spec.satisfies("+python"):
            args.append(f"PYTHON={spec['python'].command.path}")
        # examples/mpi_offload is neither installed nor run by make check; without this, an
        # mpicc on PATH (the system's) would be picked up and linked into it.
        args.append("--without-mpi")
        return args

    # --- stand-alone tests (spack test run libnaa) ------------------------------------------
    test_requires_compiler = True

    @run_after("install")
    def cache_test_sources(self):
        cache_extra_test_sources(self, [join_path("examples", "vecadd.c")])

    def test_version(self):
        """naa-info --version names libnaa and the installed version"""
        naa_info = which(join_path(self.prefix.bin, "naa-info"), required=True)
        out = naa_info("--version", output=str.split, error=str.split)
        expected = "naa-info (libnaa) "
        if not self.spec.satisfies("@main"):
            expected += str(self.spec.version)
        assert expected in out, f"naa-info --version printed {out!r}, expected {expected!r}"

    def test_vecadd(self):
        """examples/vecadd.c built against libnaa offloads to naa-server over loopback"""
        if not self.spec.satisfies("+libfabric"):
            raise SkipTest("needs +libfabric: verbs over loopback needs an RDMA device")
        src = join_path(install_test_root(self), "examples", "vecadd.c")
        # Spack 1.x sets no CC for stand-alone tests (spack-packages#5616): ask the compiler.
        cc = Executable(self["c"].cc)
        lib = self.prefix.lib
        cc(f"-I{self.prefix.include}", src, "-o", "vecadd", f"-L{lib}", "-lnaa",
           f"{self['c'].rpath_arg}{lib}")

        ready = join_path(os.getcwd(), "naa-server.port")
        server = subprocess.Popen(
            [join_path(self.prefix.bin, "naa-server"), "--address", "127.0.0.1",
             "--port", "0", "--transport", "ofi+tcp", "--ready-file", ready]
        )
        try:
            port = self._server_port(server, ready, timeout=60)
            vecadd = which(join_path(os.getcwd(), "vecadd"), required=True)
            env = {"NAA_SPEC": f"127.0.0.1:{port}:10:2", "NAA_TRANSPORT": "ofi+tcp",
                   "NAA_TIMEOUT": "60"}
            out = vecadd("100000", output=str.split, error=str.split, extra_env=env)
            assert "all 200000 elements correct" in out, f"vecadd printed {out!r}"
        finally:
            server.terminate()
            server.wait(timeout=30)

    @staticmethod
    def _server_port(server, ready, timeout):
        """The port naa-server writes to its ready file once it listens."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise AssertionError(f"naa-server exited with status {server.returncode}")
            if os.path.exists(ready) and os.path.getsize(ready) > 0:
                with open(ready) as f:
                    return int(f.read().strip())
            time.sleep(0.05)
        raise AssertionError(f"naa-server did not write {ready} within {timeout} s")

    def test_python(self):
        """import naa finds the installed package and names the installed version"""
        if not self.spec.satisfies("+python"):
            raise SkipTest("needs +python")
        # Where configure's pyexecdir put it: python_platlib (lib/python3.X/site-packages), which
        # need not be the interpreter's own platlib (Debian's is local/lib/python3/dist-packages).
        found = glob.glob(join_path(self.prefix, "lib*", "python*", "*-packages", "naa"))
        assert len(found) == 1, f"expected one naa package under {self.prefix}, found {found}"
        python = Executable(self.spec["python"].command.path)
        out = python("-c", "import naa; print(naa.version(), naa.__file__)",
                     output=str.split, error=str.split,
                     extra_env={"PYTHONPATH": os.path.dirname(found[0])})
        assert str(self.prefix) in out, f"import naa found {out!r}, not the one in {self.prefix}"
        if not self.spec.satisfies("@main"):
            assert str(self.spec.version) in out, f"naa.version() printed {out!r}"
