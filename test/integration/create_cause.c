/* SPDX-License-Identifier: BSD-3-Clause */
/* For documented_messages.sh: naa_create_attr of function code 1 on one in-place buffer of
 * BYTES bytes (default 4096), with attr.naa = NAA and attr.transport = TRANSPORT where given
 * (not ""), and prints naa_last_error's cause of a failure ("ok" otherwise). */
#include <stdio.h>
#include <stdlib.h>

#include "naa.h"

int main(int argc, char **argv) {
  if (argc > 4) {
    fprintf(stderr, "usage: create_cause [NAA [TRANSPORT [BYTES]]]\n");
    return 2;
  }
  const size_t bytes = argc > 3 ? strtoul(argv[3], NULL, 10) : 4096;
  void *buf = calloc(1, bytes);
  if (buf == NULL) return 2;
  naa_param_t p = {buf, bytes, false};
  naa_attr_t attr = NAA_ATTR_INIT;
  if (argc > 1 && argv[1][0] != '\0') attr.naa = argv[1];
  if (argc > 2 && argv[2][0] != '\0') attr.transport = argv[2];
  naa_handle h;
  const int rc = naa_create_attr(1, &p, 1, &p, 1, &attr, &h);
  char cause[1024] = "ok";
  if (rc != NAA_SUCCESS)
    naa_last_error(NULL, cause, sizeof cause);
  else
    naa_finalize(&h);
  printf("%d %s\n", rc, cause);
  free(buf);
  return 0;
}
