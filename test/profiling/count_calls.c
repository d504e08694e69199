/* SPDX-License-Identifier: BSD-3-Clause */
/* A profiling tool in the PMPI manner (pnaa(3)): it defines naa_create & co., counts each call
 * and hands it to the library through pnaa_*. At exit it prints one line to stderr:
 *   count_calls: naa_create=1 naa_invoke=2 ...
 * test/profiling/interpose.sh links it into examples/vecadd and LD_PRELOADs it. */
#include <stdatomic.h>
#include <stdio.h>

#include "naa.h"

static atomic_ulong n_create, n_create_attr, n_invoke, n_test, n_wait, n_waitall, n_finalize,
    n_strerror;

int naa_create(uint32_t function_code, naa_param_t *inputs, size_t n_inputs, naa_param_t *outputs,
               size_t n_outputs, naa_handle *handle) {
  atomic_fetch_add(&n_create, 1);
  return pnaa_create(function_code, inputs, n_inputs, outputs, n_outputs, handle);
}

int naa_create_attr(uint32_t function_code, naa_param_t *inputs, size_t n_inputs,
                    naa_param_t *outputs, size_t n_outputs, const naa_attr_t *attr,
                    naa_handle *handle) {
  atomic_fetch_add(&n_create_attr, 1);
  return pnaa_create_attr(function_code, inputs, n_inputs, outputs, n_outputs, attr, handle);
}

int naa_invoke(naa_handle *handle) {
  atomic_fetch_add(&n_invoke, 1);
  return pnaa_invoke(handle);
}

int naa_test(naa_handle *handle, bool *flag, naa_status *status) {
  atomic_fetch_add(&n_test, 1);
  return pnaa_test(handle, flag, status);
}

int naa_wait(naa_handle *handle, naa_status *status) {
  atomic_fetch_add(&n_wait, 1);
  return pnaa_wait(handle, status);
}

int naa_waitall(int count, naa_handle handles[], naa_status statuses[]) {
  atomic_fetch_add(&n_waitall, 1);
  return pnaa_waitall(count, handles, statuses);
}

int naa_finalize(naa_handle *handle) {
  atomic_fetch_add(&n_finalize, 1);
  return pnaa_finalize(handle);
}

const char *naa_strerror(int error) {
  atomic_fetch_add(&n_strerror, 1);
  return pnaa_strerror(error);
}

/* Silent in processes that made no call (the shell of a libtool wrapper, for one). */
__attribute__((destructor)) static void report(void) {
  if (atomic_load(&n_create) + atomic_load(&n_create_attr) == 0) return;
  fprintf(stderr,
          "count_calls: naa_create=%lu naa_create_attr=%lu naa_invoke=%lu naa_test=%lu "
          "naa_wait=%lu naa_waitall=%lu naa_finalize=%lu naa_strerror=%lu\n",
          atomic_load(&n_create), atomic_load(&n_create_attr), atomic_load(&n_invoke),
          atomic_load(&n_test), atomic_load(&n_wait), atomic_load(&n_waitall),
          atomic_load(&n_finalize), atomic_load(&n_strerror));
}
