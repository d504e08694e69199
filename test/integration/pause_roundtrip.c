/* SPDX-License-Identifier: BSD-3-Clause */
/* pause_roundtrip PAUSE_MS COUNT SIZE: one handle to the NAA of NAA_SPEC (function code 1,
 * naa-server's add1) with one region of SIZE bytes that is both input and output; COUNT times,
 * it pauses PAUSE_MS, runs one invocation and checks that every byte came back one higher,
 * printing "round trip after the pause: MS ms" for each. Exits 1 on a failed call or a byte
 * that is wrong. The client of shm_sar.sh: the data of an invocation that met a server asleep
 * after the pause, moved both ways. */
#include <stdint.h>
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
  uint8_t *buf = malloc(size);
  if (buf == NULL) return 1;
  for (size_t i = 0; i < size; i++) buf[i] = (uint8_t)(i * 7 + i / 4096);
  naa_param_t region = {buf, size, false};
  naa_handle h;
  int rc = naa_create(1, &region, 1, &region, 1, &h);
  if (rc != NAA_SUCCESS) {
    fprintf(stderr, "naa_create: %s\n", naa_strerror(rc));
    return 1;
  }
  for (int round = 1; round <= count; ++round) {
    const struct timespec pause = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
    const double t0 = now_ms();
    naa_status st;
    rc = naa_invoke(&h);
    if (rc == NAA_SUCCESS) rc = naa_wait(&h, &st);
    if (rc != NAA_SUCCESS) {
      fprintf(stderr, "invocation %d: %s\n", round, naa_strerror(rc));
      return 1;
    }
    printf("round trip after the pause: %.3f ms\n", now_ms() - t0);
    for (size_t i = 0; i < size; i++) {
      const uint8_t want = (uint8_t)(i * 7 + i / 4096 + round);
      if (buf[i] != want) {
        fprintf(stderr, "invocation %d: byte %zu is %u, not %u\n", round, i, buf[i], want);
        return 1;
      }
    }
  }
  naa_finalize(&h);
  free(buf);
  return 0;
}
