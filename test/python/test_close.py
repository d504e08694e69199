# SPDX-License-Identifier: BSD-3-Clause
"""close() on a naa.Handle while another thread is inside a call on it (wait, wait_any,
wait_all): naa_finalize returns at once then, and libnaa still writes the result into the
outputs until that call returns, so the handle must keep its buffer exports (and with them
the objects) until the last call on it has returned. make check runs this suite with
PYTHONMALLOC=debug, under which a write into a freed output aborts the interpreter."""
import os
import struct
import subprocess
import sys
import threading
import time

import pytest

import naa

NAP_FILL = 105  # test/unit/kernel_plugin.c: sleeps region 0's first 4 bytes in ms, then fills
SCALE = float(os.environ.get("NAA_TEST_TIME_SCALE", "1"))
ATTEMPTS = 5


def nap_input(ms, fill):
    return bytearray(struct.pack("<IB", int(ms), fill) + bytes(3))


def close_while_waiting(address, wait):
    """One attempt: a thread calls wait(h) on an invocation of nap_fill that lands its result
    1 s (scaled) later; the main thread closes the handle meanwhile and then tries to free the
    output (bytearray.clear(), which a buffer export refuses). Returns (the waiter's outcome,
    whether the clear was refused, the output)."""
    inp = nap_input(1000 * SCALE, 0xAB)
    out = bytearray(65536)
    h = naa.Handle(NAP_FILL, [inp], [out], naa=address, timeout_ms=int(30000 * SCALE))
    h.invoke()
    about_to_wait = threading.Event()
    outcome = {}

    def waiter():
        about_to_wait.set()
        try:
            outcome["result"] = wait(h)
        except naa.Error as e:
            outcome["error"] = e

    t = threading.Thread(target=waiter)
    t.start()
    about_to_wait.wait()
    time.sleep(0.2 * SCALE)  # the waiter is inside libnaa by now, most likely (checked below)
    h.close()
    try:
        out.clear()  # frees the 64 KiB the waiter's result is headed for
        refused = False
    except BufferError:
        refused = True
    # Memory the freed output had: the result would land in it.
    litter = [bytearray(65536) for _ in range(16)]
    t.join()
    del litter
    return outcome, refused, out


def closed_before_the_wait(outcome):
    """The waiter started only after close() (it saw a closed handle): the premise failed."""
    e = outcome.get("error")
    return e is not None and "closed" in str(e)


@pytest.mark.parametrize("wait", [
    pytest.param(lambda h: h.wait(), id="wait"),
    pytest.param(lambda h: naa.wait_any([h]), id="wait_any"),
    pytest.param(lambda h: naa.wait_all([h]), id="wait_all"),
])
def test_close_keeps_the_outputs_while_another_thread_waits(plugin_server, wait):
    for _ in range(ATTEMPTS):
        outcome, refused, out = close_while_waiting(plugin_server.address, wait)
        if closed_before_the_wait(outcome):
            continue
        # close() kept the export while the waiter was inside; the waiter's return released it.
        assert refused, f"close() released the output while another thread waited ({outcome})"
        out.clear()
        return
    pytest.skip(f"the waiter never got inside the wait before close() in {ATTEMPTS} attempts")


def test_close_twice_and_calls_after_close(plugin_server):
    inp = nap_input(0, 1)
    out = bytearray(8)
    h = naa.Handle(NAP_FILL, [inp], [out], naa=plugin_server.address)
    h.close()
    h.close()
    with pytest.raises(naa.Error) as e:
        h.wait()
    assert e.value.code == naa.ERR_INVALID_HANDLE
    assert naa.wait_any([h]) is None
    out.extend(b"x")  # no export is left: the buffer may change size again


def test_interpreter_exit_while_a_daemon_thread_waits(plugin_server, tmp_path):
    """The interpreter shuts down right after close() while a daemon thread is inside
    naa_wait: nothing frees the output under it, and the process exits normally."""
    script = tmp_path / "exit_while_waiting.py"
    script.write_text(f"""
import struct, threading, time
import naa
inp = bytearray(struct.pack("<IB", {int(500 * SCALE)}, 7) + bytes(3))
out = bytearray(65536)
h = naa.Handle({NAP_FILL}, [inp], [out], naa="{plugin_server.address}")
h.invoke()
started = threading.Event()
def waiter():
    started.set()
    h.wait()
threading.Thread(target=waiter, daemon=True).start()
started.wait()
time.sleep({0.1 * SCALE})
h.close()
try:
    out.clear()
except BufferError:
    pass
litter = [bytearray(65536) for _ in range(16)]
""")  # and exits with the waiter inside naa_wait
    env = dict(os.environ, PYTHONMALLOC="debug")
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=120 * SCALE)
    assert r.returncode == 0, r.stderr
