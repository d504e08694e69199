/* SPDX-License-Identifier: BSD-3-Clause */
/* naa.Error: every failure of a libnaa call, with the libnaa code (.code, .name), the cause
 * (.cause) and, where the NAA answered, the status (.status). */
#include <string.h>

#include "naapy.h"

PyObject *naapy_error;

static const char *const code_names[] = {"NAA_SUCCESS",
                                         "NAA_ERR_INVALID_ARGUMENT",
                                         "NAA_ERR_INVALID_HANDLE",
                                         "NAA_ERR_NO_NAA",
                                         "NAA_ERR_CONNECTION",
                                         "NAA_ERR_TRANSPORT",
                                         "NAA_ERR_TIMEOUT",
                                         "NAA_ERR_NAA",
                                         "NAA_ERR_NO_RESOURCES",
                                         "NAA_ERR_PROTOCOL",
                                         "NAA_ERR_STATE",
                                         "NAA_ERR_CONFIG",
                                         "NAA_ERR_UNSUPPORTED",
                                         "NAA_ERR_INTERNAL",
                                         "NAA_ERR_IN_STATUS",
                                         "NAA_ERR_CANCELED"};
#define N_CODES (sizeof code_names / sizeof code_names[0])

const char *naapy_code_name(int rc) {
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
    PyObject *name = PyUnicode_FromString(naapy_code_name(rc));
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

/* libnaa's cause of the calling thread's last failure if that failure was rc (the GIL is
 * released around calls, but the thread stays the same), else naa_strerror's text. */
static void cause_of(int rc, char *buf, size_t len) {
  if (naa_last_error(NULL, buf, len) != rc) snprintf(buf, len, "%s", naa_strerror(rc));
}

PyObject *naapy_raise(const char *call, int rc, const naa_status *status) {
  char text[1024];
  cause_of(rc, text, sizeof text);
  const size_t n = strlen(call);
  /* libnaa's cause starts with the call's name already */
  const char *what =
      strncmp(text, call, n) == 0 && strncmp(text + n, ": ", 2) == 0 ? text + n + 2 : text;
  PyObject *cause;
  if (rc == NAA_ERR_NAA && status != NULL)
    cause = PyUnicode_FromFormat("%s: %s (%s; the NAA's return code is 0x%02x)", call, what,
                                 naapy_code_name(rc), status->naa_return_code);
  else
    cause = PyUnicode_FromFormat("%s: %s (%s)", call, what, naapy_code_name(rc));
  return raise(rc, cause, rc == NAA_ERR_NAA ? status : NULL);
}

PyObject *naapy_raise_create(int rc, const char *format, ...) {
  char text[1024];
  cause_of(rc, text, sizeof text);
  const char *colon = strstr(text, ": ");
  /* "naa_create_attr: connection to ...": the call is named by format */
  const char *what = strncmp(text, "naa_create", 10) == 0 && colon != NULL ? colon + 2 : text;
  va_list ap;
  va_start(ap, format);
  PyObject *call = PyUnicode_FromFormatV(format, ap);
  va_end(ap);
  PyObject *cause =
      call ? PyUnicode_FromFormat("%U: %s (%s)", call, what, naapy_code_name(rc)) : NULL;
  Py_XDECREF(call);
  return raise(rc, cause, NULL);
}

PyObject *naapy_raise_cause(int rc, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  PyObject *what = PyUnicode_FromFormatV(format, ap);
  va_end(ap);
  PyObject *cause = what ? PyUnicode_FromFormat("%U (%s)", what, naapy_code_name(rc)) : NULL;
  Py_XDECREF(what);
  return raise(rc, cause, NULL);
}

int naapy_error_init(PyObject *m) {
  naapy_error = PyErr_NewExceptionWithDoc(
      "naa.Error",
      "A libnaa call failed.\n\n"
      "Attributes: code (int, one of the ERR_* constants, as naa_error_t), name (str, e.g.\n"
      "'NAA_ERR_TIMEOUT'), cause (str, the message: libnaa's cause, as naa.last_error() gives\n"
      "it, with the call and the code's name) and status (naa.Status when the NAA\n"
      "answered with a non-zero return code, else None).",
      NULL, NULL);
  if (naapy_error == NULL || PyModule_AddObjectRef(m, "Error", naapy_error) < 0) return -1;
  for (size_t rc = 1; rc < N_CODES; rc++) /* "NAA_ERR_TIMEOUT" -> naa.ERR_TIMEOUT */
    if (PyModule_AddIntConstant(m, code_names[rc] + 4, (long)rc) < 0) return -1;
  return 0;
}
