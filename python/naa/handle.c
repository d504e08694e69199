/* SPDX-License-Identifier: BSD-3-Clause */
/* naa.Handle: one libnaa handle over buffer-protocol objects. The handle keeps a buffer export
 * (Py_buffer) of every parameter from creation to close(), so that the memory libnaa registered
 * stays put: NumPy refuses to resize an array and bytearray to change its size while an export
 * exists. Only a resize that overrides that check (ndarray.resize(refcheck=False)) can still
 * move the memory; every call compares each buffer with its export first and refuses with
 * naa.Error (NAA_ERR_INVALID_ARGUMENT) once one has moved or changed size. */
#include <time.h>

#include "naapy.h"

typedef struct {
  PyObject_HEAD naa_handle handle;
  uint32_t function_code;
  Py_ssize_t n_views;
  Py_buffer *views; /* inputs then outputs, each holding an export until close() and the
                     * return of the last call on the handle */
  Py_ssize_t users; /* calls inside libnaa on the handle (wait, wait_any, ...), GIL released */
  Py_ssize_t n_inputs;
  PyObject *inputs, *outputs; /* tuples of the objects, as given */
} Handle;

PyTypeObject *naapy_handle_type;

/* Releases the exports; the handle must be finalized first and no call on it may be inside
 * libnaa (then libnaa no longer touches them). */
static void release_views(Handle *self) {
  for (Py_ssize_t i = 0; i < self->n_views; i++) PyBuffer_Release(&self->views[i]);
  PyMem_Free(self->views);
  self->views = NULL;
  self->n_views = 0;
}

static const char *role(const Handle *self, Py_ssize_t i, Py_ssize_t *index) {
  *index = i < self->n_inputs ? i : i - self->n_inputs;
  return i < self->n_inputs ? "inputs" : "outputs";
}

/* 0 if every parameter still exports the memory it exported at creation, else -1 with
 * naa.Error set: libnaa registered that memory, and it may have been freed. */
static int check_views(Handle *self) {
  for (Py_ssize_t i = 0; i < self->n_views; i++) {
    Py_buffer now;
    Py_buffer *then = &self->views[i];
    if (PyObject_GetBuffer(then->obj, &now, PyBUF_SIMPLE) < 0) {
      PyErr_Clear();
      now.buf = NULL, now.len = -1, now.obj = NULL;
    }
    const int moved = now.buf != then->buf || now.len != then->len;
    if (now.obj != NULL) PyBuffer_Release(&now);
    if (moved) {
      Py_ssize_t index;
      const char *r = role(self, i, &index);
      naapy_raise_cause(NAA_ERR_INVALID_ARGUMENT,
                        "%s[%zd] was resized or reallocated after the handle was created "
                        "(%zd bytes at %p, now %zd at %p): close the handle and create a new one",
                        r, index, then->len, then->buf, now.len, now.buf);
      return -1;
    }
  }
  return 0;
}

int naapy_handle_peek(PyObject *obj, naa_handle *handle) {
  if (!PyObject_TypeCheck(obj, naapy_handle_type)) {
    PyErr_Format(PyExc_TypeError, "expected a naa.Handle, got %.100s", Py_TYPE(obj)->tp_name);
    return -1;
  }
  *handle = ((Handle *)obj)->handle;
  return 0;
}

/* A call on the handle enters libnaa (with the GIL released next) or has returned from it; the
 * last to return after close() releases the exports, since naa_finalize returns at once while
 * another thread is inside a call on the handle and libnaa writes the outputs until that
 * call returns. Both with the GIL held. */
static void use_begin(Handle *self) {
  self->users++;
}

static void use_end(Handle *self) {
  if (--self->users == 0 && self->handle.id == NAA_HANDLE_NULL.id) release_views(self);
}

void naapy_handle_use(PyObject *obj, int begin) {
  if (begin)
    use_begin((Handle *)obj);
  else
    use_end((Handle *)obj);
}

int naapy_handle_get(PyObject *obj, naa_handle *handle) {
  if (!PyObject_TypeCheck(obj, naapy_handle_type)) {
    PyErr_Format(PyExc_TypeError, "expected a naa.Handle, got %.100s", Py_TYPE(obj)->tp_name);
    return -1;
  }
  Handle *self = (Handle *)obj;
  *handle = self->handle;
  return self->handle.id == NAA_HANDLE_NULL.id ? 0 : check_views(self);
}

/* Exports obj as parameter `what`[index] into view: C-contiguous, 1..2^32-1 bytes, writable
 * for an output. -1 with an exception set if not. */
static int export(PyObject *obj, const char *what, Py_ssize_t index, int writable,
                  Py_buffer *view) {
  if (PyObject_GetBuffer(obj, view, PyBUF_STRIDES | (writable ? PyBUF_WRITABLE : 0)) < 0) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int readonly = writable && PyObject_GetBuffer(obj, view, PyBUF_STRIDES) == 0;
    if (readonly) PyBuffer_Release(view);
    PyErr_Clear();
    if (readonly)
      naapy_raise_cause(NAA_ERR_INVALID_ARGUMENT,
                        "%s[%zd] (%.100s) is read-only: an output must be writable", what, index,
                        Py_TYPE(obj)->tp_name);
    else if (PyObject_CheckBuffer(obj))
      naapy_raise_cause(NAA_ERR_INVALID_ARGUMENT, "%s[%zd] (%.100s) cannot be exported: %S", what,
                        index, Py_TYPE(obj)->tp_name, value ? value : Py_None);
    else
      PyErr_Format(PyExc_TypeError, "%s[%zd]: a %.100s does not support the buffer protocol", what,
                   index, Py_TYPE(obj)->tp_name);
    Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(tb);
    return -1;
  }
  const char *why = NULL;
  if (!PyBuffer_IsContiguous(view, 'C'))
    why = "is not C-contiguous (numpy.ascontiguousarray makes a contiguous copy)";
  else if (view->len == 0)
    why = "is empty: a parameter holds 1 .. 2^32-1 bytes";
  else if ((unsigned long long)view->len > UINT32_MAX)
    why = "holds more than 2^32-1 bytes, the most one parameter can";
  if (why != NULL) {
    naapy_raise_cause(NAA_ERR_INVALID_ARGUMENT, "%s[%zd] (%.100s, %zd bytes) %s", what, index,
                      Py_TYPE(obj)->tp_name, view->len, why);
    PyBuffer_Release(view);
    return -1;
  }
  return 0;
}

/* single_send: a bool for every input, or one per input. */
static int single_send_of(PyObject *single_send, Py_ssize_t i, Py_ssize_t n_inputs) {
  if (single_send == NULL) return 0;
  if (!PySequence_Check(single_send) || PyUnicode_Check(single_send))
    return PyObject_IsTrue(single_send);
  if (PySequence_Size(single_send) != n_inputs) {
    PyErr_Format(PyExc_ValueError, "single_send has %zd entries for %zd inputs",
                 PySequence_Size(single_send), n_inputs);
    return -1;
  }
  PyObject *item = PySequence_GetItem(single_send, i);
  if (item == NULL) return -1;
  int on = PyObject_IsTrue(item);
  Py_DECREF(item);
  return on;
}

/* attr->params from a mapping {NAME: value} or a sequence of "NAME=value"; the strings are kept
 * alive in *keep, the array in *array (PyMem). */
static int params_of(PyObject *params, PyObject **keep, const char ***array) {
  PyObject *items;
  if (PyDict_Check(params)) {
    PyObject *name, *value;
    Py_ssize_t pos = 0;
    if ((items = PyList_New(0)) == NULL) return -1;
    while (PyDict_Next(params, &pos, &name, &value)) {
      PyObject *s = PyUnicode_FromFormat("%S=%S", name, value);
      if (s == NULL || PyList_Append(items, s) < 0) {
        Py_XDECREF(s);
        Py_DECREF(items);
        return -1;
      }
      Py_DECREF(s);
    }
  } else if ((items = PySequence_List(params)) == NULL) {
    return -1;
  }
  Py_ssize_t n = PyList_GET_SIZE(items);
  const char **a = PyMem_Calloc((size_t)n + 1, sizeof *a);
  if (a == NULL) {
    Py_DECREF(items);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    if ((a[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(items, i))) == NULL) {
      PyMem_Free(a);
      Py_DECREF(items);
      return -1;
    }
  }
  *keep = items;
  *array = a;
  return 0;
}

static int string_attr(PyObject *value, const char *name, const char **field) {
  if (value == NULL || value == Py_None) return 0;
  if (!PyUnicode_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", name, Py_TYPE(value)->tp_name);
    return -1;
  }
  return (*field = PyUnicode_AsUTF8(value)) == NULL ? -1 : 0;
}

static int int_attr(PyObject *value, const char *name, int64_t *field) {
  if (value == NULL || value == Py_None) return 0;
  long long v = PyLong_AsLongLong(value);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Format(PyExc_TypeError, "%s must be an int", name);
    return -1;
  }
  *field = v;
  return 0;
}

static int Handle_init(Handle *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"function_code", "inputs",     "outputs",  "single_send", "naa",
                           "transport",     "timeout_ms", "progress", "auth_key",    "local_ip",
                           "device",        "pacing_us",  "params",   NULL};
  unsigned long code;
  PyObject *inputs, *outputs, *single_send = NULL;
  PyObject *a_naa = NULL, *a_transport = NULL, *a_timeout = NULL, *a_progress = NULL, *a_key = NULL,
           *a_ip = NULL, *a_device = NULL, *a_pacing = NULL, *a_params = NULL;
  if (self->views != NULL || self->handle.id != NAA_HANDLE_NULL.id) {
    PyErr_SetString(PyExc_RuntimeError, "naa.Handle.__init__ called twice");
    return -1;
  }
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "kOO|$OOOOOOOOOO", kwlist, &code, &inputs, &outputs,
                                   &single_send, &a_naa, &a_transport, &a_timeout, &a_progress,
                                   &a_key, &a_ip, &a_device, &a_pacing, &a_params))
    return -1;
  naa_attr_t attr = NAA_ATTR_INIT;
  PyObject *keep_params = NULL;
  const char **params = NULL;
  if (string_attr(a_naa, "naa", &attr.naa) < 0 ||
      string_attr(a_transport, "transport", &attr.transport) < 0 ||
      int_attr(a_timeout, "timeout_ms", &attr.timeout_ms) < 0 ||
      string_attr(a_progress, "progress", &attr.progress) < 0 ||
      string_attr(a_key, "auth_key", &attr.auth_key) < 0 ||
      string_attr(a_ip, "local_ip", &attr.local_ip) < 0 ||
      string_attr(a_device, "device", &attr.device) < 0 ||
      int_attr(a_pacing, "pacing_us", &attr.pacing_us) < 0)
    return -1;
  if (a_params != NULL && a_params != Py_None) {
    if (params_of(a_params, &keep_params, &params) < 0) return -1;
    attr.params = params;
  }

  int rc = -1;
  naa_param_t *p = NULL;
  PyObject *in = PySequence_Tuple(inputs), *out = in ? PySequence_Tuple(outputs) : NULL;
  if (out == NULL) goto done;
  Py_ssize_t n_in = PyTuple_GET_SIZE(in), n_out = PyTuple_GET_SIZE(out);
  self->views = PyMem_Calloc((size_t)(n_in + n_out) + 1, sizeof(Py_buffer));
  p = PyMem_Calloc((size_t)(n_in + n_out) + 1, sizeof *p);
  if (self->views == NULL || p == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n_in + n_out; i++) {
    const int is_in = i < n_in;
    const Py_ssize_t index = is_in ? i : i - n_in;
    Py_buffer *view = &self->views[i];
    if (export(PyTuple_GET_ITEM(is_in ? in : out, index), is_in ? "inputs" : "outputs", index,
               !is_in, view) < 0)
      goto done;
    self->n_views++;
    int single = is_in ? single_send_of(single_send, i, n_in) : 0;
    if (single < 0) goto done;
    p[i] = (naa_param_t){view->buf, (size_t)view->len, single != 0};
  }
  self->n_inputs = n_in;
  self->function_code = (uint32_t)code;
  naa_handle h = NAA_HANDLE_NULL;
  int err;
  Py_BEGIN_ALLOW_THREADS err =
      naa_create_attr((uint32_t)code, p, (size_t)n_in, p + n_in, (size_t)n_out, &attr, &h);
  Py_END_ALLOW_THREADS if (err != NAA_SUCCESS) {
    naapy_raise_create(err, "naa_create(function code %lu, %zd inputs, %zd outputs)", code, n_in,
                       n_out);
    goto done;
  }
  self->handle = h;
  self->inputs = in, self->outputs = out;
  in = out = NULL;
  rc = 0;
done:
  if (rc < 0) release_views(self);
  Py_XDECREF(in);
  Py_XDECREF(out);
  Py_XDECREF(keep_params);
  PyMem_Free(params);
  PyMem_Free(p);
  return rc;
}

/* Finalizes (without the GIL) and releases the exports once libnaa no longer uses them: now,
 * or when the last call that another thread has inside libnaa on the handle returns. Until
 * then the parameters stay exported, so that the program cannot free or resize an output
 * that libnaa still writes (bytearray and NumPy refuse with BufferError). */
static int close_handle(Handle *self) {
  naa_handle h = self->handle;
  int rc = NAA_SUCCESS;
  self->handle = NAA_HANDLE_NULL;
  if (h.id != NAA_HANDLE_NULL.id) {
    use_begin(self); /* a thread that returns meanwhile must not release the exports */
    Py_BEGIN_ALLOW_THREADS rc = naa_finalize(&h);
    Py_END_ALLOW_THREADS use_end(self);
  } else if (self->users == 0) {
    release_views(self); /* a failed __init__ */
  }
  return rc;
}

static void Handle_dealloc(Handle *self) {
  PyObject_GC_UnTrack(self);
  close_handle(self);
  Py_CLEAR(self->inputs);
  Py_CLEAR(self->outputs);
  PyTypeObject *type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

static int Handle_traverse(Handle *self, visitproc visit, void *arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(self->inputs);
  Py_VISIT(self->outputs);
  return 0;
}

/* The handle of an open naa.Handle whose buffers have not moved; -1 with naa.Error if not. */
static int usable(Handle *self, const char *call, naa_handle *h) {
  if (self->handle.id == NAA_HANDLE_NULL.id) {
    naapy_raise_cause(NAA_ERR_INVALID_HANDLE, "%s: the handle is closed", call);
    return -1;
  }
  *h = self->handle;
  return check_views(self);
}

static PyObject *Handle_invoke(Handle *self, PyObject *unused) {
  (void)unused;
  naa_handle h;
  int rc;
  if (usable(self, "naa_invoke", &h) < 0) return NULL;
  use_begin(self);
  Py_BEGIN_ALLOW_THREADS rc = naa_invoke(&h);
  Py_END_ALLOW_THREADS use_end(self);
  if (rc != NAA_SUCCESS) return naapy_raise("naa_invoke", rc, NULL);
  Py_RETURN_NONE;
}

/* naa_test once, without the GIL: 1 with *status filled, 0 if not complete, -1 on error. */
static int test_once(Handle *self, naa_handle *h, naa_status *status) {
  bool flag = false;
  int rc;
  use_begin(self);
  Py_BEGIN_ALLOW_THREADS rc = naa_test(h, &flag, status);
  Py_END_ALLOW_THREADS use_end(self);
  if (rc != NAA_SUCCESS) {
    naapy_raise("naa_test", rc, status);
    return -1;
  }
  return flag ? 1 : 0;
}

static PyObject *Handle_test(Handle *self, PyObject *unused) {
  (void)unused;
  naa_handle h;
  naa_status status = {0};
  if (usable(self, "naa_test", &h) < 0) return NULL;
  int done = test_once(self, &h, &status);
  if (done < 0) return NULL;
  if (!done) Py_RETURN_NONE;
  return naapy_status(&status);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* wait(timeout): naa_test until complete or timeout seconds have passed, napping between
 * tests (10 us doubling to 1 ms) without the GIL, and letting Ctrl-C through. */
static PyObject *wait_for(Handle *self, naa_handle *h, double timeout) {
  const double deadline = now_s() + timeout;
  double nap = 10e-6;
  naa_status status = {0};
  for (;;) {
    int done = test_once(self, h, &status);
    if (done < 0) return NULL;
    if (done) return naapy_status(&status);
    double left = deadline - now_s();
    if (left <= 0) Py_RETURN_NONE;
    if (PyErr_CheckSignals() < 0) return NULL;
    struct timespec ts;
    double d = nap < left ? nap : left;
    ts.tv_sec = (time_t)d;
    ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
    Py_BEGIN_ALLOW_THREADS nanosleep(&ts, NULL);
    Py_END_ALLOW_THREADS if (nap < 1e-3) nap *= 2;
    if (check_views(self) < 0) return NULL;
  }
}

static PyObject *Handle_wait(Handle *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"timeout", NULL};
  PyObject *timeout = Py_None;
  naa_handle h;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O", kwlist, &timeout)) return NULL;
  if (usable(self, "naa_wait", &h) < 0) return NULL;
  if (timeout != Py_None) {
    double t = PyFloat_AsDouble(timeout);
    if (t == -1.0 && PyErr_Occurred()) return NULL;
    return wait_for(self, &h, t);
  }
  naa_status status = {0};
  int rc;
  use_begin(self);
  Py_BEGIN_ALLOW_THREADS rc = naa_wait(&h, &status);
  Py_END_ALLOW_THREADS use_end(self);
  if (rc != NAA_SUCCESS) return naapy_raise("naa_wait", rc, &status);
  return naapy_status(&status);
}

static PyObject *Handle_cancel(Handle *self, PyObject *unused) {
  (void)unused;
  naa_handle h;
  int rc;
  if (usable(self, "naa_cancel", &h) < 0) return NULL;
  use_begin(self);
  Py_BEGIN_ALLOW_THREADS rc = naa_cancel(&h);
  Py_END_ALLOW_THREADS use_end(self);
  if (rc != NAA_SUCCESS) return naapy_raise("naa_cancel", rc, NULL);
  Py_RETURN_NONE;
}

static PyObject *Handle_info(Handle *self, PyObject *unused) {
  (void)unused;
  naa_handle h;
  if (usable(self, "naa_handle_info", &h) < 0) return NULL;
  return naapy_handle_info(&h);
}

static PyObject *Handle_close(Handle *self, PyObject *unused) {
  (void)unused;
  int rc = close_handle(self);
  if (rc != NAA_SUCCESS) return naapy_raise("naa_finalize", rc, NULL);
  Py_RETURN_NONE;
}

static PyObject *Handle_enter(Handle *self, PyObject *unused) {
  (void)unused;
  Py_INCREF(self);
  return (PyObject *)self;
}

static PyObject *Handle_exit(Handle *self, PyObject *args) {
  (void)args;
  PyObject *r = Handle_close(self, NULL);
  if (r == NULL && PyErr_Occurred() && PyTuple_Size(args) > 0 &&
      PyTuple_GET_ITEM(args, 0) != Py_None)
    PyErr_Clear(); /* the exception that left the with block is the one to see */
  else if (r == NULL)
    return NULL;
  Py_XDECREF(r);
  Py_RETURN_FALSE;
}

static PyObject *Handle_repr(Handle *self) {
  if (self->handle.id == NAA_HANDLE_NULL.id)
    return PyUnicode_FromFormat("<naa.Handle function_code=%u closed>", self->function_code);
  return PyUnicode_FromFormat("<naa.Handle function_code=%u inputs=%zd outputs=%zd>",
                              self->function_code, self->n_inputs, self->n_views - self->n_inputs);
}

static PyObject *get_closed(Handle *self, void *unused) {
  (void)unused;
  return PyBool_FromLong(self->handle.id == NAA_HANDLE_NULL.id);
}

static PyObject *get_function_code(Handle *self, void *unused) {
  (void)unused;
  return PyLong_FromUnsignedLong(self->function_code);
}

static PyObject *get_tuple(PyObject *t) {
  if (t == NULL) return PyTuple_New(0);
  Py_INCREF(t);
  return t;
}
static PyObject *get_inputs(Handle *self, void *unused) {
  (void)unused;
  return get_tuple(self->inputs);
}
static PyObject *get_outputs(Handle *self, void *unused) {
  (void)unused;
  return get_tuple(self->outputs);
}

static PyMethodDef methods[] = {
    {"invoke", (PyCFunction)Handle_invoke, METH_NOARGS,
     "invoke()\n--\n\nStart one invocation (naa_invoke): write the inputs to the NAA. The inputs\n"
     "must not change until it completes. Raises naa.Error (ERR_STATE while one is in flight)."},
    {"test", (PyCFunction)Handle_test, METH_NOARGS,
     "test()\n--\n\nWithout blocking (naa_test): a naa.Status once the invocation has completed\n"
     "and the results are in the outputs, None while it runs. Raises naa.Error."},
    {"wait", (PyCFunction)(void (*)(void))Handle_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None)\n--\n\nBlock, with the GIL released, until the invocation completes;\n"
     "return its naa.Status. timeout=None waits as naa_wait does, up to the handle's NAA_TIMEOUT\n"
     "(then naa.Error ERR_TIMEOUT); a number of seconds returns None when that passes first,\n"
     "the invocation still in flight. Raises naa.Error (ERR_NAA when the NAA reports a\n"
     "non-zero return code: .status has it)."},
    {"cancel", (PyCFunction)Handle_cancel, METH_NOARGS,
     "cancel()\n--\n\nAbandon the invocation in flight (naa_cancel): once it returns the NAA can\n"
     "no longer write into the outputs, which hold whatever it had written (undefined). The\n"
     "handle stays usable: the next invoke() connects again and resends every input. With\n"
     "nothing in flight it does nothing."},
    {"info", (PyCFunction)Handle_info, METH_NOARGS,
     "info()\n--\n\nWhat the handle chose (naa_handle_info): a dict with naa ('host:port'),\n"
     "transport, function_code, regions, pacing_us, timeout_ms and progress."},
    {"close", (PyCFunction)Handle_close, METH_NOARGS,
     "close()\n--\n\nFinalize the handle (naa_finalize) and release the buffers; an invocation in\n"
     "flight is discarded. While another thread is inside a wait on the handle, the buffers\n"
     "stay exported (cannot be resized or freed) until that wait returns. Closing twice is\n"
     "harmless."},
    {"__enter__", (PyCFunction)Handle_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Handle_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef getset[] = {
    {"closed", (getter)get_closed, NULL, "True once close() has finalized the handle", NULL},
    {"function_code", (getter)get_function_code, NULL, "the function code (1..127)", NULL},
    {"inputs", (getter)get_inputs, NULL, "the input objects, as given", NULL},
    {"outputs", (getter)get_outputs, NULL, "the output objects, as given", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyDoc_STRVAR(
    handle_doc,
    "Handle(function_code, inputs, outputs, *, single_send=False, naa=None, transport=None,\n"
    "       timeout_ms=None, progress=None, auth_key=None, local_ip=None, device=None,\n"
    "       pacing_us=None, params=None)\n--\n\n"
    "A libnaa handle (naa_create_attr): connects to the NAA serving function_code and registers\n"
    "the parameters, which are used in place (zero-copy). inputs and outputs are sequences of\n"
    "buffer-protocol objects (NumPy arrays, bytearray, memoryview, array.array): C-contiguous,\n"
    "1 .. 2^32-1 bytes each, the outputs writable. The same object among the inputs and the\n"
    "outputs is one in-place region. single_send: True (every input) or one bool per input; such\n"
    "an input travels on the first invoke() only. The keyword arguments naa .. params are the\n"
    "fields of naa_attr_t (see naa_create_attr(3)); params is a dict {NAME: value} or a sequence\n"
    "of 'NAME=value'. The handle holds a buffer export of every parameter until close(), so\n"
    "they cannot be resized meanwhile. Use it as a context manager to close it.");

static PyType_Slot slots[] = {{Py_tp_doc, (void *)handle_doc},
                              {Py_tp_new, PyType_GenericNew},
                              {Py_tp_init, Handle_init},
                              {Py_tp_dealloc, Handle_dealloc},
                              {Py_tp_traverse, Handle_traverse},
                              {Py_tp_repr, Handle_repr},
                              {Py_tp_methods, methods},
                              {Py_tp_getset, getset},
                              {0, NULL}};

static PyType_Spec spec = {"naa.Handle", sizeof(Handle), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
                           slots};

int naapy_handle_init(PyObject *m) {
  naapy_handle_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &spec, NULL);
  if (naapy_handle_type == NULL) return -1;
  return PyModule_AddObjectRef(m, "Handle", (PyObject *)naapy_handle_type);
}
