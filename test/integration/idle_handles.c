/* SPDX-License-Identifier: BSD-3-Clause */
/* Holds N handles to the NAA of NAA_SPEC (function code 3, naa-server's noop), each having
 * run one invocation, idle until stdin closes: the clients of idle_server.sh, which measures
 * what an idle naa-server costs. Writes "ready" to READY_FILE once every handle is idle. After
 * the pause each handle invokes once more, and the slowest of those round trips is printed
 * ("slowest after the pause: MS ms"): a server that napped through the pause answers late.
 * Each line on stdin before it closes runs one invocation per handle. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "naa.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s N READY_FILE\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[1]);
  naa_handle *h = calloc((size_t)n, sizeof *h);
  double *buf = calloc((size_t)n * 2, sizeof *buf);
  if (h == NULL || buf == NULL) return 1;
  for (int i = 0; i < n; ++i) {
    naa_param_t in = {&buf[2 * i], sizeof(double), false};
    naa_param_t out = {&buf[2 * i + 1], sizeof(double), false};
    naa_status st;
    int rc = naa_create(3, &in, 1, &out, 1, &h[i]);
    if (rc == NAA_SUCCESS) rc = naa_invoke(&h[i]);
    if (rc == NAA_SUCCESS) rc = naa_wait(&h[i], &st);
    if (rc != NAA_SUCCESS) {
      fprintf(stderr, "handle %d: %s\n", i, naa_strerror(rc));
      return 1;
    }
  }
  FILE *f = fopen(argv[2], "w");
  if (f == NULL || fputs("ready\n", f) < 0 || fclose(f) != 0) return 1;
  /* Each line read before the end runs one invocation per handle, then says so: a test that
   * changes the NAA between two of them. */
  for (int c; (c = getchar()) != EOF;) {
    if (c != '\n') continue;
    for (int i = 0; i < n; ++i) {
      naa_status st;
      int rc = naa_invoke(&h[i]);
      if (rc == NAA_SUCCESS) rc = naa_wait(&h[i], &st);
      if (rc != NAA_SUCCESS) {
        fprintf(stderr, "handle %d on request: %s\n", i, naa_strerror(rc));
        return 1;
      }
    }
    fprintf(stderr, "invoked on request\n");
  }
  double slowest = 0;
  for (int i = 0; i < n; ++i) {
    struct timespec t0, t1;
    naa_status st;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = naa_invoke(&h[i]);
    if (rc == NAA_SUCCESS) rc = naa_wait(&h[i], &st);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc != NAA_SUCCESS) {
      char why[512];
      naa_last_error(&h[i], why, sizeof why);
      fprintf(stderr, "handle %d after the pause: %s (%s)\n", i, naa_strerror(rc), why);
      return 1;
    }
    const double ms =
        (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (ms > slowest) slowest = ms;
  }
  printf("slowest after the pause: %.3f ms\n", slowest);
  for (int i = 0; i < n; ++i) naa_finalize(&h[i]);
  free(h);
  free(buf);
  return 0;
}
