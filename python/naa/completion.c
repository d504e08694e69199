/* SPDX-License-Identifier: BSD-3-Clause */
/* naa.wait_any and naa.wait_all over naa.Handle objects (naa_waitany, naa_waitall), with the
 * GIL released. A closed handle, or one with nothing in flight, is inactive, as in libnaa. */
#include "naapy.h"

/* The libnaa handles of the sequence, in a PyMem array of *count; NULL with an exception. The
 * sequence (a tuple) is returned in *keep so that the objects outlive the call. */
static naa_handle *handles_of(PyObject *seq, int *count, PyObject **keep) {
  PyObject *t = PySequence_Tuple(seq);
  if (t == NULL) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(t);
  if (n > INT_MAX) {
    Py_DECREF(t);
    PyErr_SetString(PyExc_ValueError, "too many handles");
    return NULL;
  }
  naa_handle *h = PyMem_Calloc((size_t)n + 1, sizeof *h);
  if (h == NULL) {
    Py_DECREF(t);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    if (naapy_handle_get(PyTuple_GET_ITEM(t, i), &h[i]) < 0) {
      PyMem_Free(h);
      Py_DECREF(t);
      return NULL;
    }
  }
  *count = (int)n;
  *keep = t;
  return h;
}

/* Every handle of the tuple keep enters libnaa (begin) or has returned from it: a handle
 * closed by another thread meanwhile keeps its buffers exported until the call returns. */
static void use_all(PyObject *keep, int begin) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keep); i++)
    naapy_handle_use(PyTuple_GET_ITEM(keep, i), begin);
}

PyObject *naapy_wait_any(PyObject *module, PyObject *handles) {
  (void)module;
  int n, index = NAA_UNDEFINED, rc;
  PyObject *keep, *result = NULL;
  naa_handle *h = handles_of(handles, &n, &keep);
  if (h == NULL) return NULL;
  naa_status status = {0};
  use_all(keep, 1);
  Py_BEGIN_ALLOW_THREADS rc = naa_waitany(n, h, &index, &status);
  Py_END_ALLOW_THREADS use_all(keep, 0);
  if (rc != NAA_SUCCESS) {
    naapy_raise("naa_waitany", rc, &status);
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *i = index == NAA_UNDEFINED ? Py_None : PyLong_FromLong(index);
    if (value != NULL && i != NULL) PyObject_SetAttrString(value, "index", i);
    if (i != Py_None) Py_XDECREF(i);
    PyErr_Restore(type, value, tb);
  } else if (index == NAA_UNDEFINED) {
    result = Py_None;
    Py_INCREF(result);
  } else {
    PyObject *st = naapy_status(&status);
    result = st ? Py_BuildValue("(iN)", index, st) : NULL;
  }
  PyMem_Free(h);
  Py_DECREF(keep);
  return result;
}

/* [Status or None per handle] from naa_waitall's statuses (an inactive handle's is zeroed). */
static PyObject *status_list(const naa_handle *h, const naa_status *st, int n, int errors) {
  PyObject *list = PyList_New(n);
  for (int i = 0; list != NULL && i < n; i++) {
    PyObject *v;
    if (errors)
      v = PyLong_FromLong(st[i].error);
    else if (h[i].id == NAA_HANDLE_NULL.id || st[i].function_code == 0)
      v = Py_NewRef(Py_None);
    else
      v = naapy_status(&st[i]);
    if (v == NULL)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, i, v);
  }
  return list;
}

PyObject *naapy_wait_all(PyObject *module, PyObject *handles) {
  (void)module;
  int n, rc;
  PyObject *keep, *result = NULL;
  naa_handle *h = handles_of(handles, &n, &keep);
  if (h == NULL) return NULL;
  naa_status *st = PyMem_Calloc((size_t)n + 1, sizeof *st);
  if (st == NULL) {
    PyErr_NoMemory();
    goto out;
  }
  use_all(keep, 1);
  Py_BEGIN_ALLOW_THREADS rc = naa_waitall(n, h, st);
  Py_END_ALLOW_THREADS use_all(keep, 0);
  result = status_list(h, st, n, 0);
  if (result != NULL && rc != NAA_SUCCESS) {
    PyObject *errors = status_list(h, st, n, 1), *type, *value, *tb;
    naapy_raise("naa_waitall", rc, NULL);
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && errors != NULL) {
      PyObject_SetAttrString(value, "statuses", result);
      PyObject_SetAttrString(value, "errors", errors);
    }
    Py_XDECREF(errors);
    PyErr_Restore(type, value, tb);
    Py_CLEAR(result);
  }
out:
  PyMem_Free(st);
  PyMem_Free(h);
  Py_DECREF(keep);
  return result;
}
