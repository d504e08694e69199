/* SPDX-License-Identifier: BSD-3-Clause */
/* Test plugin for naa-server's kernel loading and kernel isolation. xor_ff inverts the
 * outputs, a change no built-in kernel makes, so a test can tell that it ran; crash and spin
 * misbehave the two ways a kernel can take a server down; spin reports that it started. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "naa_kernel.h"

static uint8_t xor_ff(const naa_kernel_region *regions, size_t n_regions, uint32_t user_data)
{
  (void)user_data;
  for (size_t r = 0; r < n_regions; r++) {
    uint8_t *bytes = regions[r].addr;
    if (regions[r].flags & NAA_REGION_OUTPUT)
      for (size_t i = 0; i < regions[r].size; i++) bytes[i] ^= 0xff;
  }
  return 0;
}

static uint8_t crash(const naa_kernel_region *regions, size_t n_regions, uint32_t user_data)
{
  (void)regions, (void)n_regions, (void)user_data;
  raise(SIGSEGV); /* what a wild pointer does, without tripping a sanitizer first */
  return 0;
}

/* Tells a test that the kernel runs, so that it need not sleep to be sure: one byte to the
 * FIFO that NAA_TEST_KERNEL_STARTED names, whose reader the test holds open. A path, not an
 * inherited descriptor: naa-server's kernel workers close every descriptor but their socket. */
static void report_started(void)
{
  const char *fifo = getenv("NAA_TEST_KERNEL_STARTED");
  if (fifo == NULL) return;
  int fd = open(fifo, O_WRONLY | O_NONBLOCK);
  if (fd < 0) return;
  if (write(fd, "s", 1) != 1) { /* the test then times out waiting, and says so */ }
  close(fd);
}

static uint8_t spin(const naa_kernel_region *regions, size_t n_regions, uint32_t user_data)
{
  (void)regions, (void)n_regions, (void)user_data;
  report_started();
  for (volatile int forever = 1; forever;) {
  }
  return 0;
}

static const naa_kernel kernels[] = {{100, "xor_ff", xor_ff}, {101, "crash", crash}, {102, "spin", spin}};

const naa_kernel *naa_kernel_table(unsigned *abi_version, size_t *count)
{
  *abi_version = NAA_KERNEL_ABI_VERSION;
  *count = sizeof kernels / sizeof kernels[0];
  return kernels;
}
