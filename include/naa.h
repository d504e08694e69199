/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * naa.h - libnaa: offload a computation to a network-attached accelerator (NAA).
 *
 * The model mirrors MPI non-blocking communication:
 *
 *   naa_create()   register the parameter buffers, connect to the NAA that serves
 *                  the function code, and exchange memory regions (MRSP) once;
 *   naa_invoke()   write the inputs to the NAA; the last write starts its kernel;
 *   naa_test()     non-blocking completion check, like MPI_Test;
 *   naa_wait()     blocking completion with a deadline, like MPI_Wait;
 *   naa_finalize() disconnect and release everything the handle holds.
 *
 * Every function returns NAA_SUCCESS (0) or a positive naa_error_t code; the
 * library never aborts the process and never writes to stdout. Diagnostics go to
 * stderr, filtered by NAA_LOG_LEVEL (see naa(7)).
 *
 * Thread safety: every function may be called concurrently on different handles
 * (one thread per handle, as in MPI_THREAD_MULTIPLE codes). Calls on the same
 * handle from several threads are serialised by the library.
 *
 * The header is C99 and C++ compatible.
 */
#ifndef NAA_H
#define NAA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) && !defined(NAA_NO_VISIBILITY)
#define NAA_API __attribute__((visibility("default")))
#else
#define NAA_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the library API this header describes. */
#define NAA_VERSION_MAJOR 0
#define NAA_VERSION_MINOR 1
#define NAA_VERSION_PATCH 0

/* Error codes returned by every libnaa call. 0 is success, every failure is positive. */
typedef enum naa_error {
  NAA_SUCCESS = 0,
  NAA_ERR_INVALID_ARGUMENT = 1, /* NULL pointer, zero size, bad function code, too many regions */
  NAA_ERR_INVALID_HANDLE = 2,   /* never created, already finalized, or not a handle at all */
  NAA_ERR_NO_NAA = 3,           /* no NAA is configured for this function code */
  NAA_ERR_CONNECTION = 4,       /* the NAA could not be reached, refused, or went away */
  NAA_ERR_TRANSPORT = 5,        /* the RDMA/libfabric layer reported an error */
  NAA_ERR_TIMEOUT = 6,          /* a deadline passed (NAA_TIMEOUT, NAA_CONNECT_TIMEOUT) */
  NAA_ERR_NAA = 7,              /* the NAA answered with a non-zero return code (see status) */
  NAA_ERR_NO_RESOURCES = 8,     /* out of memory, or the buffer could not be registered */
  NAA_ERR_PROTOCOL = 9,         /* the NAA violated or rejected the MRSP protocol */
  NAA_ERR_STATE = 10,  /* call not valid now: invoke while running, wait with nothing in flight */
  NAA_ERR_CONFIG = 11, /* malformed NAA_SPEC, NAA_TRANSPORT or other runtime parameter */
  NAA_ERR_UNSUPPORTED = 12, /* the requested transport is not compiled in or not usable here */
  NAA_ERR_INTERNAL = 13,    /* a libnaa bug; please report it with the log */
  NAA_ERR_IN_STATUS = 14,   /* naa_waitall/naa_testall: see each naa_status.error */
  NAA_ERR_CANCELED = 15     /* naa_cancel, from another thread, ended the invocation waited for */
} naa_error_t;

/* Return codes an NAA reports for an invocation (naa_status.naa_return_code). */
enum naa_return_code {
  NAA_RC_SUCCESS = 0x00,
  NAA_RC_SOCKET_NOT_AVAILABLE = 0x01,
  NAA_RC_KERNEL_TIMEOUT = 0x02,
  NAA_RC_APPLICATION_MIN = 0x10,  /* 0x10..0x7f: application / calculation errors */
  NAA_RC_KERNEL_CRASHED = 0x7e,   /* naa-server: the kernel's isolated worker process died */
  NAA_RC_UNKNOWN_FUNCTION = 0x7f, /* naa-server: no kernel for this function code */
  NAA_RC_APPLICATION_MAX = 0x7f
};

/* One parameter buffer. A buffer that appears both among the inputs and among the
 * outputs (same addr) is one in-place region: written before the kernel runs and
 * read back after it. A single_send input travels on the first naa_invoke only;
 * the NAA keeps its contents for later invocations. single_send on an output-only
 * buffer is ignored. size must be 1 .. 2^32-1 bytes. */
typedef struct naa_param {
  void *addr;
  size_t size;
  bool single_send;
} naa_param_t;

/* A handle the caller declares (on the stack, in a struct, anywhere). It holds an
 * opaque id, not a pointer: the library validates it on every call, so a stale,
 * finalized or garbage handle yields NAA_ERR_INVALID_HANDLE, never a crash.
 * Initialise unused handles with NAA_HANDLE_NULL. */
typedef struct naa_handle {
  uint64_t id;
} naa_handle;

/* clang-format off */
#define NAA_HANDLE_NULL_INIT {0}
/* clang-format on */
static const naa_handle NAA_HANDLE_NULL = NAA_HANDLE_NULL_INIT;

/* Result of a completed invocation. */
typedef struct naa_status {
  uint8_t naa_return_code; /* NAA_RC_*: R >> 8 of the NAA's immediate (low 8 bits of it) */
  uint8_t error;           /* naa_waitall & co.: this handle's naa_error_t code, like MPI_ERROR; it
                             lies in what was padding before, so the struct keeps its size */
  uint32_t immediate;      /* raw 32-bit immediate the NAA sent (host byte order), less the
                             NAA's energy bits where libnaa asked for them (naa(7) ENERGY) */
  size_t bytes_received;   /* payload bytes of the NAA's final write as the transport reports
                             it (the wire tells no more); 0 where it does not (libfabric tcp) */
  uint32_t function_code;  /* function code the invocation ran */
} naa_status;

/* Create a handle for function_code (1..127): resolve which NAA serves it (NAA_SPEC,
 * see naa(7)), register the n_inputs input and n_outputs output buffers, connect,
 * and exchange memory regions with the NAA. At least one input and one output are
 * required; inputs and outputs together (in-place buffers counted once) may form at
 * most 31 regions. On success *handle identifies the new session; on failure it is
 * set to NAA_HANDLE_NULL. The buffers must stay valid until naa_finalize(). Blocks at
 * most NAA_CONNECT_TIMEOUT seconds, whatever transports NAA_TRANSPORT=auto tries. */
NAA_API int naa_create(uint32_t function_code, naa_param_t *inputs, size_t n_inputs,
                       naa_param_t *outputs, size_t n_outputs, naa_handle *handle);

/* Per-handle settings for naa_create_attr(), instead of the process environment (see
 * naa_create_attr(3)). Initialise with NAA_ATTR_INIT and set only what you need: a field
 * left at its initial value falls back to its environment variable, then to the default.
 * The struct may grow at its end in later versions; `size` (set by NAA_ATTR_INIT) tells
 * the library which fields a program was compiled with, so old programs keep working. */
typedef struct naa_attr {
  size_t size;               /* sizeof(naa_attr_t) as compiled: set by NAA_ATTR_INIT */
  uint32_t version;          /* NAA_ATTR_VERSION as compiled: set by NAA_ATTR_INIT */
  const char *naa;           /* "host:port" ("[v6addr]:port"): this NAA, no NAA_SPEC/Slurm lookup */
  const char *transport;     /* as NAA_TRANSPORT: "auto", "verbs", "ofi", "ofi+tcp", ... */
  int64_t timeout_ms;        /* as NAA_TIMEOUT, in milliseconds (> 0); -1: unset */
  const char *progress;      /* as NAA_PROGRESS: "spin", "block", "spin-then-block", "adaptive",
                                "thread",      "provider" */
  const char *auth_key;      /* as NAA_AUTH_KEY ("" sends none) */
  const char *local_ip;      /* as NAA_LOCAL_IP ("" lets routing choose) */
  const char *device;        /* as NAA_RDMA_DEVICE ("" none) */
  int64_t pacing_us;         /* as NAA_PACING_US, 0 (off) .. 10000000; -1: unset */
  const char *const *params; /* NULL or a NULL-terminated list of "NAME=value" strings that set
                               any runtime parameter of naa(7) for this handle (NAA_SPIN_US=20,
                               NAA_OFI_WRITE_CHUNK=65536, ...); the fields above win over it;
                               "NAME=" restores the default; `naa-info --params` lists them */
  /* version 2 */
  int64_t connect_timeout_ms; /* as NAA_CONNECT_TIMEOUT, in milliseconds (> 0); -1: unset */
  int64_t reconnect;          /* as NAA_RECONNECT: 0 disables, 1 .. 100 enables; -1: unset */
} naa_attr_t;

#define NAA_ATTR_VERSION 2
#define NAA_ATTR_UNSET (-1)
#define NAA_ATTR_INIT                                                                         \
  {                                                                                           \
    sizeof(naa_attr_t), NAA_ATTR_VERSION, NULL, NULL, NAA_ATTR_UNSET, NULL, NULL, NULL, NULL, \
        NAA_ATTR_UNSET, NULL, NAA_ATTR_UNSET, NAA_ATTR_UNSET                                  \
  }

/* naa_create() with per-handle settings; attr == NULL is naa_create(). With attr->naa
 * set, NAA_SPEC and Slurm are not consulted (nor NAA_SPEC's n_inputs check). A malformed
 * attr field yields NAA_ERR_INVALID_ARGUMENT, naming the field in the log. */
NAA_API int naa_create_attr(uint32_t function_code, naa_param_t *inputs, size_t n_inputs,
                            naa_param_t *outputs, size_t n_outputs, const naa_attr_t *attr,
                            naa_handle *handle);

/* Start one invocation: write the inputs, the last write carrying the function code.
 * Returns NAA_ERR_STATE if an invocation is still in flight on this handle. The input
 * buffers must not be modified until the invocation completes. */
NAA_API int naa_invoke(naa_handle *handle);

/* Check, without blocking, whether the invocation has completed. *flag becomes true
 * once the results are in the output buffers; status (may be NULL) is then filled.
 * Returns NAA_ERR_NAA if the NAA reported a non-zero return code (status has it),
 * NAA_ERR_STATE if nothing is in flight. */
NAA_API int naa_test(naa_handle *handle, bool *flag, naa_status *status);

/* Block until the invocation has completed or NAA_TIMEOUT seconds have passed
 * (NAA_ERR_TIMEOUT). A timeout leaves the invocation in flight: wait or test again, or
 * naa_cancel() it. status may be NULL. Return codes as for naa_test(). */
NAA_API int naa_wait(naa_handle *handle, naa_status *status);

/* Abandon the invocation in flight, as MPI_Cancel: when it returns the NAA can no longer
 * write into the handle's buffers (the connection is closed first); outputs and in-place
 * buffers hold whatever the NAA had written by then (undefined). The handle stays usable:
 * the next naa_invoke connects again (within NAA_CONNECT_TIMEOUT) and resends every input.
 * With nothing in flight it does nothing. A wait on the handle in another thread (naa_wait,
 * naa_test, naa_waitany, naa_waitall) is woken and ends with NAA_ERR_CANCELED; naa_cancel
 * does not wait for it to time out. See naa_cancel(3). */
NAA_API int naa_cancel(naa_handle *handle);

/* Completion over many handles, as MPI_Waitall/Waitany/Testany/Testall. An entry that
 * is NAA_HANDLE_NULL or has no invocation in flight is inactive and ignored (its status,
 * if any, is zeroed). Each active handle's deadline is its own NAA_TIMEOUT from the call.
 * statuses/status may be NULL. See naa_waitall(3). */
#define NAA_UNDEFINED (-32766) /* index when no handle was active (MPI_UNDEFINED) */

/* Wait for every active handle. Returns NAA_SUCCESS if all succeeded, else
 * NAA_ERR_IN_STATUS with each statuses[i].error telling (NAA_SUCCESS for the good ones). */
NAA_API int naa_waitall(int count, naa_handle handles[], naa_status statuses[]);
/* Wait for one active handle; *index is its position (NAA_UNDEFINED if none is active).
 * Returns that handle's result, as naa_wait() would. */
NAA_API int naa_waitany(int count, naa_handle handles[], int *index, naa_status *status);
/* As naa_waitany without blocking: *flag false if no active handle has completed; true
 * with *index = NAA_UNDEFINED if none is active. */
NAA_API int naa_testany(int count, naa_handle handles[], int *index, bool *flag,
                        naa_status *status);
/* *flag true, statuses filled and the invocations completed, if every active handle has
 * completed; otherwise *flag false and no handle is completed. Returns as naa_waitall(). */
NAA_API int naa_testall(int count, naa_handle handles[], bool *flag, naa_status statuses[]);

/* Disconnect and release everything the handle holds, also after an error. The
 * handle is set to NAA_HANDLE_NULL; any copy of it becomes invalid. If an invocation
 * is still in flight its results are discarded. */
NAA_API int naa_finalize(naa_handle *handle);

/* Static English description of an error code ("unknown error" for others). */
NAA_API const char *naa_strerror(int error);

/* Library version as "MAJOR.MINOR.PATCH"; the numbers themselves if not NULL. */
NAA_API const char *naa_version(int *major, int *minor, int *patch);

/* Static English name of an NAA return code (naa_status.naa_return_code): 0x01, 0x02, 0x7e,
 * 0x7f by name, "application error" for the rest of 0x10..0x7f (naa_strerror(3)). */
NAA_API const char *naa_rc_string(int naa_return_code);

/* The cause of the last failed call on *handle since its naa_create (per handle), or, with
 * handle NULL, of the calling thread's last failed call (a failed naa_create included): one
 * English line, copied into buf (at most len bytes, NUL-terminated; buf may be NULL). Returns
 * that call's naa_error_t code, NAA_SUCCESS if none failed. See naa_last_error(3). */
NAA_API int naa_last_error(const naa_handle *handle, char *buf, size_t len);

/* Levels of libnaa's log lines (NAA_LOG_LEVEL, naa(7)). */
enum naa_log_level {
  NAA_LOG_LEVEL_ERROR = 0,
  NAA_LOG_LEVEL_WARN = 1,
  NAA_LOG_LEVEL_INFO = 2,
  NAA_LOG_LEVEL_DEBUG = 3
};
/* Receives each log line that passes NAA_LOG_LEVEL, without its newline; may be called from
 * any thread, also from libnaa's progress threads. */
typedef void (*naa_log_handler_t)(int level, const char *line, void *arg);
/* Route libnaa's log lines to handler(level, line, arg) instead of stderr; NULL restores
 * stderr. Returns NAA_SUCCESS. See naa_set_log_handler(3). */
NAA_API int naa_set_log_handler(naa_log_handler_t handler, void *arg);

/* Statistics (NAA_STATS=1, naa_stats_get(3)): per function code and NAA... */
typedef struct naa_stats_function {
  uint32_t function_code;
  char naa[64];         /* "host:port" of the NAA */
  uint64_t invocations; /* naa_invoke calls that started one */
  uint64_t bytes_out;   /* input bytes written to the NAA by them (single_send ones once) */
  uint64_t bytes_back;  /* output bytes the NAA wrote back for them */
  uint64_t waits;       /* naa_wait calls */
  uint64_t tests;       /* naa_test calls (polls) */
  double invoke_s;      /* seconds spent in naa_invoke, naa_wait and naa_test */
  double wait_s;
  double test_s;
  uint64_t served;   /* invocations completed by naa_wait or naa_test, whose stages: */
  double transfer_s; /* seconds from naa_invoke until our writes were seen complete */
  double service_s;  /* seconds from then (or the paced final write) until the reply */
} naa_stats_function_t;
/* ...and for the process. */
typedef struct naa_stats {
  uint64_t creates;          /* naa_create/naa_create_attr calls, failed ones included */
  double create_s;           /* seconds spent in them */
  uint64_t completion_calls; /* naa_waitall, naa_waitany, naa_testany, naa_testall calls */
  double completion_s;       /* seconds spent in them */
  uint64_t errors[16];       /* failed calls by naa_error_t code (errors[0]: other codes) */
  size_t n_functions;        /* naa_stats_function_t entries there are */
} naa_stats_t;
/* The statistics so far: *totals (may be NULL) and up to max_functions entries into
 * functions (may be NULL). NAA_ERR_STATE if statistics are off. See naa_stats_get(3). */
NAA_API int naa_stats_get(naa_stats_t *totals, naa_stats_function_t *functions,
                          size_t max_functions);

/* Energy (NAA_ENERGY, naa_stats_energy_get(3)): the node's energy counters read at the start
 * and the end of each invocation's window (naa_invoke until the call that completed it), per
 * function code and NAA... */
typedef struct naa_stats_energy_function {
  uint32_t function_code;
  char naa[64];     /* "host:port" of the NAA */
  uint64_t windows; /* invocations whose window was measured */
  double window_s;  /* seconds those windows lasted */
  double host_j;    /* joules the host's counters advanced over them */
  uint64_t bytes;   /* bytes they moved, out and back (joules per GB: host_j / bytes * 1e9) */
  /* Appended (function_size tells whether a library fills them): the NAA's own energy, where
   * the NAA reports it with each reply (naa-server with NAA_ENERGY; reference NAAs do not). */
  uint64_t naa_runs;   /* invocations whose reply carried the NAA's joules for its kernel run */
  double naa_j;        /* joules the NAA's counters advanced over those kernel runs */
  uint64_t naa_bytes;  /* bytes those invocations moved, out and back */
  char naa_source[64]; /* what naa_j counts, as the NAA names it; "": no NAA figure */
} naa_stats_energy_function_t;
/* ...and what was counted. The caller sets size and function_size (NAA_STATS_ENERGY_INIT):
 * a library with longer structs fills only what the caller knows, so both may grow. */
typedef struct naa_stats_energy {
  size_t size;                /* sizeof(naa_stats_energy_t) as the caller was built */
  size_t function_size;       /* sizeof(naa_stats_energy_function_t) likewise: the stride */
  char host_source[128];      /* what host_j counts, e.g. "powercap (package-0)"; "": nothing */
  char host_unavailable[512]; /* why a source asked for is not counted ("": all are) */
  size_t n_functions;         /* naa_stats_energy_function_t entries there are */
} naa_stats_energy_t;
#define NAA_STATS_ENERGY_INIT \
  { sizeof(naa_stats_energy_t), sizeof(naa_stats_energy_function_t), "", "", 0 }
/* The energy so far into *totals (not NULL) and up to max_functions entries of functions (may
 * be NULL). NAA_ERR_STATE if statistics (NAA_STATS, NAA_TRACE) or NAA_ENERGY are off. */
NAA_API int naa_stats_energy_get(naa_stats_energy_t *totals, naa_stats_energy_function_t *functions,
                                 size_t max_functions);

/* What a handle chose (naa_handle_info(3)). */
typedef struct naa_handle_info {
  char naa[64];       /* "host:port" of the NAA it is connected to */
  char transport[32]; /* as connected: "verbs", "ofi+tcp", "auto: ofi+shm", ... */
  uint32_t function_code;
  uint32_t regions;   /* parameter regions (an in-place buffer counts once) */
  int64_t pacing_us;  /* guard before each final write in force (0: none, a libnaa server) */
  int64_t timeout_ms; /* NAA_TIMEOUT in force */
  char progress[24];  /* NAA_PROGRESS in force */
} naa_handle_info_t;
/* Fill *info for a live handle. */
NAA_API int naa_handle_info(const naa_handle *handle, naa_handle_info_t *info);

/* The profiling interface (pnaa(3)), as MPI's PMPI: every call above also exists as pnaa_NAME,
 * and naa_NAME is a weak alias of it. A tool defines naa_NAME itself (linked into the program or
 * LD_PRELOADed), does its work and calls pnaa_NAME. */
NAA_API int pnaa_create(uint32_t function_code, naa_param_t *inputs, size_t n_inputs,
                        naa_param_t *outputs, size_t n_outputs, naa_handle *handle);
NAA_API int pnaa_create_attr(uint32_t function_code, naa_param_t *inputs, size_t n_inputs,
                             naa_param_t *outputs, size_t n_outputs, const naa_attr_t *attr,
                             naa_handle *handle);
NAA_API int pnaa_invoke(naa_handle *handle);
NAA_API int pnaa_test(naa_handle *handle, bool *flag, naa_status *status);
NAA_API int pnaa_wait(naa_handle *handle, naa_status *status);
NAA_API int pnaa_cancel(naa_handle *handle);
NAA_API int pnaa_waitall(int count, naa_handle handles[], naa_status statuses[]);
NAA_API int pnaa_waitany(int count, naa_handle handles[], int *index, naa_status *status);
NAA_API int pnaa_testany(int count, naa_handle handles[], int *index, bool *flag,
                         naa_status *status);
NAA_API int pnaa_testall(int count, naa_handle handles[], bool *flag, naa_status statuses[]);
NAA_API int pnaa_finalize(naa_handle *handle);
NAA_API const char *pnaa_strerror(int error);
NAA_API const char *pnaa_version(int *major, int *minor, int *patch);
NAA_API const char *pnaa_rc_string(int naa_return_code);
NAA_API int pnaa_last_error(const naa_handle *handle, char *buf, size_t len);
NAA_API int pnaa_set_log_handler(naa_log_handler_t handler, void *arg);
NAA_API int pnaa_stats_get(naa_stats_t *totals, naa_stats_function_t *functions,
                           size_t max_functions);
NAA_API int pnaa_stats_energy_get(naa_stats_energy_t *totals,
                                  naa_stats_energy_function_t *functions, size_t max_functions);
NAA_API int pnaa_handle_info(const naa_handle *handle, naa_handle_info_t *info);

#ifdef __cplusplus
}
#endif

#endif /* NAA_H */
