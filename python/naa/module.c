/* SPDX-License-Identifier: BSD-3-Clause */
/* naa._naa: the CPython extension module over libnaa's C ABI (naa.h); the package naa
 * (__init__.py) re-exports it. Why an extension and not cffi: doc/python.md. */
#include "naapy.h"

static PyObject *version(PyObject *module, PyObject *unused) {
  (void)module, (void)unused;
  return PyUnicode_FromString(naa_version(NULL, NULL, NULL));
}

static PyObject *strerror_(PyObject *module, PyObject *code) {
  (void)module;
  long rc = PyLong_AsLong(code);
  if (rc == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(naa_strerror((int)rc));
}

static PyMethodDef functions[] = {
    {"version", version, METH_NOARGS,
     "version()\n--\n\nThe version of the libnaa library loaded, as 'MAJOR.MINOR.PATCH'."},
    {"strerror", strerror_, METH_O,
     "strerror(code)\n--\n\nThe English description of a libnaa error code (naa_strerror)."},
    {"last_error", (PyCFunction)(void (*)(void))naapy_last_error, METH_VARARGS | METH_KEYWORDS,
     "last_error(handle=None)\n--\n\nThe last failure (naa_last_error): (code, cause) of the last\n"
     "failed call on handle since its creation, or with None of the calling thread's last\n"
     "failed call; (0, 'no failure') if there was none."},
    {"rc_string", naapy_rc_string, METH_O,
     "rc_string(naa_return_code)\n--\n\nThe English name of an NAA return code, as\n"
     "naa.Status.naa_return_code holds it (naa_rc_string)."},
    {"stats", naapy_stats, METH_NOARGS,
     "stats()\n--\n\nThe process's statistics so far (naa_stats_get), with NAA_STATS=1: a dict\n"
     "with creates, create_s, completion_calls, completion_s, errors ({code name: count}) and\n"
     "functions, a list of dicts per function code and NAA (function_code, naa, invocations,\n"
     "bytes_out, bytes_back, waits, tests, invoke_s, wait_s, test_s, served, transfer_s,\n"
     "service_s). Raises naa.Error (ERR_STATE) when statistics are off."},
    {"stats_energy", naapy_stats_energy, METH_NOARGS,
     "stats_energy()\n--\n\nThe energy so far (naa_stats_energy_get), with NAA_ENERGY and\n"
     "statistics on (NAA_STATS=1 or NAA_TRACE): a dict with host_source (what the host's\n"
     "joules count, '' for nothing), host_unavailable (why a source asked for is not counted)\n"
     "and functions, a list of dicts per function code and NAA (function_code, naa, windows,\n"
     "window_s, host_j, bytes: the host's joules over the invocation windows; naa_runs, naa_j,\n"
     "naa_bytes, naa_source: the NAA's over its kernel runs, where its replies carry them, 0 and\n"
     "'' otherwise). Raises naa.Error (ERR_STATE) when statistics or NAA_ENERGY are off."},
    {"wait_any", naapy_wait_any, METH_O,
     "wait_any(handles)\n--\n\nWait, with the GIL released, until one of the handles with an\n"
     "invocation in flight completes (naa_waitany); return (index, naa.Status), or None when no\n"
     "handle has one in flight. A failure raises naa.Error with .index set."},
    {"wait_all", naapy_wait_all, METH_O,
     "wait_all(handles)\n--\n\nWait, with the GIL released, until every handle with an\n"
     "invocation in flight has completed (naa_waitall); return a list with a naa.Status per\n"
     "handle (None for those with nothing in flight). If any failed, raise naa.Error\n"
     "(ERR_IN_STATUS) with .statuses and .errors (each handle's error code)."},
    {NULL, NULL, 0, NULL}};

static int exec_module(PyObject *m) {
  if (naapy_error_init(m) < 0 || naapy_status_init(m) < 0 || naapy_handle_init(m) < 0) return -1;
  return PyModule_AddIntConstant(m, "UNDEFINED", NAA_UNDEFINED);
}

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, exec_module}, {0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    "naa._naa",
                                    "libnaa's C ABI for Python (see the package naa).",
                                    0,
                                    functions,
                                    module_slots,
                                    NULL,
                                    NULL,
                                    NULL};

PyMODINIT_FUNC PyInit__naa(void) {
  return PyModuleDef_Init(&module);
}
