# SPDX-License-Identifier: BSD-3-Clause
"""What C programs have besides the five calls, from Python: Handle.cancel() (naa_cancel),
naa.last_error() (naa_last_error) and libnaa's cause in naa.Error, naa.stats()
(naa_stats_get), naa.stats_energy() (naa_stats_energy_get), Handle.info() (naa_handle_info)
and naa.rc_string() (naa_rc_string)."""
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import naa
from conftest import Server

VECADD = 10
NAP_FILL = 105  # the test plugin: naps the ms of input bytes 0-3, then fills the output


def nap_request(ms, fill):
    return bytearray(struct.pack("<IB3x", ms, fill))


def test_cancel_then_invoke_again(plugin_server):
    """cancel() gives up the invocation in flight: the kernel's late result never reaches the
    output; the next invoke() connects again and completes."""
    request, out = nap_request(1000, 0x5C), bytearray(4096)
    with naa.Handle(NAP_FILL, [request], [out], naa=plugin_server.address) as h:
        h.invoke()
        assert h.test() is None  # the kernel naps for 1 s
        h.cancel()
        with pytest.raises(naa.Error) as e:
            h.wait()
        assert e.value.code == naa.ERR_STATE  # nothing in flight any more
        request[:] = nap_request(0, 0x6D)
        h.invoke()
        h.wait()
        assert out == bytearray([0x6D]) * len(out)
        h.cancel()  # nothing in flight: does nothing


def test_error_cause_is_libnaas(server):
    """naa.Error's cause carries libnaa's own cause (naa_last_error), not only the code."""
    with pytest.raises(naa.Error) as e:
        naa.Handle(VECADD, [np.ones(2), np.ones(2)], [np.zeros(2)], naa="127.0.0.1:1",
                   transport="ofi+tcp", timeout_ms=5000)
    code, cause = naa.last_error()
    assert code == e.value.code == naa.ERR_CONNECTION
    assert cause.startswith("naa_create_attr: ")
    detail = cause[len("naa_create_attr: "):]
    assert "127.0.0.1:1" in detail and detail in e.value.cause, (cause, e.value.cause)
    buf = bytearray(8)
    with naa.Handle(99, [buf], [buf], naa=server) as h:  # no kernel 99: return code 0x7f
        h.invoke()
        with pytest.raises(naa.Error) as e:
            h.wait()
        code, cause = naa.last_error(h)
        assert code == naa.ERR_NAA and "unknown function code" in cause
        assert cause[len("naa_wait: "):] in e.value.cause, (cause, e.value.cause)
        assert naa.last_error(h) == naa.last_error()  # the same call, the same thread


def test_last_error_without_failure(server):
    buf = bytearray(1)
    with naa.Handle(1, [buf], [buf], naa=server) as h:
        assert naa.last_error(h) == (0, "no failure")
    with pytest.raises(TypeError):
        naa.last_error("not a handle")


def test_info(server):
    a, b, c = np.ones(4), np.ones(4), np.zeros(4)
    with naa.Handle(VECADD, [a, b], [c], naa=server, timeout_ms=7000) as h:
        info = h.info()
        assert info["naa"] == server
        assert info["function_code"] == VECADD and info["regions"] == 3
        assert info["timeout_ms"] == 7000 and info["transport"] and info["progress"]
    with pytest.raises(naa.Error) as e:
        h.info()
    assert e.value.code == naa.ERR_INVALID_HANDLE


def test_rc_string():
    assert naa.rc_string(0) == "success"
    assert "unknown function code" in naa.rc_string(0x7F)
    assert "application error" in naa.rc_string(0x10) and "regions" in naa.rc_string(0x10)
    assert naa.rc_string(0x80) == "unknown NAA return code"
    assert naa.rc_string(1 << 40) == "unknown NAA return code"


STATS_PROGRAM = r"""
import sys, numpy as np, naa
try:
    naa.stats()
except naa.Error as e:
    assert e.code == naa.ERR_STATE, e
    print("off")
"""

STATS_ON_PROGRAM = r"""
import sys, numpy as np, naa
a, b, c = np.ones(8), np.ones(8), np.zeros(8)
with naa.Handle(10, [a, b], [c], naa=sys.argv[1]) as h:
    for _ in range(3):
        h.invoke()
        h.wait()
try:
    naa.Handle(10, [a, b], [c], naa="127.0.0.1:1", transport="ofi+tcp")
except naa.Error:
    pass
s = naa.stats()
f = s["functions"]
assert len(f) == 1 and f[0]["function_code"] == 10 and f[0]["naa"] == sys.argv[1], s
assert f[0]["invocations"] == 3 and f[0]["waits"] == 3 and f[0]["bytes_out"] == 3 * 128, s
assert f[0]["bytes_back"] == 3 * 64 and f[0]["served"] == 3 and f[0]["wait_s"] > 0, s
assert s["creates"] == 2 and s["errors"] == {"NAA_ERR_CONNECTION": 1}, s
print("on")
"""


def run_python(program, *args, **env):
    environ = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", program, *args], env=environ, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_stats(server):
    """naa.stats() as naa_stats_get(3): ERR_STATE unless NAA_STATS=1 (read once per process,
    hence a process each)."""
    assert run_python(STATS_PROGRAM, NAA_STATS="0") == "off"
    assert run_python(STATS_ON_PROGRAM, server, NAA_STATS="1").endswith("on")


ENERGY_PROGRAM = r"""
import sys, naa
buf = bytearray(4096)
for address in sys.argv[1:]:  # the measuring NAA's plugin kernel, then the reference-like NAA
    with naa.Handle(107 if address == sys.argv[1] else 1, [buf], [buf], naa=address) as h:
        for _ in range(3):
            h.invoke()
            h.wait()
e = naa.stats_energy()
assert e["host_source"] == "powercap (package-0)" and e["host_unavailable"] == "", e
f = {x["naa"]: x for x in e["functions"]}
joule, reference = f[sys.argv[1]], f[sys.argv[2]]
assert joule["function_code"] == 107 and joule["windows"] == 3 and joule["bytes"] == 3 * 8192, e
assert joule["host_j"] == 0, e  # the host's tree did not move
assert joule["naa_runs"] == 3 and abs(joule["naa_j"] - 3.0) < 1e-6, e  # 1 J per kernel run
assert joule["naa_bytes"] == 3 * 8192 and joule["naa_source"] == "powercap (package-0)", e
assert reference["windows"] == 3 and reference["naa_runs"] == 0, e  # only the host's
assert reference["naa_j"] == 0 and reference["naa_source"] == "", e
print("energy")
"""


def powercap_tree(parent, uj):
    """A directory laid out as /sys/class/powercap with one package zone at uj microjoules."""
    zone = os.path.join(parent, "intel-rapl:0")
    os.makedirs(zone)
    for name, text in (("name", "package-0"), ("max_energy_range_uj", "262143328850"),
                       ("energy_uj", str(uj))):
        with open(os.path.join(zone, name), "w") as f:
            f.write(text + "\n")
    return parent


def test_stats_energy(tmp_path):
    """naa.stats_energy() as naa_stats_energy_get(3): ERR_STATE unless NAA_ENERGY and statistics
    are on; the host's joules and, against a naa-server that measures its node (its plugin
    kernel "joule" spends exactly 1 J of its own tree per run), the NAA's; against the
    conformance NAA, reference-like, only the host's."""
    plugin = os.environ.get("NAA_TEST_KERNEL_PLUGIN", "")
    conformance = os.environ.get("NAA_CONFORMANCE_NAA", "")
    if not os.path.exists(plugin) or not os.path.exists(conformance):
        pytest.skip("the test kernel plugin or the conformance NAA was not built")
    assert run_python("import naa\ntry:\n naa.stats_energy()\nexcept naa.Error as e:\n"
                      " print(e.code == naa.ERR_STATE)", NAA_STATS="1", NAA_ENERGY="0") == "True"
    naa_tree = powercap_tree(str(tmp_path / "naa"), 7000)
    host_tree = powercap_tree(str(tmp_path / "host"), 5000)
    measuring = Server("--kernel", plugin,
                       env=dict(os.environ, NAA_ENERGY="powercap", NAA_POWERCAP_ROOT=naa_tree))
    saved = os.environ["NAA_SERVER"]
    try:
        os.environ["NAA_SERVER"] = conformance  # it takes naa-server's --address, --port, --ready-file
        reference = Server("--window-us", "0")
    finally:
        os.environ["NAA_SERVER"] = saved
    try:
        out = run_python(ENERGY_PROGRAM, measuring.address, reference.address, NAA_STATS="1",
                         NAA_ENERGY="powercap", NAA_POWERCAP_ROOT=host_tree)
        assert out.endswith("energy"), out
    finally:
        reference.stop()
        measuring.stop()
