/* SPDX-License-Identifier: BSD-3-Clause */
/* The one rule for numbers in libnaa, its tools and the Slurm plugin (C, so that naa_conf.c,
 * which the plugin compiles in, can use it): plain decimal digits, no sign, blank, base prefix
 * or trailing text, within [min, max]. strtoul would take signs, blanks and trailing garbage,
 * and wrap on overflow. */
#ifndef NAA_NUMBER_H
#define NAA_NUMBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The len characters at text as a number in [min, max]: 0 with *value set, -1 otherwise
 * (overflow included; *value untouched). */
int naa_parse_number(const char *text, size_t len, uint64_t min, uint64_t max, uint64_t *value);

#ifdef __cplusplus
}
#endif

#endif
