# SPDX-License-Identifier: BSD-3-Clause
"""naa from several Python threads: handles of their own side by side, and waits that release
the GIL so that other threads run meanwhile."""
import threading
import time

import numpy as np
import pytest

import naa

VECADD = 10
SPIN = 102  # test/unit/kernel_plugin.c: never completes


def test_threads_with_handles_of_their_own(server):
    errors = []

    def work(k):
        try:
            a, b, c = np.full(4096, float(k)), np.arange(4096.0), np.zeros(4096)
            with naa.Handle(VECADD, [a, b], [c], naa=server) as h:
                for i in range(25):
                    a[:] = k + i
                    h.invoke()
                    h.wait()
                    if not np.array_equal(c, a + b):
                        errors.append(f"thread {k}, invocation {i}: wrong sums")
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(f"thread {k}: {e!r}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_wait_releases_the_gil(plugin_server):
    """A thread waits on a kernel that never completes; only a thread that runs Python
    meanwhile can end that wait early, by stopping the server (the wait then fails with
    ERR_CONNECTION, or ERR_NAA with the return code 0x7e of a kernel the server abandons). Were
    the GIL held through the wait, the main thread could not run and the wait would end at its
    deadline (ERR_TIMEOUT)."""
    buf = bytearray(8)
    h = naa.Handle(SPIN, [buf], [buf], naa=plugin_server.address, timeout_ms=10000)
    h.invoke()
    about_to_wait = threading.Event()
    outcome = {}

    def waiter():
        about_to_wait.set()
        start = time.monotonic()
        try:
            h.wait()
            outcome["code"] = None
        except naa.Error as e:
            outcome["code"] = e.code
        outcome["seconds"] = time.monotonic() - start

    t = threading.Thread(target=waiter)
    t.start()
    about_to_wait.wait()
    time.sleep(0.5)  # the waiter is inside naa_wait by now
    plugin_server.process.terminate()  # Python code, run while the other thread waits
    t.join()
    h.close()
    assert outcome["code"] in (naa.ERR_CONNECTION, naa.ERR_NAA), outcome


def test_wait_with_timeout_returns_none(plugin_server):
    buf = bytearray(8)
    with naa.Handle(SPIN, [buf], [buf], naa=plugin_server.address) as h:
        h.invoke()
        assert h.wait(timeout=0.2) is None
        assert h.test() is None
        with pytest.raises(naa.Error) as e:
            h.invoke()
        assert e.value.code == naa.ERR_STATE
