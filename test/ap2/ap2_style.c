/* SPDX-License-Identifier: BSD-3-Clause */
/* A host program in the style of the NAAICE reference middleware's AP2 examples, written from
 * its interface (naaice_ap2(3)) and built unchanged against libnaa: it includes nothing but
 * <naaice_ap2.h> (which brings stdio, stdlib, string, stdbool and stdint), allocates its
 * handles itself, returns 0/-1 checks, test-then-wait loops, and reads the NAA's return code
 * from status.naa_error.
 *
 *   ap2_style [INVOCATIONS]   (default 100) invocations of each of three kernels, in handle
 *                             lifetimes of 10 (so NAA_SPEC entries are reused after
 *                             naa_finalize), plus one with an application error code.
 *
 * NAA_SPEC must list naa-server's function codes 10 (vecadd, 2 inputs), 11 (daxpy, 3 inputs)
 * and 1 (add1, 1 input). AP2_BYTES_RECEIVED=zero or =reported: what status.bytes_received must
 * be (libfabric tcp reports no length; verbs report the NAA's final write). Prints
 * "ap2_style: N invocations correct" and exits 0, else names the first mismatch and exits 1. */
#include <naaice_ap2.h>

#define N 1024      /* doubles per vector */
#define LIFETIME 10 /* invocations per handle */

static int expect_reported_bytes;

static int fail(const char *what, struct naa_handle *h) {
  const char *why = "";
  int code = naaice_last_error(h, &why);
  printf("ap2_style: FAIL: %s (libnaa code %d: %s)\n", what, code, why);
  return -1;
}

/* Test-then-wait as the reference examples do; then the finished status once more. */
static int complete(struct naa_handle *h, naa_status *st, uint64_t last_output_bytes) {
  bool flag = false;
  unsigned long polls = 0;
  while (!flag) {
    if (naa_test(h, &flag, st)) return fail("naa_test", h);
    polls++;
  }
  naa_status again;
  memset(&again, 0xff, sizeof again);
  if (naa_wait(h, &again)) return fail("naa_wait after completion", h);
  if (memcmp(&again, st, sizeof again) != 0) {
    printf("ap2_style: FAIL: naa_wait after completion reports another status\n");
    return -1;
  }
  if (st->state != 30) {
    printf("ap2_style: FAIL: status.state %d, expected 30\n", (int)st->state);
    return -1;
  }
  uint64_t want = expect_reported_bytes ? last_output_bytes : 0;
  if (st->bytes_received != want) {
    printf("ap2_style: FAIL: bytes_received %llu, expected %llu\n",
           (unsigned long long)st->bytes_received, (unsigned long long)want);
    return -1;
  }
  (void)polls;
  return 0;
}

/* fncode 10 in place: a += b, b single-send. */
static int vecadd_rounds(int invocations) {
  double *a = malloc(N * sizeof(double)), *b = malloc(N * sizeof(double));
  for (int i = 0; i < N; i++) a[i] = i, b[i] = 0.5 * i;
  int done = 0;
  while (done < invocations) {
    struct naa_handle *h = calloc(1, sizeof(struct naa_handle));
    struct naa_param_t in[] = {{a, N * sizeof(double), false}, {b, N * sizeof(double), true}};
    struct naa_param_t out[] = {{a, N * sizeof(double), false}};
    if (naa_create(10, in, 2, out, 1, h)) return fail("naa_create vecadd", h);
    for (int k = 0; k < LIFETIME && done < invocations; k++, done++) {
      naa_status st;
      if (naa_invoke(h)) return fail("naa_invoke vecadd", h);
      if (complete(h, &st, N * sizeof(double))) return -1;
      if (st.naa_error != NAA_SUCCESS) {
        printf("ap2_style: FAIL: vecadd returned NAA code %d\n", (int)st.naa_error);
        return -1;
      }
    }
    if (naa_finalize(h)) return fail("naa_finalize vecadd", h);
    free(h);
  }
  for (int i = 0; i < N; i++)
    if (a[i] != i + done * 0.5 * i) {
      printf("ap2_style: FAIL: vecadd a[%d] = %g, expected %g\n", i, a[i], i + done * 0.5 * i);
      return -1;
    }
  free(a);
  free(b);
  return 0;
}

/* fncode 11 on a handle on the stack: r = alpha * x + y, alpha and x single-send, y new each
 * time; four regions. */
static int daxpy_rounds(int invocations) {
  double alpha = 3, *x = malloc(N * sizeof(double)), *y = malloc(N * sizeof(double));
  double *r = malloc(N * sizeof(double));
  for (int i = 0; i < N; i++) x[i] = i;
  int done = 0;
  while (done < invocations) {
    struct naa_handle h;
    memset(&h, 0, sizeof h);
    naa_param_t in[3] = {{&alpha, sizeof alpha, true},
                         {x, N * sizeof(double), true},
                         {y, N * sizeof(double), false}};
    naa_param_t out[1] = {{r, N * sizeof(double), false}};
    if (naa_create(11, in, 3, out, 1, &h)) return fail("naa_create daxpy", &h);
    for (int k = 0; k < LIFETIME && done < invocations; k++, done++) {
      naa_status st;
      for (int i = 0; i < N; i++) y[i] = done + i % 7;
      if (naa_invoke(&h)) return fail("naa_invoke daxpy", &h);
      if (complete(&h, &st, N * sizeof(double))) return -1;
      if (st.naa_error != NAA_SUCCESS) {
        printf("ap2_style: FAIL: daxpy returned NAA code %d\n", (int)st.naa_error);
        return -1;
      }
      for (int i = 0; i < N; i++)
        if (r[i] != 3.0 * i + done + i % 7) {
          printf("ap2_style: FAIL: daxpy r[%d] = %g, expected %g\n", i, r[i],
                 3.0 * i + done + i % 7);
          return -1;
        }
    }
    if (naa_finalize(&h)) return fail("naa_finalize daxpy", &h);
  }
  free(x);
  free(y);
  free(r);
  return 0;
}

/* fncode 1 (add1: every byte of every region + 1 on the NAA) with single_send on an output
 * that is no input: the reference makes it an input written on the first invocation only, so
 * the NAA starts from the host's 5s and keeps counting: s = 5 + k after k invocations. */
static int single_send_output_rounds(int invocations) {
  uint8_t c[64], s[64];
  int done = 0;
  while (done < invocations) {
    struct naa_handle *h = calloc(1, sizeof(struct naa_handle));
    memset(c, 1, sizeof c);
    memset(s, 5, sizeof s);
    struct naa_param_t in[] = {{c, sizeof c, false}};
    struct naa_param_t out[] = {{s, sizeof s, true}};
    if (naa_create(1, in, 1, out, 1, h)) return fail("naa_create add1", h);
    for (int k = 1; k <= LIFETIME && done < invocations; k++, done++) {
      naa_status st;
      if (naa_invoke(h)) return fail("naa_invoke add1", h);
      if (naa_wait(h, &st)) return fail("naa_wait add1", h);
      if (st.state != 30 || st.naa_error != NAA_SUCCESS) {
        printf("ap2_style: FAIL: add1 state %d, NAA code %d\n", (int)st.state, (int)st.naa_error);
        return -1;
      }
      for (size_t i = 0; i < sizeof s; i++)
        if (s[i] != 5 + k || c[i] != 1) {
          printf("ap2_style: FAIL: add1 round %d: s[%zu] = %d (expected %d), c[%zu] = %d\n", k, i,
                 s[i], 5 + k, i, c[i]);
          return -1;
        }
    }
    if (naa_finalize(h)) return fail("naa_finalize add1", h);
    free(h);
  }
  return 0;
}

/* vecadd with vectors of different lengths: naa-server's kernel answers 0x11 (bad sizes), an
 * application code that the calls report in status.naa_error, not as their failure. */
static int application_error(void) {
  double a[8], b[4];
  struct naa_handle *h = calloc(1, sizeof(struct naa_handle));
  struct naa_param_t in[] = {{a, sizeof a, false}, {b, sizeof b, false}};
  struct naa_param_t out[] = {{a, sizeof a, false}};
  naa_status st;
  bool flag = false;
  if (naa_create(10, in, 2, out, 1, h)) return fail("naa_create vecadd (bad sizes)", h);
  if (naa_invoke(h)) return fail("naa_invoke vecadd (bad sizes)", h);
  if (naa_wait(h, &st)) return fail("naa_wait vecadd (bad sizes)", h);
  if (naa_test(h, &flag, &st)) return fail("naa_test after completion", h);
  if (!flag || st.state != 30 || st.naa_error != 0x11) {
    printf("ap2_style: FAIL: bad sizes: flag %d, state %d, NAA code 0x%x (expected 0x11)\n", flag,
           (int)st.state, (unsigned)st.naa_error);
    return -1;
  }
  if (naa_finalize(h)) return fail("naa_finalize vecadd (bad sizes)", h);
  free(h);
  return 0;
}

int main(int argc, char *argv[]) {
  int invocations = argc > 1 ? atoi(argv[1]) : 100;
  const char *bytes = getenv("AP2_BYTES_RECEIVED");
  if (invocations < 1 || bytes == NULL || (strcmp(bytes, "zero") && strcmp(bytes, "reported"))) {
    printf("usage: AP2_BYTES_RECEIVED=zero|reported NAA_SPEC=... ap2_style [INVOCATIONS >= 1]\n");
    return 2;
  }
  expect_reported_bytes = strcmp(bytes, "reported") == 0;
  if (MAX_MRS != 32 || SERVER_CONNECTION_PORT != 12345 || sizeof(struct naa_param_t) != 24 ||
      sizeof(struct naa_handle) != 16 || sizeof(naa_status) != 16) {
    printf("ap2_style: FAIL: the header's constants or layouts differ from the reference's\n");
    return 1;
  }
  if (vecadd_rounds(invocations) || daxpy_rounds(invocations) ||
      single_send_output_rounds(invocations) || application_error())
    return 1;
  printf("ap2_style: %d invocations correct\n", 3 * invocations + 1);
  return 0;
}
