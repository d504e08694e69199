/* SPDX-License-Identifier: BSD-3-Clause */
#include "rm/naa_conf.h"

#include "config/number.h"
#include "config/small_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char kBlank[] = " \t\r\v\f";

static int fail(char *error, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *error, size_t size, const char *fmt, ...) {
  if (error != NULL && size > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error, size, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static int parse_number(const char *text, size_t len, unsigned long min, unsigned long max,
                        unsigned long *value) {
  uint64_t v = 0;
  if (naa_parse_number(text, len, min, max, &v) != 0) return -1;
  *value = (unsigned long)v;
  return 0;
}

/* Parses one line (without its newline, comment already cut) into naa. Returns 0, 1 for a blank
 * line, or -1 with error set. */
static int parse_line(char *line, const char *where, naa_conf_naa *naa, char *error, size_t size) {
  char *save = NULL;
  char *host = strtok_r(line, kBlank, &save);
  if (host == NULL) return 1;
  char *port = strtok_r(NULL, kBlank, &save);
  if (port == NULL)
    return fail(error, size, "%s: \"%s\" lacks a port and function codes", where, host);

  size_t host_len = strlen(host);
  if (host[0] == '[') { /* brackets as in NAA_SPEC are accepted, not needed */
    if (host_len < 3 || host[host_len - 1] != ']')
      return fail(error, size, "%s: host \"%s\" lacks the closing ']'", where, host);
    host[host_len - 1] = '\0';
    host++;
  }
  if (strpbrk(host, "[],") != NULL)
    return fail(error, size, "%s: host \"%s\" contains a bracket or a comma", where, host);

  unsigned long value;
  if (parse_number(port, strlen(port), 1, 65535, &value) != 0)
    return fail(error, size, "%s: port \"%s\" is not a number 1..65535", where, port);
  naa->port = (uint16_t)value;
  naa->n_kernels = 0;

  for (char *word; (word = strtok_r(NULL, kBlank, &save)) != NULL;) {
    const char *colon = strchr(word, ':');
    if (colon == NULL)
      return fail(error, size, "%s: \"%s\" is not <fncode>:<n_inputs>", where, word);
    unsigned long code, inputs;
    if (parse_number(word, (size_t)(colon - word), 1, NAA_CONF_MAX_FNCODE, &code) != 0)
      return fail(error, size, "%s: function code in \"%s\" is not a number 1..%d", where, word,
                  NAA_CONF_MAX_FNCODE);
    if (parse_number(colon + 1, strlen(colon + 1), 1, NAA_CONF_MAX_INPUTS, &inputs) != 0)
      return fail(error, size, "%s: number of inputs in \"%s\" is not a number 1..%d", where, word,
                  NAA_CONF_MAX_INPUTS);
    if (naa_conf_kernel_of(naa, (unsigned)code) != NULL)
      return fail(error, size, "%s: function code %lu is listed twice", where, code);
    naa->kernels[naa->n_kernels].function_code = (uint8_t)code;
    naa->kernels[naa->n_kernels].n_inputs = (uint8_t)inputs;
    naa->n_kernels++;
  }
  if (naa->n_kernels == 0)
    return fail(error, size,
                "%s: %s port %s serves no function code (expected <fncode>:<n_inputs> ...)", where,
                host, port);
  naa->host = strdup(host);
  if (naa->host == NULL) return fail(error, size, "%s: out of memory", where);
  return 0;
}

int naa_conf_parse(const char *text, const char *name, naa_conf *conf, char *error, size_t size) {
  naa_conf result = {NULL, 0};
  size_t capacity = 0;
  unsigned line_no = 0;
  const char *at = text;
  while (*at != '\0') {
    const size_t len = strcspn(at, "\n");
    char *line = strndup(at, len);
    at += len + (at[len] == '\n');
    line_no++;
    if (line == NULL) {
      naa_conf_free(&result);
      return fail(error, size, "%s: out of memory", name);
    }
    line[strcspn(line, "#")] = '\0';
    char where[512];
    snprintf(where, sizeof where, "%s line %u", name, line_no);
    if (result.n_naas == capacity) {
      capacity = capacity ? 2 * capacity : 8;
      naa_conf_naa *grown = realloc(result.naas, capacity * sizeof *grown);
      if (grown == NULL) {
        free(line);
        naa_conf_free(&result);
        return fail(error, size, "%s: out of memory", where);
      }
      result.naas = grown;
    }
    naa_conf_naa *naa = &result.naas[result.n_naas];
    naa->line = line_no;
    const int rc = parse_line(line, where, naa, error, size);
    free(line);
    if (rc < 0) {
      naa_conf_free(&result);
      return -1;
    }
    if (rc == 0) result.n_naas++;
  }
  *conf = result;
  return 0;
}

int naa_conf_load(const char *path, naa_conf *conf, char *error, size_t size) {
  size_t used = 0;
  char *text = naa_read_small_file(path, NAA_SMALL_FILE_LIMIT, &used, error, size);
  if (text == NULL) return -1;
  if (strlen(text) != used) {
    free(text);
    return fail(error, size, "%s contains a NUL byte: not a text file", path);
  }
  const int rc = naa_conf_parse(text, path, conf, error, size);
  free(text);
  return rc;
}

void naa_conf_free(naa_conf *conf) {
  for (size_t i = 0; i < conf->n_naas; i++) free(conf->naas[i].host);
  free(conf->naas);
  conf->naas = NULL;
  conf->n_naas = 0;
}

const naa_conf_kernel *naa_conf_kernel_of(const naa_conf_naa *naa, unsigned function_code) {
  for (size_t k = 0; k < naa->n_kernels; k++)
    if (naa->kernels[k].function_code == function_code) return &naa->kernels[k];
  return NULL;
}

size_t naa_conf_count(const naa_conf *conf, unsigned function_code) {
  size_t n = 0;
  for (size_t i = 0; i < conf->n_naas; i++)
    n += naa_conf_kernel_of(&conf->naas[i], function_code) != NULL;
  return n;
}

const naa_conf_naa *naa_conf_pick(const naa_conf *conf, unsigned function_code,
                                  unsigned long rank) {
  const size_t n = naa_conf_count(conf, function_code);
  if (n == 0) return NULL;
  size_t wanted = (size_t)(rank % n);
  for (size_t i = 0; i < conf->n_naas; i++)
    if (naa_conf_kernel_of(&conf->naas[i], function_code) != NULL && wanted-- == 0)
      return &conf->naas[i];
  return NULL; /* not reached */
}

int naa_conf_spec_entry(const naa_conf_naa *naa, unsigned function_code, char *buf, size_t size) {
  const naa_conf_kernel *k = naa_conf_kernel_of(naa, function_code);
  if (k == NULL) return -1;
  const int ipv6 = strchr(naa->host, ':') != NULL;
  const int n = snprintf(buf, size, "%s%s%s:%u:%u:%u", ipv6 ? "[" : "", naa->host, ipv6 ? "]" : "",
                         (unsigned)naa->port, (unsigned)k->function_code, (unsigned)k->n_inputs);
  return n < 0 || (size_t)n >= size ? -1 : n;
}
