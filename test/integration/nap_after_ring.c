// SPDX-License-Identifier: BSD-3-Clause
// LD_PRELOADed into a libnaa client by mrsp_in_connect.sh: after the client rings a shm
// listener's doorbell (a datagram to an abstract Unix socket named "....doorbell", sent right
// after its connection request), the client naps NAP_AFTER_RING_US (default 2000) before it
// goes on, so that it reads nothing for that long. naa-server's listening thread then cannot
// send its accept within its 100 us (shm's first send to a new peer waits for the peer to
// read), and the thread that serves the client sends it: the late accept, made to happen.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t len) {
  static ssize_t (*real)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
  if (real == NULL) real = (ssize_t(*)(int, const void *, size_t, int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "sendto");
  const ssize_t rc = real(fd, buf, n, flags, to, len);
  if (is_doorbell(to, len)) {
    const char *us = getenv("NAP_AFTER_RING_US");
    usleep(us != NULL ? (useconds_t)atoi(us) : 2000);
  }
  return rc;
}
