/* SPDX-License-Identifier: BSD-3-Clause */
/* Prints a port of test_port's (server.h) for the script tests' servers (lib.sh). */
#include <stdio.h>

#include "server.h"

int main(void) {
  const int port = test_port();
  if (port < 0) {
    fprintf(stderr, "free_port: no port below or above the ephemeral range could be bound\n");
    return 1;
  }
  printf("%d\n", port);
  return 0;
}
