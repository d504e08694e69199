// SPDX-License-Identifier: BSD-3-Clause
// LD_PRELOADed into a libnaa client by mrsp_in_connect.sh: after the client rings a shm
// listener's doorbell (a datagram to an abstract Unix socket named "....doorbell", sent right
// after its connection request), the client is held, reading nothing, until the file
// NAP_AFTER_RING_UNTIL_FILE contains NAP_AFTER_RING_UNTIL_TEXT (the test points them at
// naa-server's log and the line its serving thread writes before it accepts), at most
// NAP_AFTER_RING_LIMIT_MS (default 20000) milliseconds. naa-server's listening thread cannot
// send its accept to a client that reads nothing (shm's first send to a new peer waits for the
// peer to read), gives up after its 100 us, and the thread that serves the client sends it:
// the late accept, forced, whatever the load; the client goes on only once it has begun.
// Without the variables it holds for the limit, and says so.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int is_doorbell(const struct sockaddr *to, socklen_t len) {
  static const char kSuffix[] = ".doorbell";
  const struct sockaddr_un *un = (const struct sockaddr_un *)to;
  const size_t path = offsetof(struct sockaddr_un, sun_path);
  if (to == NULL || len <= path + 1 || un->sun_family != AF_UNIX || un->sun_path[0] != '\0') return 0;
  const size_t name_len = len - path - 1;  // abstract: a leading NUL, no terminating one
  return name_len >= sizeof kSuffix - 1 &&
         memcmp(un->sun_path + 1 + name_len - (sizeof kSuffix - 1), kSuffix, sizeof kSuffix - 1) == 0;
}

// Whether `path` holds `text` within its first 1 MiB.
static int file_holds(const char *path, const char *text) {
  static char buf[1 << 20];
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t len = 0;
  ssize_t n;
  while (len < sizeof buf && (n = read(fd, buf + len, sizeof buf - len)) > 0) len += (size_t)n;
  close(fd);
  return memmem(buf, len, text, strlen(text)) != NULL;
}

static void hold(void) {
  const char *file = getenv("NAP_AFTER_RING_UNTIL_FILE"), *text = getenv("NAP_AFTER_RING_UNTIL_TEXT");
  const char *limit = getenv("NAP_AFTER_RING_LIMIT_MS");
  const long limit_ms = limit != NULL ? atol(limit) : 20000;
  const struct timespec ms = {0, 1000000};
  for (long waited = 0; waited < limit_ms; waited++) {
    if (file != NULL && text != NULL && file_holds(file, text)) return;
    nanosleep(&ms, NULL);
  }
  fprintf(stderr, "nap_after_ring: \"%s\" not in %s within %ld ms: going on\n", text ? text : "(unset)",
          file ? file : "(unset)", limit_ms);
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t len) {
  static ssize_t (*real)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
  if (real == NULL) real = (ssize_t(*)(int, const void *, size_t, int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "sendto");
  const ssize_t rc = real(fd, buf, n, flags, to, len);
  if (is_doorbell(to, len)) hold();
  return rc;
}
