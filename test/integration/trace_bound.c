/* SPDX-License-Identifier: BSD-3-Clause */
/* trace_bound COUNT: COUNT invocations of naa-server's noop (function code 3, 8 bytes in and
 * out) through NAA_SPEC, then, before naa_finalize and exit, counts the events its NAA_TRACE
 * file already holds (one line each after the head) and prints "events written: N". The
 * client of trace_bound.sh, which compares N with the events the file holds at the end. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "naa.h"

/* The events in this process's trace file so far: its lines less the head's, -1 if unreadable. */
static long events_written(void) {
  const char *dir = getenv("NAA_TRACE");
  char pattern[4096];
  glob_t g;
  if (dir == NULL) return -1;
  snprintf(pattern, sizeof pattern, "%s/naa-trace.*p%d.json", dir, (int)getpid());
  if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc != 1) return -1;
  FILE *f = fopen(g.gl_pathv[0], "r");
  globfree(&g);
  if (f == NULL) return -1;
  long lines = 0;
  for (int c; (c = fgetc(f)) != EOF;) lines += c == '\n';
  fclose(f);
  return lines - 1; /* the head's line; then each event begins a line */
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s COUNT\n", argv[0]);
    return 2;
  }
  const int count = atoi(argv[1]);
  char in_buf[8] = {0}, out_buf[8];
  naa_param_t in = {in_buf, sizeof in_buf, false};
  naa_param_t out = {out_buf, sizeof out_buf, false};
  naa_handle h;
  int rc = naa_create(3, &in, 1, &out, 1, &h);
  if (rc != NAA_SUCCESS) {
    fprintf(stderr, "naa_create: %s\n", naa_strerror(rc));
    return 1;
  }
  for (int i = 0; i < count; ++i) {
    naa_status st;
    rc = naa_invoke(&h);
    if (rc == NAA_SUCCESS) rc = naa_wait(&h, &st);
    if (rc != NAA_SUCCESS) {
      fprintf(stderr, "invocation %d: %s\n", i, naa_strerror(rc));
      return 1;
    }
  }
  printf("events written: %ld\n", events_written());
  fflush(stdout);
  return naa_finalize(&h) == NAA_SUCCESS ? 0 : 1;
}
