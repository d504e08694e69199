# Spack recipe for libnaa. To use it, copy this file into a Spack package repository as
# packages/libnaa/package.py (e.g. `spack repo create`, then `spack install libnaa+fortran`).
# The git address below is a placeholder: point it at the repository you build from.
from spack.package import *


class Libnaa(AutotoolsPackage):
    """libnaa offloads computations of HPC codes (C, C++, Fortran, MPI jobs) to
    network-attached accelerators (FPGAs or servers reached over RDMA) with five
    MPI-flavoured calls, speaking the NAAICE MRSP wire protocol. Includes naa-server,
    a software NAA."""

    homepage = "https://libnaa.invalid/"
    git = "https://libnaa.invalid/libnaa.git"

    version("main", branch="main")

    variant("libfabric", default=True, description="libfabric transports (ofi+tcp, ofi+PROVIDER)")
    variant("verbs", default=False, description="rdma-core (libibverbs + librdmacm) for the verbs transport")
    variant("slurm", default=False, description="Slurm SPANK plugin (needs slurm/spank.h)")
    variant("fortran", default=False, description="Fortran 2008 module (naa.mod) and libnaaf")

    # Until the verbs transport is implemented, configure requires libfabric.
    conflicts("~libfabric", msg="libnaa needs libfabric: the verbs transport is not implemented yet")

    depends_on("c", type="build")
    depends_on("cxx", type="build")  # C++17
    depends_on("fortran", type="build", when="+fortran")

    # Git checkouts carry no configure script: Spack's autoreconf phase makes one.
    depends_on("autoconf@2.69:", type="build")
    depends_on("automake@1.16:", type="build")
    depends_on("libtool", type="build")
    depends_on("pkgconfig", type="build")  # pkg.m4 for configure; cmocka is found with it

    depends_on("libfabric fabrics=tcp", when="+libfabric")  # tcp: the default ofi+tcp transport
    depends_on("rdma-core", when="+verbs")
    depends_on("slurm", when="+slurm")
    depends_on("cmocka@1.1:", type="test")  # make check

    def configure_args(self):
        spec = self.spec
        args = []
        # Every --with-X of libnaa is auto-detected by default: pass each one explicitly so
        # that what Spack concretized is what gets built.
        args += self.with_or_without("libfabric", activation_value="prefix")
        args += self.with_or_without("verbs", activation_value=lambda _: spec["rdma-core"].prefix)
        args += self.with_or_without("slurm", activation_value="prefix")
        args += self.enable_or_disable("fortran")  # naa.mod goes to <prefix>/lib/fortran/modules
        return args
