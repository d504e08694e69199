/* SPDX-License-Identifier: BSD-3-Clause */
/* A program linked with -lnaa that opens no transport: it names one error code and exits.
 * modules.sh checks that it loads no transport module and none of their libraries. */
#include <stdio.h>

#include "naa.h"

int main(void) {
  puts(naa_strerror(NAA_ERR_UNSUPPORTED));
  return 0;
}
