/* SPDX-License-Identifier: BSD-3-Clause */
/* naapy.h - what the parts of the extension module naa._naa share. */
#ifndef NAAPY_H
#define NAAPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "naa.h"

/* naa.Error, naa.Status and naa.Handle, created by the module's exec slot. */
extern PyObject *naapy_error;
extern PyTypeObject *naapy_status_type;
extern PyTypeObject *naapy_handle_type;

/* error.c: raise naa.Error for libnaa code rc from call (status may be NULL); returns NULL. */
PyObject *naapy_raise(const char *call, int rc, const naa_status *status);
/* The same for a failed naa_create_attr, the call described by format (printf-style). */
PyObject *naapy_raise_create(int rc, const char *format, ...);
/* "NAA_ERR_TIMEOUT" for NAA_ERR_TIMEOUT, "NAA_ERR_UNKNOWN" for a code out of range. */
const char *naapy_code_name(int rc);
/* Raise naa.Error with code rc and a cause of our own (printf-style); returns NULL. */
PyObject *naapy_raise_cause(int rc, const char *format, ...);
/* Adds naa.Error and the ERR_* constants to module m; -1 on failure. */
int naapy_error_init(PyObject *m);

/* status.c: a naa.Status for *status, or NULL with an exception set. */
PyObject *naapy_status(const naa_status *status);
int naapy_status_init(PyObject *m);

/* handle.c */
int naapy_handle_init(PyObject *m);
/* The libnaa handle of a naa.Handle (NAA_HANDLE_NULL once closed), after checking that its
 * buffers are still where they were at creation; -1 with naa.Error set if not. */
int naapy_handle_get(PyObject *obj, naa_handle *handle);
/* begin != 0: a call on the naa.Handle obj enters libnaa (wait_any, wait_all), 0: it has
 * returned. The exports of a handle closed meanwhile are released by the last such return. */
void naapy_handle_use(PyObject *obj, int begin);

/* The libnaa handle of a naa.Handle (NAA_HANDLE_NULL once closed), buffers unchecked; -1 with
 * TypeError if obj is not one. */
int naapy_handle_peek(PyObject *obj, naa_handle *handle);

/* diag.c: naa.last_error, naa.rc_string, naa.stats, naa.stats_energy; Handle.info()'s dict
 * for *h. */
PyObject *naapy_last_error(PyObject *module, PyObject *args, PyObject *kwds);
PyObject *naapy_rc_string(PyObject *module, PyObject *code);
PyObject *naapy_stats(PyObject *module, PyObject *unused);
PyObject *naapy_stats_energy(PyObject *module, PyObject *unused);
PyObject *naapy_handle_info(const naa_handle *h);

/* completion.c: naa.wait_any, naa.wait_all. */
PyObject *naapy_wait_any(PyObject *module, PyObject *handles);
PyObject *naapy_wait_all(PyObject *module, PyObject *handles);

#endif
