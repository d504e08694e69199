/* SPDX-License-Identifier: BSD-3-Clause */
/* reference_loop NAA [N]: N (default 1000) back-to-back invocations of function code 3 (the
 * NAAICE reference NAA's empty kernel) on one 4 KiB in-place region against NAA (host:port),
 * as test/rdma/reference_naa.sh runs it against naaice_server: prints how many completed, where
 * one stranded (naa_last_error), the invocation times and the pacing guard at the start and end. */
#define _POSIX_C_SOURCE 200809L
#include <naa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *naa = argc > 1 ? argv[1] : "192.0.2.2:12345";
  int n = argc > 2 ? atoi(argv[2]) : 1000;
  static unsigned char buf[4096];
  memset(buf, 7, sizeof buf);
  naa_param_t in[1] = {{buf, sizeof buf, false}};
  naa_param_t out[1] = {{buf, sizeof buf, false}};
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = naa;
  naa_handle h;
  double t0 = now();
  int rc = naa_create_attr(3, in, 1, out, 1, &attr, &h);
  if (rc) {
    char e[512];
    naa_last_error(NULL, e, sizeof e);
    printf("reference_loop: create failed: %s: %s\n", naa_strerror(rc), e);
    return 1;
  }
  naa_handle_info_t info;
  naa_handle_info(&h, &info);
  printf("reference_loop: connected to %s over %s, pacing %lld us, create %.3f s\n", info.naa,
         info.transport, (long long)info.pacing_us, now() - t0);
  int done = 0;
  static double rtt[100000];
  double t1 = now();
  for (int i = 1; i <= n; i++) {
    naa_status st;
    double ti = now();
    rc = naa_invoke(&h);
    if (!rc) rc = naa_wait(&h, &st);
    if (i <= 100000) rtt[i - 1] = now() - ti;
    if (rc) {
      char e[512];
      naa_last_error(&h, e, sizeof e);
      printf("reference_loop: invocation %d failed after %.3f s: %s: %s\n", i, now() - t1,
             naa_strerror(rc), e);
      break;
    }
    done++;
  }
  double mn = 1e9, sum = 0;
  for (int i = 0; i < done; i++) {
    if (rtt[i] < mn) mn = rtt[i];
    sum += rtt[i];
  }
  if (done > 0)
    printf(
        "reference_loop: invocation time (invoke+wait): first %.0f us, fastest %.0f us, mean %.0f "
        "us; first 8:",
        rtt[0] * 1e6, mn * 1e6, sum / done * 1e6);
  for (int i = 0; i < 8 && i < done; i++) printf(" %.0f", rtt[i] * 1e6);
  printf("\n");
  naa_handle_info(&h, &info);
  printf("reference_loop: completed %d of %d in %.3f s, pacing %lld us at the end\n", done, n,
         now() - t1, (long long)info.pacing_us);
  if (done < n) naa_cancel(&h);
  naa_finalize(&h);
  return done == n ? 0 : 1;
}
