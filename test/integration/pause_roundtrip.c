/* SPDX-License-Identifier: BSD-3-Clause */
/* pause_roundtrip PAUSE_MS COUNT SIZE: one handle to the NAA of NAA_SPEC (function code 3,
 * naa-server's noop) with an input and an output of SIZE bytes; COUNT times, it pauses PAUSE_MS
 * and then runs one invocation, printing "round trip after the pause: MS ms" for each. The
 * client of shm_sar.sh: what a server that went to sleep during the pause costs the next
 * invocation. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "naa.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s PAUSE_MS COUNT SIZE\n", argv[0]);
    return 2;
  }
  const long pause_ms = atol(argv[1]);
  const int count = atoi(argv[2]);
  const size_t size = (size_t)atol(argv[3]);
  char *in_buf = calloc(1, size), *out_buf = calloc(1, size);
  if (in_buf == NULL || out_buf == NULL) return 1;
  naa_param_t in = {in_buf, size, false};
  naa_param_t out = {out_buf, size, false};
  naa_handle h;
  int rc = naa_create(3, &in, 1, &out, 1, &h);
  if (rc != NAA_SUCCESS) {
    fprintf(stderr, "naa_create: %s\n", naa_strerror(rc));
    return 1;
  }
  for (int i = 0; i < count; ++i) {
    const struct timespec pause = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
    const double t0 = now_ms();
    naa_status st;
    rc = naa_invoke(&h);
    if (rc == NAA_SUCCESS) rc = naa_wait(&h, &st);
    if (rc != NAA_SUCCESS) {
      fprintf(stderr, "invocation %d: %s\n", i, naa_strerror(rc));
      return 1;
    }
    printf("round trip after the pause: %.3f ms\n", now_ms() - t0);
  }
  naa_finalize(&h);
  free(in_buf);
  free(out_buf);
  return 0;
}
