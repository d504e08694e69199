/* SPDX-License-Identifier: BSD-3-Clause */
/* The client of test/rdma/host_loss.sh: creates HANDLES handles for function code 10
 * (naa-server's vecadd_f64), which libnaa's resolver spreads over the NAAs that NAA_SPEC lists
 * for that code, then runs ROUNDS rounds (invoke every live handle, then wait for each). In round
 * AT, once every invocation is in flight, it runs the shell command GONE (which takes one NAA's
 * host off the network). A handle whose invoke or wait fails is finalized and left out of later
 * rounds; wrong results are a failure of their own. One line per handle at the end:
 *   handle K: ROUNDS rounds ok
 *   handle K: failed in round R: naa_wait: <naa_strerror> (<code>)
 * Usage: spread_hosts HANDLES ROUNDS AT GONE. Exit 0 unless a result was wrong, a call other than
 * invoke/wait failed, or GONE failed; which handles must fail is the script's to judge. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "naa.h"

#define FN_VECADD_F64 10
#define N_ELEMENTS 4096

struct slot {
  naa_handle h;
  double a[N_ELEMENTS], b[N_ELEMENTS], c[N_ELEMENTS];
  int rounds_ok;
  int failed_round; /* -1 while alive */
  char why[160];
};

static void fail_slot(struct slot *s, int round, const char *call, int rc) {
  s->failed_round = round;
  snprintf(s->why, sizeof s->why, "%s: %s (%d)", call, naa_strerror(rc), rc);
  int frc = naa_finalize(&s->h);
  if (frc != NAA_SUCCESS)
    fprintf(stderr, "spread_hosts: naa_finalize after a failure: %s (%d)\n", naa_strerror(frc),
            frc);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: spread_hosts HANDLES ROUNDS AT GONE\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* a virtio port, not a tty, inside rdma-vm */
  const int n = atoi(argv[1]), rounds = atoi(argv[2]), at = atoi(argv[3]);
  if (n < 1 || rounds < 1 || at < 0 || at >= rounds) {
    fprintf(stderr, "spread_hosts: need HANDLES >= 1 and 0 <= AT < ROUNDS\n");
    return 2;
  }
  struct slot *slots = calloc((size_t)n, sizeof *slots);
  if (slots == NULL) return 1;
  int bad = 0;

  for (int k = 0; k < n; k++) {
    struct slot *s = &slots[k];
    s->failed_round = -1;
    for (int i = 0; i < N_ELEMENTS; i++) s->b[i] = 1000.0 * k + i;
    naa_param_t in[2] = {{s->a, sizeof s->a, false}, {s->b, sizeof s->b, false}};
    naa_param_t out[1] = {{s->c, sizeof s->c, false}};
    int rc = naa_create(FN_VECADD_F64, in, 2, out, 1, &s->h);
    if (rc != NAA_SUCCESS) {
      fprintf(stderr, "spread_hosts: handle %d: naa_create: %s (%d)\n", k, naa_strerror(rc), rc);
      return 1;
    }
  }

  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < n; k++) {
      struct slot *s = &slots[k];
      if (s->failed_round >= 0) continue;
      for (int i = 0; i < N_ELEMENTS; i++) {
        s->a[i] = r + 0.5 * i;
        s->c[i] = -1.0;
      }
      int rc = naa_invoke(&s->h);
      if (rc != NAA_SUCCESS) fail_slot(s, r, "naa_invoke", rc);
    }
    if (r == at) {
      printf("round %d: all invocations in flight; running: %s\n", r, argv[4]);
      int rc = system(argv[4]);
      if (rc != 0) {
        fprintf(stderr, "spread_hosts: '%s' failed (status %d)\n", argv[4], rc);
        bad = 1;
      }
    }
    for (int k = 0; k < n; k++) {
      struct slot *s = &slots[k];
      if (s->failed_round >= 0) continue;
      naa_status st;
      int rc = naa_wait(&s->h, &st);
      if (rc != NAA_SUCCESS) {
        fail_slot(s, r, "naa_wait", rc);
        continue;
      }
      for (int i = 0; i < N_ELEMENTS; i++) {
        if (s->c[i] != s->a[i] + s->b[i]) {
          fprintf(stderr, "spread_hosts: handle %d round %d: c[%d] = %g, expected %g\n", k, r, i,
                  s->c[i], s->a[i] + s->b[i]);
          bad = 1;
          break;
        }
      }
      s->rounds_ok++;
    }
    printf("round %d done\n", r);
  }

  for (int k = 0; k < n; k++) {
    struct slot *s = &slots[k];
    if (s->failed_round >= 0) {
      printf("handle %d: failed in round %d: %s\n", k, s->failed_round, s->why);
      continue;
    }
    printf("handle %d: %d rounds ok\n", k, s->rounds_ok);
    int rc = naa_finalize(&s->h);
    if (rc != NAA_SUCCESS) {
      fprintf(stderr, "spread_hosts: handle %d: naa_finalize: %s (%d)\n", k, naa_strerror(rc), rc);
      bad = 1;
    }
  }
  free(slots);
  return bad;
}
