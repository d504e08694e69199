/* SPDX-License-Identifier: BSD-3-Clause */
/* naa.Status: what a completed invocation reports (struct naa_status), as a named tuple. */
#include "naapy.h"

PyTypeObject *naapy_status_type;

static PyStructSequence_Field fields[] = {
    {"naa_return_code", "the NAA's return code (0 on success, NAA_RC_*)"},
    {"immediate", "the raw 32-bit immediate the NAA sent"},
    {"bytes_received",
     "payload bytes of the NAA's final write (0 where the transport does not tell)"},
    {"function_code", "the function code the invocation ran"},
    {NULL, NULL}};

static PyStructSequence_Desc desc = {"naa.Status", "The result of a completed invocation.", fields,
                                     4};

PyObject *naapy_status(const naa_status *status) {
  PyObject *s = PyStructSequence_New(naapy_status_type);
  if (s == NULL) return NULL;
  PyObject *v[4] = {
      PyLong_FromLong(status->naa_return_code), PyLong_FromUnsignedLong(status->immediate),
      PyLong_FromSize_t(status->bytes_received), PyLong_FromUnsignedLong(status->function_code)};
  for (int i = 0; i < 4; i++) {
    if (v[i] == NULL) {
      for (int j = i + 1; j < 4; j++) Py_XDECREF(v[j]);
      Py_DECREF(s);
      return NULL;
    }
    PyStructSequence_SetItem(s, i, v[i]);
  }
  return s;
}

int naapy_status_init(PyObject *m) {
  naapy_status_type = PyStructSequence_NewType(&desc);
  if (naapy_status_type == NULL) return -1;
  return PyModule_AddObjectRef(m, "Status", (PyObject *)naapy_status_type);
}
