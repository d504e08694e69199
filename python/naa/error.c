/* SPDX-License-Identifier: BSD-3-Clause */
/* naa.Error: every failure of a libnaa call, with the libnaa code (.code, .name), the cause
 * (.cause) and, where the NAA answered, the status (.status). */
#include "naapy.h"

PyObject *naapy_error;

static const char *const code_names[] = {
    "NAA_SUCCESS", "NAA_ERR_INVALID_ARGUMENT", "NAA_ERR_INVALID_HANDLE", "NAA_ERR_NO_NAA",
    "NAA_ERR_CONNECTION", "NAA_ERR_TRANSPORT", "NAA_ERR_TIMEOUT", "NAA_ERR_NAA",
    "NAA_ERR_NO_RESOURCES", "NAA_ERR_PROTOCOL", "NAA_ERR_STATE", "NAA_ERR_CONFIG",
    "NAA_ERR_UNSUPPORTED", "NAA_ERR_INTERNAL", "NAA_ERR_IN_STATUS"};
#define N_CODES (sizeof code_names / sizeof code_names[0])

static const char *code_name(int rc) {
  return rc >= 0 && (size_t)rc < N_CODES ? code_names[rc] : "NAA_ERR_UNKNOWN";
}

/* Raises naa.Error(message) with .code, .name, .cause and .status set. */
static PyObject *raise(int rc, PyObject *cause, const naa_status *status) {
  PyObject *exc = NULL, *st = Py_None;
  Py_INCREF(st);
  if (cause == NULL) goto out;
  if (status != NULL && (st = naapy_status(status)) == NULL) goto out;
  exc = PyObject_CallOneArg(naapy_error, cause);
  if (exc == NULL) goto out;
  PyObject *code = PyLong_FromLong(rc);
  int bad = code == NULL || PyObject_SetAttrString(exc, "code", code) < 0 ||
            PyObject_SetAttrString(exc, "cause", cause) < 0 ||
            PyObject_SetAttrString(exc, "status", st) < 0;
  Py_XDECREF(code);
  if (!bad) {
    PyObject *name = PyUnicode_FromString(code_name(rc));
    bad = name == NULL || PyObject_SetAttrString(exc, "name", name) < 0;
    Py_XDECREF(name);
  }
  if (!bad) PyErr_SetObject(naapy_error, exc);
out:
  Py_XDECREF(exc);
  Py_XDECREF(cause);
  Py_XDECREF(st);
  return NULL;
}

PyObject *naapy_raise(const char *call, int rc, const naa_status *status) {
  PyObject *cause;
  if (rc == NAA_ERR_NAA && status != NULL)
    cause = PyUnicode_FromFormat("%s: %s (%s; the NAA's return code is 0x%02x)", call,
                                 naa_strerror(rc), code_name(rc), status->naa_return_code);
  else
    cause = PyUnicode_FromFormat("%s: %s (%s)", call, naa_strerror(rc), code_name(rc));
  return raise(rc, cause, rc == NAA_ERR_NAA ? status : NULL);
}

PyObject *naapy_raise_cause(int rc, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  PyObject *what = PyUnicode_FromFormatV(format, ap);
  va_end(ap);
  PyObject *cause = what ? PyUnicode_FromFormat("%U (%s)", what, code_name(rc)) : NULL;
  Py_XDECREF(what);
  return raise(rc, cause, NULL);
}

int naapy_error_init(PyObject *m) {
  naapy_error = PyErr_NewExceptionWithDoc(
      "naa.Error",
      "A libnaa call failed.\n\n"
      "Attributes: code (int, one of the ERR_* constants, as naa_error_t), name (str, e.g.\n"
      "'NAA_ERR_TIMEOUT'), cause (str, the message) and status (naa.Status when the NAA\n"
      "answered with a non-zero return code, else None).",
      NULL, NULL);
  if (naapy_error == NULL || PyModule_AddObjectRef(m, "Error", naapy_error) < 0) return -1;
  for (size_t rc = 1; rc < N_CODES; rc++)  /* "NAA_ERR_TIMEOUT" -> naa.ERR_TIMEOUT */
    if (PyModule_AddIntConstant(m, code_names[rc] + 4, (long)rc) < 0) return -1;
  return 0;
}
