/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading a configuration file (naa.conf, an authentication key file, slurm.conf and its
 * plugstack.conf) that must be small and regular: a path to /dev/zero or a FIFO is an error at
 * once, never memory without bound or an open that blocks for ever. Plain C, for libnaa, the
 * naa_spank plugin and naa-server alike. */
#ifndef NAA_SMALL_FILE_H
#define NAA_SMALL_FILE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most a configuration file may hold: 1 MiB. */
#define NAA_SMALL_FILE_LIMIT ((size_t)1 << 20)

/* The contents of the regular file at path, NUL-terminated, in memory from malloc (*length
 * bytes before the NUL, if length is not NULL), when it holds at most limit bytes. NULL
 * otherwise, with the reason in error (at most size bytes): "cannot open PATH: ...", "PATH is
 * not a regular file (a character device)", "PATH holds more than LIMIT bytes", "cannot read
 * PATH: ...". The open never blocks (O_NONBLOCK, so a FIFO cannot hold it). */
char *naa_read_small_file(const char *path, size_t limit, size_t *length, char *error, size_t size);

#ifdef __cplusplus
}
#endif

#endif
