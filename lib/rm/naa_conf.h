/* SPDX-License-Identifier: BSD-3-Clause */
/* naa.conf, the site's list of NAAs, read by the Slurm SPANK plugin (C, runs inside srun, sbatch,
 * salloc and slurmstepd) and by libnaa's Slurm resolver: C so that both can compile it in.
 * Format (see naa.conf(5)): one NAA per line,
 *   <host> <port> <fncode>:<n_inputs> [<fncode>:<n_inputs> ...]
 * separated by blanks; '#' starts a comment; blank lines are ignored. */
#ifndef NAA_RM_NAA_CONF_H
#define NAA_RM_NAA_CONF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NAA_CONF_MAX_FNCODE 127
#define NAA_CONF_MAX_INPUTS 31 /* an MRSP request has room for 31 regions */

typedef struct naa_conf_kernel {
  uint8_t function_code;
  uint8_t n_inputs;
} naa_conf_kernel;

typedef struct naa_conf_naa {
  char *host; /* without IPv6 brackets */
  uint16_t port;
  unsigned line; /* in the file, for messages */
  size_t n_kernels;
  naa_conf_kernel kernels[NAA_CONF_MAX_FNCODE];
} naa_conf_naa;

typedef struct naa_conf {
  naa_conf_naa *naas;
  size_t n_naas;
} naa_conf;

/* Parse text (name is used in messages, e.g. the path). Returns 0, or -1 with conf untouched and
 * error set, e.g. "/etc/naa.conf line 3: port "x" is not a number 1..65535". */
int naa_conf_parse(const char *text, const char *name, naa_conf *conf, char *error,
                   size_t error_size);
/* Read and parse a file; a missing or unreadable file is an error naming the path and errno. */
int naa_conf_load(const char *path, naa_conf *conf, char *error, size_t error_size);
void naa_conf_free(naa_conf *conf);

/* The kernel entry for function_code on naa, or NULL. */
const naa_conf_kernel *naa_conf_kernel_of(const naa_conf_naa *naa, unsigned function_code);
/* How many NAAs serve function_code. */
size_t naa_conf_count(const naa_conf *conf, unsigned function_code);
/* Tasks are spread over the NAAs serving a code by rank: the (rank mod count)-th of them in file
 * order. NULL when none serves it. */
const naa_conf_naa *naa_conf_pick(const naa_conf *conf, unsigned function_code, unsigned long rank);
/* Writes naa's NAA_SPEC entry for function_code ("host:port:fncode:n_inputs", IPv6 hosts in
 * brackets). Returns the length, or -1 if naa does not serve the code or buf is too small. */
int naa_conf_spec_entry(const naa_conf_naa *naa, unsigned function_code, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
