/* SPDX-License-Identifier: BSD-3-Clause */
/* vecadd: offload c = a + b on 1,000,000 doubles to an NAA, twice.
 *
 * b is single-send: it travels with the first invocation only and the NAA keeps it, so the
 * second invocation sends just the new a. The first invocation is completed with a naa_test
 * loop that does other work meanwhile, the second with naa_wait.
 *
 * Run against a software NAA:
 *   naa-server --port 12345 &
 *   NAA_SPEC=127.0.0.1:12345:10:2 ./vecadd [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "naa.h"

#define FN_VECADD_F64 10 /* naa-server's built-in vecadd_f64 kernel */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int check(const char *what, int rc) {
  if (rc != NAA_SUCCESS) {
    char cause[256];
    naa_last_error(NULL, cause, sizeof cause); /* why: this thread's last failure */
    fprintf(stderr, "vecadd: %s failed: %s (%d): %s\n", what, naa_strerror(rc), rc, cause);
  }
  return rc;
}

/* Number of elements where c != a + b; prints the first few. */
static size_t verify(const double *a, const double *b, const double *c, size_t n, int round) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (c[i] != a[i] + b[i]) {
      if (bad < 5)
        fprintf(stderr, "vecadd: round %d: c[%zu] = %g, expected %g\n", round, i, c[i],
                a[i] + b[i]);
      bad++;
    }
  }
  return bad;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
  if (n == 0) {
    fprintf(stderr, "usage: vecadd [N > 0]\n");
    return 2;
  }
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  if (!a || !b || !c) {
    fprintf(stderr, "vecadd: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    a[i] = (double)i;
    b[i] = 2.0 * (double)i;
    c[i] = -1.0;
  }

  naa_param_t inputs[2] = {{a, n * sizeof *a, false}, {b, n * sizeof *b, true}};
  naa_param_t outputs[1] = {{c, n * sizeof *c, false}};
  naa_handle handle = NAA_HANDLE_NULL;
  naa_status status;
  int failed = 0;

  double t0 = now_ms();
  if (check("naa_create", naa_create(FN_VECADD_F64, inputs, 2, outputs, 1, &handle))) return 1;
  double t_create = now_ms() - t0;

  /* Round 1: poll with naa_test and do other work while the NAA computes. */
  t0 = now_ms();
  if (check("naa_invoke", naa_invoke(&handle))) return 1;
  bool done = false;
  unsigned long polls = 0;
  double local_work = 0;
  while (!done) {
    for (size_t i = 0; i < 1000; i++) local_work += (double)i * 1e-9; /* "other work" */
    if (check("naa_test", naa_test(&handle, &done, &status))) return 1;
    polls++;
  }
  double t_round1 = now_ms() - t0;
  size_t bad1 = verify(a, b, c, n, 1);

  /* Round 2: new a; b stays on the NAA (single-send). Changing the host copy of b shows it. */
  for (size_t i = 0; i < n; i++) {
    a[i] = 0.5 * (double)i;
    c[i] = -1.0;
  }
  double *b_sent = malloc(n * sizeof *b_sent);
  if (!b_sent) return 1;
  for (size_t i = 0; i < n; i++) {
    b_sent[i] = b[i];
    b[i] = -7.0; /* never sent: the NAA must still use the b of round 1 */
  }
  t0 = now_ms();
  if (check("naa_invoke", naa_invoke(&handle))) return 1;
  if (check("naa_wait", naa_wait(&handle, &status))) return 1;
  double t_round2 = now_ms() - t0;
  size_t bad2 = verify(a, b_sent, c, n, 2);

  if (check("naa_finalize", naa_finalize(&handle))) failed = 1;
  if (bad1 || bad2) {
    printf("vecadd: FAILED: %zu wrong elements in round 1, %zu in round 2 (of %zu)\n", bad1, bad2,
           n);
    failed = 1;
  } else {
    printf(
        "vecadd: %zu doubles, 2 invocations: all %zu elements correct "
        "(c[%zu] = %.1f, NAA return code 0x%02x)\n",
        n, 2 * n, n - 1, c[n - 1], status.naa_return_code);
    printf(
        "vecadd: create %.2f ms, round 1 (naa_test, %lu polls) %.2f ms, round 2 (naa_wait) %.2f "
        "ms\n",
        t_create, polls, t_round1, t_round2);
  }
  (void)local_work;
  free(a);
  free(b);
  free(b_sent);
  free(c);
  return failed;
}
