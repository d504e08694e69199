/* SPDX-License-Identifier: BSD-3-Clause */
/* One in-place region through naa-server's add1 kernel, `rounds` times: every byte must grow by
 * `rounds`. Shared by the tests that drive the same round trip through different completion
 * paths (naa_wait, or naa_test alone in thread progress mode). */
#ifndef NAA_TEST_ROUNDTRIP_H
#define NAA_TEST_ROUNDTRIP_H

#include <stddef.h>

#include "naa.h"
#include "server.h"

/* Completes invocation `round` (0-based) of handle h into *st; returns a naa_error_t. */
typedef int (*roundtrip_complete)(naa_handle *h, naa_status *st, int round);

int roundtrip_wait(naa_handle *h, naa_status *st, int round); /* naa_wait every time */

/* Byte i starts as (uint8_t)(i * seed). Fails the running cmocka test on any mismatch. */
void roundtrip_inplace(const test_server *server, size_t size, int rounds, unsigned seed,
                       roundtrip_complete complete);

#endif
