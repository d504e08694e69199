/* SPDX-License-Identifier: BSD-3-Clause */
/* What C programs read besides the five calls: naa.last_error (naa_last_error), naa.rc_string
 * (naa_rc_string), naa.stats (naa_stats_get) and naa.stats_energy (naa_stats_energy_get), and
 * Handle.info() (naa_handle_info). */
#include <limits.h>
#include <string.h>

#include "naapy.h"

PyObject *naapy_last_error(PyObject *module, PyObject *args, PyObject *kwds) {
  (void)module;
  static char *kwlist[] = {"handle", NULL};
  PyObject *obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O", kwlist, &obj)) return NULL;
  char cause[1024];
  int rc;
  if (obj == Py_None) {
    rc = naa_last_error(NULL, cause, sizeof cause);
  } else {
    naa_handle h;
    if (naapy_handle_peek(obj, &h) < 0) return NULL;
    rc = naa_last_error(&h, cause, sizeof cause);
  }
  return Py_BuildValue("(is)", rc, cause);
}

PyObject *naapy_rc_string(PyObject *module, PyObject *code) {
  (void)module;
  long rc = PyLong_AsLong(code);
  if (rc == -1 && PyErr_Occurred()) return NULL;
  if (rc < INT_MIN || rc > INT_MAX) rc = -1; /* unknown either way */
  return PyUnicode_FromString(naa_rc_string((int)rc));
}

/* Sets d[key] = value and drops value; -1 on failure (value NULL included). */
static int put(PyObject *d, const char *key, PyObject *value) {
  int rc = value == NULL ? -1 : PyDict_SetItemString(d, key, value);
  Py_XDECREF(value);
  return rc;
}

static PyObject *function_stats(const naa_stats_function_t *f) {
  PyObject *d = PyDict_New();
  if (d == NULL) return NULL;
  if (put(d, "function_code", PyLong_FromUnsignedLong(f->function_code)) < 0 ||
      put(d, "naa", PyUnicode_FromString(f->naa)) < 0 ||
      put(d, "invocations", PyLong_FromUnsignedLongLong(f->invocations)) < 0 ||
      put(d, "bytes_out", PyLong_FromUnsignedLongLong(f->bytes_out)) < 0 ||
      put(d, "bytes_back", PyLong_FromUnsignedLongLong(f->bytes_back)) < 0 ||
      put(d, "waits", PyLong_FromUnsignedLongLong(f->waits)) < 0 ||
      put(d, "tests", PyLong_FromUnsignedLongLong(f->tests)) < 0 ||
      put(d, "invoke_s", PyFloat_FromDouble(f->invoke_s)) < 0 ||
      put(d, "wait_s", PyFloat_FromDouble(f->wait_s)) < 0 ||
      put(d, "test_s", PyFloat_FromDouble(f->test_s)) < 0 ||
      put(d, "served", PyLong_FromUnsignedLongLong(f->served)) < 0 ||
      put(d, "transfer_s", PyFloat_FromDouble(f->transfer_s)) < 0 ||
      put(d, "service_s", PyFloat_FromDouble(f->service_s)) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

PyObject *naapy_stats(PyObject *module, PyObject *unused) {
  (void)module, (void)unused;
  naa_stats_t totals;
  int rc = naa_stats_get(&totals, NULL, 0);
  if (rc != NAA_SUCCESS) return naapy_raise("naa_stats_get", rc, NULL);
  /* Entries may appear between the two calls: ask for room for a few more. */
  const size_t room = totals.n_functions + 16;
  naa_stats_function_t *functions = PyMem_Calloc(room, sizeof *functions);
  if (functions == NULL) return PyErr_NoMemory();
  rc = naa_stats_get(&totals, functions, room);
  if (rc != NAA_SUCCESS) {
    PyMem_Free(functions);
    return naapy_raise("naa_stats_get", rc, NULL);
  }
  const size_t n = totals.n_functions < room ? totals.n_functions : room;
  PyObject *d = PyDict_New(), *list = PyList_New(0), *errors = PyDict_New();
  int bad = d == NULL || list == NULL || errors == NULL;
  for (size_t i = 0; !bad && i < n; i++) {
    PyObject *f = function_stats(&functions[i]);
    bad = f == NULL || PyList_Append(list, f) < 0;
    Py_XDECREF(f);
  }
  for (int code = 0; !bad && code < 16; code++) {
    if (totals.errors[code] == 0) continue;
    PyObject *count = PyLong_FromUnsignedLongLong(totals.errors[code]);
    bad = count == NULL ||
          PyDict_SetItemString(errors, code == 0 ? "other" : naapy_code_name(code), count) < 0;
    Py_XDECREF(count);
  }
  PyMem_Free(functions);
  if (!bad)
    bad = put(d, "creates", PyLong_FromUnsignedLongLong(totals.creates)) < 0 ||
          put(d, "create_s", PyFloat_FromDouble(totals.create_s)) < 0 ||
          put(d, "completion_calls", PyLong_FromUnsignedLongLong(totals.completion_calls)) < 0 ||
          put(d, "completion_s", PyFloat_FromDouble(totals.completion_s)) < 0 ||
          PyDict_SetItemString(d, "errors", errors) < 0 ||
          PyDict_SetItemString(d, "functions", list) < 0;
  Py_XDECREF(list);
  Py_XDECREF(errors);
  if (bad) {
    Py_XDECREF(d);
    return NULL;
  }
  return d;
}

static PyObject *function_energy(const naa_stats_energy_function_t *f) {
  PyObject *d = PyDict_New();
  if (d == NULL) return NULL;
  if (put(d, "function_code", PyLong_FromUnsignedLong(f->function_code)) < 0 ||
      put(d, "naa", PyUnicode_FromString(f->naa)) < 0 ||
      put(d, "windows", PyLong_FromUnsignedLongLong(f->windows)) < 0 ||
      put(d, "window_s", PyFloat_FromDouble(f->window_s)) < 0 ||
      put(d, "host_j", PyFloat_FromDouble(f->host_j)) < 0 ||
      put(d, "bytes", PyLong_FromUnsignedLongLong(f->bytes)) < 0 ||
      put(d, "naa_runs", PyLong_FromUnsignedLongLong(f->naa_runs)) < 0 ||
      put(d, "naa_j", PyFloat_FromDouble(f->naa_j)) < 0 ||
      put(d, "naa_bytes", PyLong_FromUnsignedLongLong(f->naa_bytes)) < 0 ||
      put(d, "naa_source", PyUnicode_DecodeASCII(f->naa_source, strlen(f->naa_source), "replace")) <
          0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

PyObject *naapy_stats_energy(PyObject *module, PyObject *unused) {
  (void)module, (void)unused;
  naa_stats_energy_t totals = NAA_STATS_ENERGY_INIT;
  int rc = naa_stats_energy_get(&totals, NULL, 0);
  if (rc != NAA_SUCCESS) return naapy_raise("naa_stats_energy_get", rc, NULL);
  /* Entries may appear between the two calls: ask for room for a few more. */
  const size_t room = totals.n_functions + 16;
  naa_stats_energy_function_t *functions = PyMem_Calloc(room, sizeof *functions);
  if (functions == NULL) return PyErr_NoMemory();
  rc = naa_stats_energy_get(&totals, functions, room);
  if (rc != NAA_SUCCESS) {
    PyMem_Free(functions);
    return naapy_raise("naa_stats_energy_get", rc, NULL);
  }
  const size_t n = totals.n_functions < room ? totals.n_functions : room;
  PyObject *d = PyDict_New(), *list = PyList_New(0);
  int bad = d == NULL || list == NULL;
  for (size_t i = 0; !bad && i < n; i++) {
    PyObject *f = function_energy(&functions[i]);
    bad = f == NULL || PyList_Append(list, f) < 0;
    Py_XDECREF(f);
  }
  PyMem_Free(functions);
  if (!bad)
    bad = put(d, "host_source", PyUnicode_FromString(totals.host_source)) < 0 ||
          put(d, "host_unavailable", PyUnicode_FromString(totals.host_unavailable)) < 0 ||
          PyDict_SetItemString(d, "functions", list) < 0;
  Py_XDECREF(list);
  if (bad) {
    Py_XDECREF(d);
    return NULL;
  }
  return d;
}

PyObject *naapy_handle_info(const naa_handle *h) {
  naa_handle_info_t info;
  int rc = naa_handle_info(h, &info);
  if (rc != NAA_SUCCESS) return naapy_raise("naa_handle_info", rc, NULL);
  PyObject *d = PyDict_New();
  if (d == NULL) return NULL;
  if (put(d, "naa", PyUnicode_FromString(info.naa)) < 0 ||
      put(d, "transport", PyUnicode_FromString(info.transport)) < 0 ||
      put(d, "function_code", PyLong_FromUnsignedLong(info.function_code)) < 0 ||
      put(d, "regions", PyLong_FromUnsignedLong(info.regions)) < 0 ||
      put(d, "pacing_us", PyLong_FromLongLong(info.pacing_us)) < 0 ||
      put(d, "timeout_ms", PyLong_FromLongLong(info.timeout_ms)) < 0 ||
      put(d, "progress", PyUnicode_FromString(info.progress)) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}
