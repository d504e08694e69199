/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE /* O_CLOEXEC */
#include "config/small_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *fail(char *error, size_t size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static char *fail(char *error, size_t size, const char *format, ...) {
  if (error != NULL && size > 0) {
    va_list args;
    va_start(args, format);
    vsnprintf(error, size, format, args);
    va_end(args);
  }
  return NULL;
}

static const char *kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

char *naa_read_small_file(const char *path, size_t limit, size_t *length, char *error,
                          size_t size) {
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return fail(error, size, "cannot open %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return fail(error, size, "cannot read %s: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return fail(error, size, "%s is not a regular file (%s)", path, kind(st.st_mode));
  }
  if ((unsigned long long)st.st_size > limit) {
    close(fd);
    return fail(error, size, "%s holds more than %zu bytes (%lld)", path, limit,
                (long long)st.st_size);
  }
  /* Read up to limit + 1 bytes: a file that grows meanwhile is caught all the same. */
  char *text = (char *)malloc(limit + 2); /* the cast: the fuzz targets build it as C++ */
  if (text == NULL) {
    close(fd);
    return fail(error, size, "cannot read %s: out of memory", path);
  }
  size_t used = 0;
  while (used <= limit) {
    const ssize_t n = read(fd, text + used, limit + 1 - used);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      const int e = errno;
      free(text);
      close(fd);
      return fail(error, size, "cannot read %s: %s", path, strerror(e));
    }
    if (n == 0) break;
    used += (size_t)n;
  }
  close(fd);
  if (used > limit) {
    free(text);
    return fail(error, size, "%s holds more than %zu bytes", path, limit);
  }
  text[used] = '\0';
  if (length != NULL) *length = used;
  return text;
}
