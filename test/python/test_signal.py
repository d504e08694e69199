# SPDX-License-Identifier: BSD-3-Clause
"""A program that handles SIGINT (Python's KeyboardInterrupt) and goes on keeps using shared
memory: libfabric's shm removes the process's regions in its signal handler, and the endpoints
libnaa kept for the next handle were then useless (a create over ofi+shm timed out, one with
auto stalled 3 s and fell back to tcp). Run in a process of its own, since the signal removes
every region of the process."""
import os
import subprocess
import sys

import pytest

SCALE = float(os.environ.get("NAA_TEST_TIME_SCALE", "1"))

SCRIPT = """
import os, signal, sys, time
import naa
a, b, c = bytearray(64), bytearray(64), bytearray(64)
def once():
    t = time.monotonic()
    with naa.Handle(10, [a, b], [c], naa=sys.argv[1], transport="ofi+shm") as h:
        h.invoke()
        h.wait()
    return time.monotonic() - t
try:
    once()
except naa.Error as e:
    print("SKIP", e)
    sys.exit(0)
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
    print("no KeyboardInterrupt")
    sys.exit(1)
except KeyboardInterrupt:
    pass
print("after the interrupt: %.3f s" % once())
"""


def test_shm_after_a_handled_sigint(server, tmp_path):
    script = tmp_path / "interrupted.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, NAA_CONNECT_TIMEOUT=str(int(10 * SCALE)))
    r = subprocess.run([sys.executable, str(script), server], env=env, capture_output=True,
                       text=True, timeout=120 * SCALE)
    if r.stdout.startswith("SKIP"):
        pytest.skip("no shm connection here: " + r.stdout.strip())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "after the interrupt:" in r.stdout, r.stdout + r.stderr
