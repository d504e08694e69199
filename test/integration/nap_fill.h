/* SPDX-License-Identifier: BSD-3-Clause */
/* For CMocka tests on the test kernel plugin's nap_fill (test/unit/kernel_plugin.c), a kernel
 * that sleeps and then fills its outputs: include after <cmocka.h>, <stdio.h>, <stdlib.h>,
 * <string.h> and <time.h>. */
#ifndef NAA_TEST_NAP_FILL_H
#define NAA_TEST_NAP_FILL_H

enum { FN_NAP_FILL = 105 };

static inline void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The plugin naa-server's --kernel loads; the test is skipped outside make check. */
static inline const char *plugin_or_skip(void) {
  const char *plugin = getenv("NAA_TEST_KERNEL_PLUGIN");
  if (plugin == NULL) {
    fprintf(stderr, "NAA_TEST_KERNEL_PLUGIN is not set (run through make check): test skipped\n");
    skip();
  }
  return plugin;
}

/* nap_fill's input: sleep `ms`, then fill the outputs with `fill`. */
static inline void nap_request(uint8_t in[8], uint32_t ms, uint8_t fill) {
  memset(in, 0, 8);
  for (int i = 0; i < 4; i++) in[i] = (uint8_t)(ms >> (8 * i));
  in[4] = fill;
}

static inline int all_bytes(const uint8_t *p, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

#endif
