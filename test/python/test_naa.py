# SPDX-License-Identifier: BSD-3-Clause
"""The package naa against a real naa-server: sizes, single-send, in-place, errors, the
context manager, test()/wait(timeout), wait_any/wait_all."""
import array
import re
import subprocess
import sys

import numpy as np
import pytest

import naa

VECADD = 10  # naa-server's vecadd_f64: c = a + b
ADD1 = 1  # adds 1 to every byte (an in-place buffer comes back + 1)


def test_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", naa.version())
    assert naa.__version__ == naa.version()


@pytest.mark.parametrize("n", [1, 7, 4096, 1 << 17, 1 << 20])
def test_vecadd_sizes(server, n):
    a = np.arange(n, dtype=np.float64)
    b = np.full(n, 0.5)
    c = np.zeros(n)
    with naa.Handle(VECADD, inputs=[a, b], outputs=[c], naa=server) as h:
        for rep in range(2):
            a += rep
            h.invoke()
            st = h.wait()
            assert st.naa_return_code == 0 and st.function_code == VECADD
            np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize("size", [1, 4095, (1 << 20) + 3])
def test_in_place_bytes(server, size):
    buf = bytearray(range(256)) * (size // 256) + bytearray(size % 256)
    want = bytes((x + 2) % 256 for x in buf[:64])
    with naa.Handle(ADD1, inputs=[buf], outputs=[buf], naa=server) as h:
        for _ in range(2):
            h.invoke()
            h.wait()
    assert bytes(buf[:64]) == want[: min(64, size)]


def test_in_place_numpy(server):
    x = np.arange(1000, dtype=np.uint8)
    expected = x + 1
    with naa.Handle(ADD1, [x], [x], naa=server) as h:
        h.invoke()
        h.wait()
    np.testing.assert_array_equal(x, expected)


def test_other_buffer_types(server):
    a = array.array("d", [1.0, 2.0, 3.0])
    b = memoryview(bytearray(np.ones(3).tobytes())).cast("d")
    c = np.zeros(3)
    with naa.Handle(VECADD, inputs=[a, b], outputs=[memoryview(c)], naa=server) as h:
        h.invoke()
        h.wait()
    np.testing.assert_array_equal(c, [2.0, 3.0, 4.0])


def test_single_send(server):
    a = np.ones(8)
    b = np.full(8, 10.0)
    c = np.zeros(8)
    with naa.Handle(VECADD, [a, b], [c], single_send=[False, True], naa=server) as h:
        h.invoke()
        h.wait()
        np.testing.assert_array_equal(c, 11.0)
        a[:] = 2.0
        b[:] = 1000.0  # single-send: the NAA keeps the b of the first invocation
        h.invoke()
        h.wait()
        np.testing.assert_array_equal(c, 12.0)


def test_single_send_all_and_count(server):
    a, b, c = np.ones(4), np.ones(4), np.zeros(4)
    with naa.Handle(VECADD, [a, b], [c], single_send=True, naa=server) as h:
        h.invoke()
        h.wait()
    with pytest.raises(ValueError, match="single_send has 1 entries for 2 inputs"):
        naa.Handle(VECADD, [a, b], [c], single_send=[True], naa=server)


def test_test_polls_until_done(server):
    a, b, c = np.ones(1 << 16), np.ones(1 << 16), np.zeros(1 << 16)
    with naa.Handle(VECADD, [a, b], [c], naa=server) as h:
        h.invoke()
        st = None
        while st is None:
            st = h.test()
        assert isinstance(st, naa.Status) and st.naa_return_code == 0
        np.testing.assert_array_equal(c, 2.0)


def test_wait_any_wait_all(server):
    arrays = [(np.full(16, float(i)), np.ones(16), np.zeros(16)) for i in range(4)]
    handles = [naa.Handle(VECADD, [a, b], [c], naa=server) for a, b, c in arrays]
    try:
        for h in handles:
            h.invoke()
        index, st = naa.wait_any(handles)
        assert 0 <= index < 4 and st.function_code == VECADD
        statuses = naa.wait_all(handles)
        assert statuses[index] is None  # completed by wait_any: inactive now
        assert all(s is not None for i, s in enumerate(statuses) if i != index)
        for i, (a, b, c) in enumerate(arrays):
            np.testing.assert_array_equal(c, i + 1.0)
        assert naa.wait_any(handles) is None  # nothing in flight
    finally:
        for h in handles:
            h.close()


def test_context_manager_closes(server):
    a, b, c = np.ones(2), np.ones(2), np.zeros(2)
    with pytest.raises(KeyError):
        with naa.Handle(VECADD, [a, b], [c], naa=server) as h:
            assert not h.closed and h.function_code == VECADD
            assert h.inputs == (a, b) and h.outputs == (c,)
            raise KeyError("leaves the block")
    assert h.closed
    assert "closed" in repr(h)
    h.close()  # twice is harmless
    with pytest.raises(naa.Error) as e:
        h.invoke()
    assert e.value.code == naa.ERR_INVALID_HANDLE and "closed" in e.value.cause


def test_attr_keywords(server):
    a, b, c = np.ones(2), np.ones(2), np.zeros(2)
    with naa.Handle(VECADD, [a, b], [c], naa=server, transport="ofi+tcp", timeout_ms=30000,
                    progress="spin-then-block", pacing_us=0,
                    params={"NAA_SPIN_US": 20}) as h:
        h.invoke()
        h.wait()
    with naa.Handle(VECADD, [a, b], [c], naa=server, params=["NAA_SPIN_US=5"]) as h:
        h.invoke()
        h.wait()
    np.testing.assert_array_equal(c, 2.0)


# --- errors ----------------------------------------------------------------------------------
def error_of(call, *args, **kwargs):
    with pytest.raises(naa.Error) as e:
        call(*args, **kwargs)
    assert e.value.cause == str(e.value)
    assert e.value.name.startswith("NAA_ERR_")
    return e.value


def test_error_no_naa_listening():
    a, b, c = np.ones(2), np.ones(2), np.zeros(2)
    e = error_of(naa.Handle, VECADD, [a, b], [c], naa="127.0.0.1:1", transport="ofi+tcp",
                 timeout_ms=5000)
    assert e.code == naa.ERR_CONNECTION and e.name == "NAA_ERR_CONNECTION"
    assert e.cause.startswith("naa_create(function code 10, 2 inputs, 1 outputs)")


@pytest.mark.parametrize("code", [0, 128])
def test_error_bad_function_code(server, code):
    e = error_of(naa.Handle, code, [bytearray(1)], [bytearray(1)], naa=server)
    assert e.code == naa.ERR_INVALID_ARGUMENT


def test_error_nonzero_return_code(server):
    buf = bytearray(8)
    with naa.Handle(99, [buf], [buf], naa=server) as h:  # no kernel: return code 0x7f
        h.invoke()
        e = error_of(h.wait)
    assert e.code == naa.ERR_NAA and e.status.naa_return_code == 0x7F
    assert "0x7f" in e.cause


def test_error_kernel_rejects_layout(server):
    a, c = np.ones(3), np.zeros(4)
    with naa.Handle(VECADD, [a, a.copy()], [c], naa=server) as h:
        h.invoke()
        e = error_of(h.wait)
    assert e.code == naa.ERR_NAA and e.status.naa_return_code != 0


def test_error_state(server):
    buf = bytearray(4)
    with naa.Handle(ADD1, [buf], [buf], naa=server) as h:
        assert error_of(h.wait).code == naa.ERR_STATE
        assert error_of(h.test).code == naa.ERR_STATE


@pytest.mark.parametrize("bad, what", [
    (np.zeros(10)[::2], "is not C-contiguous"),
    (np.zeros(0), "is empty"),
])
def test_error_bad_input(server, bad, what):
    e = error_of(naa.Handle, VECADD, [np.zeros(5), bad], [np.zeros(5)], naa=server)
    assert e.code == naa.ERR_INVALID_ARGUMENT and "inputs[1]" in e.cause and what in e.cause


def test_error_read_only_output(server):
    ro = np.zeros(4)
    ro.flags.writeable = False
    for out in (ro, b"\0" * 32):
        e = error_of(naa.Handle, VECADD, [np.ones(4), np.ones(4)], [out], naa=server)
        assert "outputs[0]" in e.cause and "read-only" in e.cause


def test_error_not_a_buffer(server):
    with pytest.raises(TypeError, match="inputs\\[0\\].*buffer protocol"):
        naa.Handle(VECADD, [[1.0, 2.0], np.ones(2)], [np.zeros(2)], naa=server)
    with pytest.raises(TypeError, match="timeout_ms must be an int"):
        naa.Handle(VECADD, [np.ones(2)] * 2, [np.zeros(2)], naa=server, timeout_ms="soon")


def test_error_bad_attr(server):
    e = error_of(naa.Handle, ADD1, [bytearray(1)], [bytearray(1)], naa=server, progress="bogus")
    assert e.code == naa.ERR_INVALID_ARGUMENT


def test_strerror():
    assert naa.strerror(naa.ERR_TIMEOUT) == naa.strerror(6) != naa.strerror(5)


# Loading libnaa loads libfabric, and with it (Debian) libinfinipath, which replaces the C
# handler of SIGINT with one that calls exit(1): import naa puts Python's back (naa(7), SIGNALS).
def test_ctrl_c_raises_keyboard_interrupt_after_import():
    code = ("import os, signal, time, naa\n"
            "try:\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "    time.sleep(10)\n"
            "except KeyboardInterrupt:\n"
            "    print('KeyboardInterrupt')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout.strip()) == (0, "KeyboardInterrupt"), r.stderr


# --- resizing while a handle holds the buffer --------------------------------------------------
def test_resize_refused_while_open(server):
    a, b, c = np.ones(4), np.ones(4), np.zeros(4)
    buf = bytearray(8)
    with naa.Handle(VECADD, [a, b], [c], naa=server) as h:
        with pytest.raises(ValueError):
            c.resize(1 << 20)  # numpy refuses: the handle holds a buffer export
        with naa.Handle(ADD1, [buf], [buf], naa=server):
            with pytest.raises(BufferError):
                buf.extend(b"x" * 4096)
        h.invoke()
        h.wait()
        np.testing.assert_array_equal(c, 2.0)
    c.resize(8, refcheck=False)  # closed: the export is gone
    buf.extend(b"x")


def test_resized_array_is_a_clear_error(server):
    a, b, c = np.ones(4), np.ones(4), np.zeros(4)
    with naa.Handle(VECADD, [a, b], [c], naa=server) as h:
        c.resize(1 << 20, refcheck=False)  # forced: the memory libnaa registered is gone
        e = error_of(h.invoke)
        assert e.code == naa.ERR_INVALID_ARGUMENT
        assert "outputs[0] was resized or reallocated" in e.cause
        assert error_of(h.wait).code == naa.ERR_INVALID_ARGUMENT
        assert error_of(naa.wait_all, [h]).code == naa.ERR_INVALID_ARGUMENT
    assert h.closed
