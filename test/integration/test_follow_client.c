/* SPDX-License-Identifier: BSD-3-Clause */
/* naa-server --wait adaptive (the default), while the node is oversubscribed, puts a connection's
 * thread to sleep on the CPU where its same-host client sleeps (tools/naa-server/client_cpu.hpp):
 * over ofi+shm the client's endpoint publishes that CPU in its bell's page. Here the node is
 * oversubscribed by the environment (more ranks on the node than CPUs: OMPI_COMM_WORLD_LOCAL_SIZE,
 * as in server_adaptive_wait.sh), never by load, and the client's thread is pinned to the last
 * CPU; the kernel (nap_fill) naps long enough that the client sleeps on its bell. Then:
 * - the thread serving the client is allowed that CPU alone;
 * - a kernel worker forked by that thread (after one was killed for overrunning --kernel-timeout,
 *   for the next invocation) runs on naa-server's CPUs, not on the client's alone;
 * - once the client has gone, the parked thread is back on naa-server's CPUs.
 * The test waits for the server's debug lines and the thread names, never for a time. Skipped
 * with one CPU online, without the test kernel plugin or without ofi+shm. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "naa.h"
#include "nap_fill.h"
#include "server.h"

enum { SIZE = 64, NAP_MS = 200, OVERRUN_MS = 3000 };

static test_server server;

/* Cpus_allowed_list of /proc/`pid`[/task/`tid`]/status ("0-1", "1"); "" when it is gone. */
static void allowed_cpus(long pid, long tid, char *list, size_t size) {
  char path[96], line[256], format[32];
  if (tid > 0)
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/status", pid, tid);
  else
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
  snprintf(format, sizeof format, "Cpus_allowed_list: %%%zus", size - 1);
  list[0] = '\0';
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, format, list) == 1) break;
  fclose(f);
}

/* The first of the server's threads named `name`, 0 when none is. */
static long server_thread(const char *name) {
  char path[320], comm[32];
  snprintf(path, sizeof path, "/proc/%ld/task", (long)server.pid);
  DIR *d = opendir(path);
  assert_non_null(d);
  long found = 0;
  for (struct dirent *e; found == 0 && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/%ld/task/%s/comm", (long)server.pid, e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue;
    if (fgets(comm, sizeof comm, f) == NULL) comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    if (strcmp(comm, name) == 0) found = atol(e->d_name);
  }
  closedir(d);
  return found;
}

/* The server's living child process (its kernel worker), 0 when none. */
static long server_child(void) {
  char path[320], text[512];
  DIR *proc = opendir("/proc");
  assert_non_null(proc);
  long found = 0;
  for (struct dirent *e; found == 0 && (e = readdir(proc)) != NULL;) {
    const long pid = atol(e->d_name);
    if (pid <= 0) continue;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue;
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *after_name = strrchr(text, ')');
    char state = 0;
    long ppid = 0;
    if (after_name != NULL && sscanf(after_name + 2, "%c %ld", &state, &ppid) == 2 &&
        ppid == (long)server.pid && state != 'Z' && state != 'X')
      found = pid;
  }
  closedir(proc);
  return found;
}

/* One invocation of nap_fill, napping `ms`; naa_wait's result. */
static int invoke_nap(naa_handle *h, uint8_t *in, uint32_t ms, naa_status *st) {
  nap_request(in, ms, 0x5a);
  assert_int_equal(naa_invoke(h), NAA_SUCCESS);
  return naa_wait(h, st);
}

static void test_connection_sleeps_on_the_client_cpu(void **state) {
  (void)state;
  const char *plugin = plugin_or_skip();
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof mine, &mine) != 0 || CPU_COUNT(&mine) < 2) {
    fprintf(stderr,
            "fewer than 2 CPUs to run on: no other CPU to follow the client to; "
            "test skipped\n");
    skip();
  }
  int cpu = 0;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &mine)) cpu = c;

  unsetenv("SLURM_NTASKS_PER_NODE");
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "100000", 1);
  setenv("NAA_SERVER_TEST_KEEP_MS", "60000", 1);
  setenv("NAA_TRANSPORT", "ofi+shm", 1);
  const char *extra[] = {"--kernel", plugin, "--kernel-timeout", "1", NULL};
  assert_int_equal(test_server_start_logged(&server, extra), 0);
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  unsetenv("NAA_SERVER_TEST_KEEP_MS");
  /* The server runs on all of ours; the client on the last alone. */
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) {
    test_server_stop(&server);
    fprintf(stderr, "cannot pin this thread to CPU %d: test skipped\n", cpu);
    skip();
  }
  char server_cpus[64];
  allowed_cpus(server.pid, 0, server_cpus, sizeof server_cpus);
  fprintf(stderr, "naa-server runs on CPUs %s; the client on CPU %d\n", server_cpus, cpu);

  static uint8_t in[SIZE], out[SIZE];
  naa_param_t pin = {in, SIZE, false}, pout = {out, SIZE, false};
  naa_attr_t attr = NAA_ATTR_INIT;
  char naa[96];
  snprintf(naa, sizeof naa, "%s:%d", test_host(), server.port);
  attr.naa = naa;
  attr.progress = "block"; /* it sleeps on its bell at once */
  attr.timeout_ms = (int64_t)(30000 * test_time_scale());
  naa_handle h = NAA_HANDLE_NULL;
  const int rc = naa_create_attr(FN_NAP_FILL, &pin, 1, &pout, 1, &attr, &h);
  if (rc == NAA_ERR_UNSUPPORTED) {
    test_server_stop(&server);
    fprintf(stderr, "no ofi+shm in this build: test skipped\n");
    skip();
  }
  assert_int_equal(rc, NAA_SUCCESS);
  naa_status st;
  assert_int_equal(invoke_nap(&h, in, NAP_MS, &st), NAA_SUCCESS);
  assert_true(all_bytes(out, SIZE, 0x5a));

  /* After its reply the connection sleeps until the next invocation: on the client's CPU. */
  char want[32], line[512], list[64];
  snprintf(want, sizeof want, "sleeps on CPU %d,", cpu);
  assert_int_equal(test_server_log_wait(&server, want, 1, 20, line, sizeof line), 1);
  const long serving = server_thread("naa-client");
  assert_true(serving > 0);
  allowed_cpus(server.pid, serving, list, sizeof list);
  snprintf(want, sizeof want, "%d", cpu);
  fprintf(stderr, "the thread serving the client may run on CPUs %s\n", list);
  assert_string_equal(list, want);

  /* A kernel that overruns: its worker is killed, and the next invocation's is forked by that
   * thread. */
  assert_int_not_equal(invoke_nap(&h, in, OVERRUN_MS, &st), NAA_SUCCESS);
  assert_int_equal(st.naa_return_code, NAA_RC_KERNEL_TIMEOUT);
  assert_int_equal(invoke_nap(&h, in, NAP_MS, &st), NAA_SUCCESS);
  const long worker = server_child();
  assert_true(worker > 0);
  allowed_cpus(worker, 0, list, sizeof list);
  fprintf(stderr, "its kernel worker, forked after the overrun, may run on CPUs %s\n", list);
  assert_string_equal(list, server_cpus);

  /* Gone: the thread parks on naa-server's CPUs. */
  assert_int_equal(naa_finalize(&h), NAA_SUCCESS);
  assert_int_equal(test_server_log_wait(&server, "back on naa-server's CPUs", 1, 20, NULL, 0), 1);
  long parked = 0;
  for (int i = 0; parked == 0 && i < (int)(4000 * test_time_scale()); i++) {
    parked = server_thread("naa-parked");
    if (parked == 0) sleep_ms(5);
  }
  assert_true(parked > 0);
  allowed_cpus(server.pid, parked, list, sizeof list);
  fprintf(stderr, "parked, the thread may run on CPUs %s\n", list);
  assert_string_equal(list, server_cpus);
  assert_int_equal(test_server_stop(&server), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_connection_sleeps_on_the_client_cpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
