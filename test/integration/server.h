/* SPDX-License-Identifier: BSD-3-Clause */
/* A naa-server child process for integration tests: started on a free loopback port, stopped
 * with SIGTERM (SIGKILL if it does not stop). The binary is $NAA_SERVER (set by make check). */
#ifndef NAA_TEST_SERVER_H
#define NAA_TEST_SERVER_H

#include <stdio.h>
#include <sys/types.h>

typedef struct test_server {
  pid_t pid;
  int port;
  char dir[64];
  char log[96]; /* its standard error, for test_server_start_logged; "" otherwise */
} test_server;

/* The address the server binds and clients connect to: $NAA_TEST_HOST, or 127.0.0.1. Over
 * verbs it must be an address with an RDMA device (rdma_cm cannot use the loopback). */
const char *test_host(void);

/* extra: NULL-terminated additional naa-server arguments, or NULL. 0 on success. */
int test_server_start(test_server *s, const char *const *extra);
/* The same for another peer that takes naa-server's --address, --port and --ready-file: the
 * binary named by the environment variable `binary_variable` (e.g. NAA_CONFORMANCE_NAA). */
int test_peer_start(test_server *s, const char *binary_variable, const char *const *extra);
/* test_server_start with the server's standard error in a file and NAA_LOG_LEVEL=debug for it
 * alone: a test waits for a line that the mechanism it proves writes (test_server_log_wait)
 * instead of waiting a time for it. test_server_stop copies the file to our standard error. */
int test_server_start_logged(test_server *s, const char *const *extra);
/* Waits up to `seconds` (times NAA_TEST_TIME_SCALE) until `count` lines of a logged server's
 * log contain `text`; copies the count-th into line[size] (when line is not NULL). Returns how
 * many such lines there were at the end: `count` or more unless the wait ran out. */
int test_server_log_wait(const test_server *s, const char *text, int count, double seconds,
                         char *line, size_t size);
/* For a cmocka group setup shared by tests that need a healthy NAA: NAA_TIMEOUT of 30 s times
 * NAA_TEST_TIME_SCALE, or the environment's where that is longer (the verbs suite's 60 s under
 * TCG), then test_server_start(s, NULL). 0 on success. */
int test_server_start_shared(test_server *s);
/* Sets that NAA_TIMEOUT: a test that changed it for a while sets it back with this. The
 * environment's is the one at the first call, which must come before any setenv of it. */
void test_timeout_default(void);
/* Returns the server's exit status (0 for a clean shutdown), -1 if it had to be killed. */
int test_server_stop(test_server *s);
void test_server_kill(test_server *s); /* SIGKILL: the NAA dies without a word */

/* Sets NAA_SPEC to "HOST:PORT:FNCODE:N_INPUTS". */
void test_server_use(const test_server *s, unsigned fncode, unsigned n_inputs);

/* How much slower than a plain build this one runs: $NAA_TEST_TIME_SCALE (scripts/sanitize.sh
 * exports 3 under ASan, 5 under TSan), at least 1. Tests stretch the deadlines they set and
 * the latencies they accept by it, which a loaded machine under a sanitizer needs. */
double test_time_scale(void);

/* This program (/proc/self/exe) run again with `argv` (argv[0] first, NULL last) in a child
 * process whose standard input and output are piped to the caller: *to_child is its input's
 * write end, *from_child its output's read end. The child's pid, or -1 (nothing left open). */
pid_t test_spawn_self(char *const argv[], int *to_child, FILE **from_child);

/* The calling thread's id (gettid), and the system call thread `tid` of this process is blocked
 * in: its number (SYS_ppoll, ...), -1 while it runs, -2 where /proc does not tell. A test
 * that must act while another thread is inside a libnaa call waits for it to block there. */
pid_t test_thread_id(void);
long test_thread_syscall(pid_t tid);
/* The same, with the call's first three arguments in args (while it is blocked). */
long test_thread_syscall_args(pid_t tid, unsigned long args[3]);

/* A TCP port for a test's server, or one that no NAA serves, on test_host(). The ports come
 * from a range below the kernel's ephemeral ports (ip_local_port_range), which no bind to port
 * 0 and no connection's source port takes, and every test process of the machine takes them in
 * turn (a counter in a locked file under TMPDIR): a port that a test's stopped server freed is
 * not handed to another test's server while a reconnect still knocks at it, as the kernel's
 * port 0 could. A port that cannot be bound now (another program's) is skipped. -1 where no
 * such range exists or no port of it could be bound. Nobody listens on the port returned. */
int test_port(void);

#endif
