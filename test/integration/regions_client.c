/* SPDX-License-Identifier: BSD-3-Clause */
/* regions_client N SIZE: one handle to the NAA of NAA_SPEC (function code 1, which adds 1 to
 * every byte) with N in-place regions of SIZE bytes, invoked twice; exits 0 when every byte
 * came back 2 higher, 1 with the cause on stderr otherwise. For the scripts that need a
 * handle of a given shape (mrsp_in_connect.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "naa.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: regions_client N SIZE\n");
    return 2;
  }
  const size_t n = strtoul(argv[1], NULL, 10), size = strtoul(argv[2], NULL, 10);
  naa_param_t *params = calloc(n, sizeof *params);
  uint8_t *bufs = malloc(n * size);
  if (n == 0 || size == 0 || params == NULL || bufs == NULL) return 2;
  for (size_t i = 0; i < n * size; i++) bufs[i] = (uint8_t)(i * 7);
  for (size_t k = 0; k < n; k++) params[k] = (naa_param_t){bufs + k * size, size, false};
  int status = 1;
  naa_handle h = NAA_HANDLE_NULL;
  char cause[512];
  int rc = naa_create(1, params, n, params, n, &h);
  if (rc != NAA_SUCCESS) {
    naa_last_error(NULL, cause, sizeof cause);
    fprintf(stderr, "regions_client: naa_create: %s: %s\n", naa_strerror(rc), cause);
    goto out;
  }
  for (int round = 0; round < 2; round++) {
    naa_status st;
    if ((rc = naa_invoke(&h)) != NAA_SUCCESS || (rc = naa_wait(&h, &st)) != NAA_SUCCESS) {
      naa_last_error(&h, cause, sizeof cause);
      fprintf(stderr, "regions_client: round %d: %s: %s\n", round, naa_strerror(rc), cause);
      goto out;
    }
  }
  for (size_t i = 0; i < n * size; i++)
    if (bufs[i] != (uint8_t)(i * 7 + 2)) {
      fprintf(stderr, "regions_client: byte %zu of region %zu is %u, not %u\n", i % size, i / size,
              bufs[i], (uint8_t)(i * 7 + 2));
      goto out;
    }
  printf("regions_client: %zu regions of %zu bytes: correct\n", n, size);
  status = 0;
out:
  naa_finalize(&h);
  free(params);
  free(bufs);
  return status;
}
