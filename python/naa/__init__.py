# SPDX-License-Identifier: BSD-3-Clause
"""Offload computations to network-attached accelerators (NAAs) from Python: libnaa's C ABI.

    import numpy as np, naa
    a, b = np.arange(4.0), np.ones(4)
    c = np.empty(4)
    with naa.Handle(10, inputs=[a, b], outputs=[c]) as h:   # vecadd_f64 on naa-server
        h.invoke()
        h.wait()                                          # c == a + b

The parameters are any C-contiguous buffer-protocol objects (NumPy arrays, bytearray,
memoryview, array.array), used in place: no copy is made. Which NAA serves a function code comes
from NAA_SPEC or Slurm as for C programs (naa(7)), or from Handle(..., naa="host:port").
Failures raise naa.Error with the libnaa code (.code, .name) and libnaa's cause (.cause);
naa.last_error(), naa.stats(), naa.stats_energy(), naa.rc_string() and Handle.info() /
Handle.cancel() are the calls of the same names in C (naa.stats_energy: naa_stats_energy_get). Tutorial: python.md in libnaa's documentation directory
(PREFIX/share/doc/libnaa), the C API: man naa.
"""
from naa._naa import (  # noqa: F401 (re-exported)
    ERR_CANCELED,
    ERR_CONFIG,
    ERR_CONNECTION,
    ERR_IN_STATUS,
    ERR_INTERNAL,
    ERR_INVALID_ARGUMENT,
    ERR_INVALID_HANDLE,
    ERR_NAA,
    ERR_NO_NAA,
    ERR_NO_RESOURCES,
    ERR_PROTOCOL,
    ERR_STATE,
    ERR_TIMEOUT,
    ERR_TRANSPORT,
    ERR_UNSUPPORTED,
    UNDEFINED,
    Error,
    Handle,
    Status,
    last_error,
    rc_string,
    stats,
    stats_energy,
    strerror,
    version,
    wait_all,
    wait_any,
)


def _keep_python_signal_handlers():
    # Loading libnaa loads libfabric, and with it (Debian's libfabric 1.17) libinfinipath, whose
    # constructor replaces the C handlers of SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGILL and
    # SIGABRT; libnaa then puts the defaults back (naa(7), SIGNALS). Python's own handlers are
    # installed again here: Ctrl-C raises KeyboardInterrupt, as before the import.
    import signal
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL,
                   signal.SIGABRT):
        handler = signal.getsignal(number)
        if callable(handler):
            try:
                signal.signal(number, handler)
            except ValueError:  # not the main thread: signal handlers cannot be set here
                return


_keep_python_signal_handlers()
__version__ = version()
__all__ = [name for name in dir() if not name.startswith("_")]
