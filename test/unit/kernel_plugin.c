/* SPDX-License-Identifier: BSD-3-Clause */
/* Test plugin for naa-server's kernel loading and kernel isolation. xor_ff inverts the
 * outputs, a change no built-in kernel makes, so a test can tell that it ran; crash and spin
 * misbehave the two ways a kernel can take a server down (spin reports that it started);
 * trample and overrun reach for memory that is not theirs; nap_fill is slow and writes late;
 * gate_fill writes when the test lets it; fork_and_return leaves processes; joule spends
 * exactly 1 J of a test powercap tree. */
#define _DEFAULT_SOURCE /* nanosleep, usleep */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "naa_kernel.h"

static uint8_t xor_ff(const naa_kernel_region *regions, size_t n_regions, uint32_t user_data) {
  (void)user_data;
  for (size_t r = 0; r < n_regions; r++) {
    uint8_t *bytes = regions[r].addr;
    if (regions[r].flags & NAA_REGION_OUTPUT)
      for (size_t i = 0; i < regions[r].size; i++) bytes[i] ^= 0xff;
  }
  return 0;
}

static uint8_t crash(const naa_kernel_region *regions, size_t n_regions, uint32_t user_data) {
  (void)regions, (void)n_regions, (void)user_data;
  raise(SIGSEGV); /* what a wild pointer does, without tripping a sanitizer first */
  return 0;
}

/* Tells a test that the kernel runs, so that it need not sleep to be sure: one byte to the
 * FIFO that NAA_TEST_KERNEL_STARTED names, whose reader the test holds open. A path, not an
 * inherited descriptor: naa-server's kernel workers close every descriptor but their socket. */
static void report_started(void) {
  const char *fifo = getenv("NAA_TEST_KERNEL_STARTED");
  if (fifo == NULL) return;
  int fd = open(fifo, O_WRONLY | O_NONBLOCK);
  if (fd < 0) return;
  if (write(fd, "s", 1) != 1) { /* the test then times out waiting, and says so */
  }
  close(fd);
}

static uint8_t spin(const naa_kernel_region *regions, size_t n_regions, uint32_t user_data) {
  (void)regions, (void)n_regions, (void)user_data;
  report_started();
  for (volatile int forever = 1; forever;) {
  }
  return 0;
}

/* A hostile kernel: writes 0xee over every other client's region that its worker
 * can see (memfd mappings named naa-region that are not its own) and returns how many it
 * found, at most 0x7d. An isolated worker must see none. */
static uint8_t trample(const naa_kernel_region *regions, size_t n_regions, uint32_t user_data) {
  (void)user_data;
  FILE *maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return 0x7d;
  char line[512];
  unsigned found = 0;
  while (fgets(line, sizeof line, maps) != NULL) {
    unsigned long start, end;
    char perms[8];
    if (strstr(line, "naa-region") == NULL || sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3)
      continue;
    int own = 0;
    for (size_t r = 0; r < n_regions; r++)
      own |= (unsigned long)(uintptr_t)regions[r].addr == start;
    if (own || perms[1] != 'w') continue;
    memset((void *)(uintptr_t)start, 0xee, end - start);
    found++;
  }
  fclose(maps);
  return (uint8_t)(found < 0x7d ? found : 0x7d);
}

/* Writes 16 KiB past the end of its first region, as an off-by-a-lot kernel would. */
static uint8_t overrun(const naa_kernel_region *regions, size_t n_regions, uint32_t user_data) {
  (void)user_data;
  if (n_regions == 0) return 0x7d;
  volatile uint8_t *past = (uint8_t *)regions[0].addr + regions[0].size;
  for (size_t i = 0; i < 16384; i++) past[i] = 0xee;
  return 0;
}

/* A slow kernel that writes late: sleeps as many milliseconds as the first 4 bytes of region 0
 * say (little-endian), then fills every output region with byte 4 of region 0. Tests of
 * naa_wait's timeout and of naa_cancel tell from the byte whether (and which) result came. */
static uint8_t nap_fill(const naa_kernel_region *regions, size_t n_regions, uint32_t user_data) {
  (void)user_data;
  if (n_regions == 0 || regions[0].size < 5) return 0x7d;
  const uint8_t *in = regions[0].addr;
  const uint32_t ms =
      (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 | (uint32_t)in[3] << 24;
  const uint8_t fill = in[4];
  struct timespec nap = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&nap, &nap) != 0) {
  }
  for (size_t r = 0; r < n_regions; r++)
    if (regions[r].flags & NAA_REGION_OUTPUT) memset(regions[r].addr, fill, regions[r].size);
  return 0;
}

/* nap_fill held by the test instead of a nap: reports that it started, then reads one byte from
 * the FIFO that NAA_TEST_KERNEL_GATE names (the test holds it open for writing and writes a
 * byte to let one invocation on, or closes it), then fills every output region with byte 4 of
 * region 0. */
static uint8_t gate_fill(const naa_kernel_region *regions, size_t n_regions, uint32_t user_data) {
  (void)user_data;
  const char *gate = getenv("NAA_TEST_KERNEL_GATE");
  if (n_regions == 0 || regions[0].size < 5 || gate == NULL) return 0x7d;
  report_started();
  int fd = open(gate, O_RDONLY);
  if (fd < 0) return 0x7d;
  char byte;
  while (read(fd, &byte, 1) < 0) {
  }
  close(fd);
  const uint8_t fill = ((const uint8_t *)regions[0].addr)[4];
  for (size_t r = 0; r < n_regions; r++)
    if (regions[r].flags & NAA_REGION_OUTPUT) memset(regions[r].addr, fill, regions[r].size);
  return 0;
}

static void spin_for_ever(void) {
  for (volatile int forever = 1; forever;) {
  }
}

/* A kernel that leaves processes behind and returns: a busy child, and a busy
 * grandchild in a session of its own whose parent exits (the orphan a double fork makes).
 * Their pids go to the first region's first 8 bytes, for the test to look for them. */
static uint8_t fork_and_return(const naa_kernel_region *regions, size_t n_regions,
                               uint32_t user_data) {
  (void)user_data;
  if (n_regions == 0 || regions[0].size < 8) return 0x7d;
  volatile int32_t *pids = (volatile int32_t *)regions[0].addr; /* shared with the children */
  pids[0] = pids[1] = 0;
  pid_t child = fork();
  if (child == 0) spin_for_ever();
  pid_t middle = fork();
  if (middle == 0) {
    setsid();
    if (fork() == 0) {
      pids[1] = (int32_t)getpid();
      spin_for_ever();
    }
    _exit(0);
  }
  if (child < 0 || middle < 0) return 0x7d;
  waitpid(middle, NULL, 0);
  for (int i = 0; i < 10000 && pids[1] == 0; i++) usleep(1000);
  pids[0] = (int32_t)child;
  return 0;
}

/* A node that spends exactly 1 J per kernel run, for the energy tests: adds 1000000 to the
 * package counter of the powercap tree NAA_POWERCAP_ROOT names (a copy of /sys/class/powercap's
 * layout that the test made), which naa-server reads before and after each run. 0x7d where
 * there is no such tree. Clients are served one at a time by these tests: no lock. */
static uint8_t joule(const naa_kernel_region *regions, size_t n_regions, uint32_t user_data) {
  (void)regions, (void)n_regions, (void)user_data;
  const char *root = getenv("NAA_POWERCAP_ROOT");
  char path[512];
  unsigned long long uj = 0;
  if (root == NULL ||
      snprintf(path, sizeof path, "%s/intel-rapl:0/energy_uj", root) >= (int)sizeof path)
    return 0x7d;
  FILE *f = fopen(path, "r+");
  if (f == NULL) return 0x7d;
  const int ok = fscanf(f, "%llu", &uj) == 1 && fseek(f, 0, SEEK_SET) == 0 &&
                 fprintf(f, "%llu\n", uj + 1000000) > 0;
  return fclose(f) == 0 && ok ? 0 : 0x7d;
}

static const naa_kernel kernels[] = {{100, "xor_ff", xor_ff},
                                     {101, "crash", crash},
                                     {102, "spin", spin},
                                     {103, "trample", trample},
                                     {104, "overrun", overrun},
                                     {105, "nap_fill", nap_fill},
                                     {106, "fork_and_return", fork_and_return},
                                     {107, "joule", joule},
                                     {108, "gate_fill", gate_fill}};

const naa_kernel *naa_kernel_table(unsigned *abi_version, size_t *count) {
  *abi_version = NAA_KERNEL_ABI_VERSION;
  *count = sizeof kernels / sizeof kernels[0];
  return kernels;
}
