/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * naaice_ap2.h - the interface of the NAAICE reference middleware ("AP2"), served by libnaa.
 *
 * Programs written for the reference include this header (as <naaice_ap2.h> or
 * <naaice/naaice_ap2.h>) and build unchanged against libnaa: same type names, struct layouts,
 * macros, call names and return convention. See naaice_ap2(3) for what is the same, what
 * libnaa does better, and how to switch.
 *
 * How it coexists with naa.h: libnaa's own API (naa.h) uses the same call names with other
 * signatures, so one exported symbol cannot serve both (the reference passes counts as
 * unsigned int, naa.h as size_t; the handles and statuses differ in size). The calls of this
 * header are therefore exported as naaice_create, naaice_invoke, naaice_test, naaice_wait and
 * naaice_finalize, and the macros below give them the reference's names. Existing programs
 * need no edit and the library has no clashing symbols; the price is that one translation
 * unit cannot include both naa.h and this header (their type names collide).
 *
 * Return convention, as the reference: 0 on success, -1 on failure. An application error code
 * of the NAA is not a failure: naa_test/naa_wait return 0 and put it in status.naa_error.
 * naaice_last_error() gives the libnaa error code (naa_strerror values) and the cause of the
 * last call on a handle.
 *
 * The header is C99 and C++ compatible.
 */
#ifndef NAAICE_AP2_H
#define NAAICE_AP2_H

#if defined(NAA_H) && !defined(NAAICE_AP2_BESIDE_NAA_H)
#error \
    "naaice_ap2.h (the reference middleware's names) and naa.h (libnaa's) cannot be included in one translation unit"
#endif

/* The reference's header makes these available to the program. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(NAA_NO_VISIBILITY)
#define NAAICE_API __attribute__((visibility("default")))
#else
#define NAAICE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Memory regions per connection in the reference's low-level layer: 31 parameter regions
 * plus the one MRSP uses itself. */
#define MAX_MRS 32

/* The NAA port an NAA_SPEC entry with an empty port field means. */
#define SERVER_CONNECTION_PORT 12345

typedef uint32_t naa_function_code_t;

/* One parameter buffer (24 bytes on 64-bit targets, as the reference). single_send on an
 * input: sent on the first naa_invoke only. single_send on an output that is not an input:
 * the buffer becomes an input too and is written to the NAA on the first naa_invoke, as the
 * reference does. */
typedef struct naa_param_t {
  void *addr;
  size_t size;
  bool single_send;
} naa_param_t;

/* The program's storage for a handle (16 bytes, as the reference): zeroed, on the stack or
 * from calloc. The library never frees it. naaice_session is libnaa's validated id of the
 * connection, not a pointer: a stale or garbage handle makes a call fail, never crash. */
typedef struct naa_handle {
  naa_function_code_t function_code;
  uint64_t naaice_session;
} naa_handle;

/* Return codes of the NAA (status.naa_error): the values of the wire protocol. Application
 * codes 0x10..0x7f arrive as plain values of this enum. */
enum naa_error { NAA_SUCCESS = 0, SOCKET_UNAVAIL = 1, KERNEL_TIMEOUT = 2 };

/* status.state of a finished invocation (the reference's connection state number). */
enum naaice_state { NAAICE_STATE_FINISHED = 30 };

typedef struct naa_status {
  enum naaice_state state;  /* NAAICE_STATE_FINISHED once the invocation completed */
  enum naa_error naa_error; /* the NAA's return code for the invocation */
  uint64_t bytes_received;  /* byte length of the NAA's final write, as the transport tells
                               it (0 over libfabric tcp, which does not) */
} naa_status;

/* The reference's five calls, under libnaa's exported names. */
NAAICE_API int naaice_create(const naa_function_code_t function_code, naa_param_t *input_params,
                             unsigned int input_amount, naa_param_t *output_params,
                             unsigned int output_amount, naa_handle *handle);
NAAICE_API int naaice_invoke(naa_handle *handle);
NAAICE_API int naaice_test(naa_handle *handle, bool *flag, naa_status *status);
NAAICE_API int naaice_wait(naa_handle *handle, naa_status *status);
NAAICE_API int naaice_finalize(naa_handle *handle);

/* libnaa's error codes: the values of naa.h's naa_error_t (naa_strerror(3)), named here
 * because a translation unit with this header cannot include naa.h. */
enum naaice_libnaa_error {
  NAAICE_ERR_INVALID_ARGUMENT = 1,
  NAAICE_ERR_INVALID_HANDLE = 2,
  NAAICE_ERR_NO_NAA = 3,
  NAAICE_ERR_CONNECTION = 4,
  NAAICE_ERR_TRANSPORT = 5,
  NAAICE_ERR_TIMEOUT = 6,
  NAAICE_ERR_NAA = 7,
  NAAICE_ERR_NO_RESOURCES = 8,
  NAAICE_ERR_PROTOCOL = 9,
  NAAICE_ERR_STATE = 10,
  NAAICE_ERR_CONFIG = 11,
  NAAICE_ERR_UNSUPPORTED = 12,
  NAAICE_ERR_INTERNAL = 13
};

/* The libnaa error code (NAAICE_ERR_*) of the last failed call on this handle storage since
 * its naa_create, 0 if none failed; if message is not NULL, the failure's cause as one
 * English line (valid until the next call on the handle). naa_finalize clears it. Kept per
 * handle, so threads working on different handles do not disturb each other. */
NAAICE_API int naaice_last_error(const naa_handle *handle, const char **message);

/* The profiling interface (pnaa(3)): naaice_NAME is a weak alias of pnaaice_NAME. */
NAAICE_API int pnaaice_create(const naa_function_code_t function_code, naa_param_t *input_params,
                              unsigned int input_amount, naa_param_t *output_params,
                              unsigned int output_amount, naa_handle *handle);
NAAICE_API int pnaaice_invoke(naa_handle *handle);
NAAICE_API int pnaaice_test(naa_handle *handle, bool *flag, naa_status *status);
NAAICE_API int pnaaice_wait(naa_handle *handle, naa_status *status);
NAAICE_API int pnaaice_finalize(naa_handle *handle);
NAAICE_API int pnaaice_last_error(const naa_handle *handle, const char **message);

#ifndef NAAICE_NO_REFERENCE_NAMES
#define naa_create naaice_create
#define naa_invoke naaice_invoke
#define naa_test naaice_test
#define naa_wait naaice_wait
#define naa_finalize naaice_finalize
#endif

#ifdef __cplusplus
}
#endif

#endif /* NAAICE_AP2_H */
