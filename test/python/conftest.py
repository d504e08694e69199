# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures of the naa pytest suite: real naa-servers on 127.0.0.1 (NAA_SERVER, set by make
check), and, with NAA_TAP_FILE set (test/python/pytest.tap), one TAP line per case."""
import os
import subprocess
import tempfile
import time

import pytest


class Server:
    """A naa-server on a free port of 127.0.0.1, stopped by stop()."""

    def __init__(self, *args, env=None):
        self.dir = tempfile.mkdtemp(prefix="naa-pytest-")
        ready = os.path.join(self.dir, "port")
        cmd = [os.environ["NAA_SERVER"], "--address", "127.0.0.1", "--port", "0",
               "--ready-file", ready, *args]
        self.process = subprocess.Popen(cmd, env=env)
        deadline = time.monotonic() + 60
        while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
            if self.process.poll() is not None:
                raise RuntimeError(f"naa-server exited with status {self.process.returncode}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("naa-server did not start within 60 s")
            time.sleep(0.01)
        with open(ready) as f:
            self.port = int(f.read())
        self.address = f"127.0.0.1:{self.port}"

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)


@pytest.fixture(scope="session")
def server():
    """One naa-server with the built-in kernels for the session; its "host:port"."""
    if "NAA_SERVER" not in os.environ:
        pytest.skip("NAA_SERVER is not set: run through make check")
    s = Server()
    yield s.address
    s.stop()


@pytest.fixture
def plugin_server():
    """A naa-server of its own with the test kernels (test/unit/kernel_plugin.c: 102 spins)."""
    plugin = os.environ.get("NAA_TEST_KERNEL_PLUGIN", "")
    if not os.path.exists(plugin):
        pytest.skip("the test kernel plugin was not built (configure found no cmocka)")
    s = Server("--kernel", plugin)
    yield s
    s.stop()


# --- TAP -----------------------------------------------------------------------------------
_tap = {"n": 0, "file": None}


def pytest_configure(config):
    path = os.environ.get("NAA_TAP_FILE")
    if path:
        _tap["file"] = open(path, "w")


def _tap_line(line):
    _tap["file"].write(line + "\n")
    _tap["file"].flush()


def pytest_runtest_logreport(report):
    if _tap["file"] is None:
        return
    name = report.nodeid.split("::", 1)[-1]
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _tap["n"] += 1
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
            _tap_line(f"ok {_tap['n']} - {name} # SKIP {reason}")
        elif report.passed:
            _tap_line(f"ok {_tap['n']} - {name}")
        else:
            _tap_line(f"not ok {_tap['n']} - {name}")
    elif report.when == "teardown" and report.failed:
        _tap["n"] += 1
        _tap_line(f"not ok {_tap['n']} - {name} (teardown)")


def pytest_sessionfinish(session, exitstatus):
    if _tap["file"] is not None:
        _tap_line(f"1..{_tap['n']}")
        _tap["file"].close()
        _tap["file"] = None
