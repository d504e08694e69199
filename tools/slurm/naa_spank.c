/* SPDX-License-Identifier: BSD-3-Clause */
/* naa_spank: Slurm SPANK plugin adding --naa=FNCODE[,FNCODE...] to srun, sbatch and salloc.
 *
 * plugstack.conf:  required /usr/lib/libnaa/naa_spank.so conf=/etc/naa.conf
 *
 * At submission (srun, sbatch, salloc) every code must be served by an NAA of naa.conf, else the
 * command fails before a job exists. In every task (slurmstepd) NAA_SPEC is set to one NAA per
 * requested code, the (global task id mod n)-th of the n NAAs serving it, so that reference
 * clients, which only read NAA_SPEC, work too. The requested codes are also stored in the job's
 * control environment, which Slurm exports to the job as SLURM_SPANK_NAA_CODES; libnaa's Slurm
 * resolver reads it there for processes that get no NAA_SPEC (ranks mpirun starts), without
 * asking slurmctld. Tasks, which Slurm does not give it, get it from task_init: there it tells
 * libnaa which codes may fail over to the other NAAs of naa.conf. At --verbose the plugin logs
 * which rank gets which NAA. See naa.conf(5).
 * Never links libslurm: the spank_* symbols come from the process that loads the plugin. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "config/number.h"
#include "rm/naa_conf.h"

SPANK_PLUGIN(naa, 1);

static char conf_path[4096];
static uint8_t codes[NAA_CONF_MAX_FNCODE];
static size_t n_codes;
static char codes_text[4 * NAA_CONF_MAX_FNCODE];

static int parse_codes(const char *text) {
  n_codes = 0;
  if (text == NULL || *text == '\0') {
    slurm_error("naa: --naa needs function codes, e.g. --naa=10 or --naa=10,11");
    return -1;
  }
  for (const char *at = text;;) {
    const size_t len = strcspn(at, ",");
    uint64_t code = 0;
    if (naa_parse_number(at, len, 1, NAA_CONF_MAX_FNCODE, &code) != 0) {
      slurm_error("naa: --naa=%s: \"%.*s\" is not a function code 1..%d", text, (int)len, at,
                  NAA_CONF_MAX_FNCODE);
      return -1;
    }
    if (memchr(codes, (int)code, n_codes) == NULL) codes[n_codes++] = (uint8_t)code;
    if (at[len] == '\0') break;
    at += len + 1;
  }
  snprintf(codes_text, sizeof codes_text, "%s", text);
  return 0;
}

static int load_conf(naa_conf *conf) {
  char error[1024];
  if (conf_path[0] == '\0') {
    slurm_error("naa: the plugstack.conf line for naa_spank.so lacks conf=/path/to/naa.conf");
    return -1;
  }
  if (naa_conf_load(conf_path, conf, error, sizeof error) != 0) {
    slurm_error("naa: %s", error);
    return -1;
  }
  return 0;
}

/* Runs where the option is given (remote == 0: srun, sbatch, salloc) and again in slurmstepd. */
static int naa_option(int val, const char *optarg, int remote) {
  (void)val;
  if (parse_codes(optarg) != 0) return -1;
  if (remote) return 0; /* checked at submission; task_init reports a changed naa.conf */
  naa_conf conf;
  if (load_conf(&conf) != 0) return -1;
  int rc = 0;
  for (size_t i = 0; i < n_codes; i++) {
    if (naa_conf_count(&conf, codes[i]) > 0) continue;
    char served[4 * NAA_CONF_MAX_FNCODE + 1] = "";
    uint8_t seen[NAA_CONF_MAX_FNCODE + 1] = {0};
    for (size_t n = 0; n < conf.n_naas; n++)
      for (size_t k = 0; k < conf.naas[n].n_kernels; k++)
        seen[conf.naas[n].kernels[k].function_code] = 1;
    for (unsigned c = 1; c <= NAA_CONF_MAX_FNCODE; c++)
      if (seen[c])
        snprintf(served + strlen(served), sizeof served - strlen(served), "%s%u",
                 served[0] ? "," : "", c);
    slurm_error("naa: no NAA serves function code %u (--naa=%s); %s lists %s", (unsigned)codes[i],
                optarg, conf_path, served[0] ? served : "no function codes");
    rc = -1;
    break;
  }
  naa_conf_free(&conf);
  return rc;
}

static struct spank_option naa_opt = {
    "naa",
    "FNCODE[,FNCODE...]",
    "Offload function codes FNCODE to network-attached accelerators: each task gets NAA_SPEC "
    "naming an NAA per code (see naa.conf(5))",
    1,
    0,
    naa_option};

int slurm_spank_init(spank_t sp, int ac, char **av) {
  for (int i = 0; i < ac; i++) {
    if (strncmp(av[i], "conf=", 5) == 0) {
      snprintf(conf_path, sizeof conf_path, "%s", av[i] + 5);
    } else {
      slurm_error("naa: unknown plugstack argument \"%s\" (expected conf=/path/to/naa.conf)",
                  av[i]);
      return -1;
    }
  }
  switch (spank_context()) {
    case S_CTX_LOCAL:
    case S_CTX_REMOTE:
    case S_CTX_ALLOCATOR:
      if (spank_option_register(sp, &naa_opt) != ESPANK_SUCCESS) {
        slurm_error("naa: cannot register --naa");
        return -1;
      }
      break;
    default:
      break;
  }
  return 0;
}

/* At --verbose (srun -v, salloc -v, sbatch -v): which NAA each rank will use, per code, as
 * "naa: function code 10: rank r mod 2 = 0 -> host:port (naa.conf line 1)". */
static void log_mapping(void) {
  naa_conf conf;
  char error[1024];
  if (naa_conf_load(conf_path, &conf, error, sizeof error) != 0) return; /* naa_option said why */
  for (size_t i = 0; i < n_codes; i++) {
    const size_t n = naa_conf_count(&conf, codes[i]);
    for (size_t k = 0; k < n; k++) {
      const naa_conf_naa *naa = naa_conf_pick(&conf, codes[i], k);
      slurm_verbose("naa: function code %u: rank r mod %zu = %zu -> %s:%u (%s line %u)",
                    (unsigned)codes[i], n, k, naa->host, (unsigned)naa->port, conf_path, naa->line);
    }
  }
  naa_conf_free(&conf);
}

/* After option parsing at submission: record the codes in the job so that libnaa's Slurm
 * resolver can tell which codes the job asked for, e.g. for ranks mpirun starts itself, without
 * asking slurmctld (Slurm hands the job control environment to every process of the job). */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (n_codes == 0 || spank_remote(sp)) return 0;
  if (spank_job_control_setenv(sp, "NAA_CODES", codes_text, 1) != ESPANK_SUCCESS)
    slurm_verbose("naa: could not record NAA_CODES in the job control environment");
  if (spank_context() == S_CTX_ALLOCATOR) log_mapping(); /* salloc, sbatch */
  return 0;
}

/* srun, once its options (and so --verbose) are in effect. */
int slurm_spank_local_user_init(spank_t sp, int ac, char **av) {
  (void)sp;
  (void)ac;
  (void)av;
  if (n_codes > 0) log_mapping();
  return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (n_codes == 0) return 0;
  uint32_t rank = 0;
  if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS) {
    slurm_error("naa: cannot get the task's global id");
    return -1;
  }
  naa_conf conf;
  if (load_conf(&conf) != 0) return -1;
  char spec[8192] = "";
  size_t used = 0;
  int rc = 0;
  for (size_t i = 0; i < n_codes && rc == 0; i++) {
    const naa_conf_naa *naa = naa_conf_pick(&conf, codes[i], rank);
    if (naa == NULL) {
      slurm_error("naa: no NAA in %s serves function code %u any more", conf_path,
                  (unsigned)codes[i]);
      rc = -1;
      break;
    }
    if (used > 0) spec[used++] = ',';
    const int n = naa_conf_spec_entry(naa, codes[i], spec + used, sizeof spec - used);
    if (n < 0) {
      slurm_error("naa: NAA_SPEC for --naa=%s is longer than %zu bytes", codes_text, sizeof spec);
      rc = -1;
      break;
    }
    used += (size_t)n;
  }
  naa_conf_free(&conf);
  if (rc != 0) return rc;
  if (spank_setenv(sp, "NAA_SPEC", spec, 1) != ESPANK_SUCCESS) {
    slurm_error("naa: cannot set NAA_SPEC in task %" PRIu32, rank);
    return -1;
  }
  slurm_verbose("naa: task %" PRIu32 ": NAA_SPEC=%s", rank, spec);
  /* libnaa takes the other NAAs of naa.conf serving a code the job asked for as failover
   * alternatives (naa.conf(5)); it learns the codes here where Slurm does not export the job
   * control environment to the task. */
  const spank_err_t e = spank_setenv(sp, "SLURM_SPANK_NAA_CODES", codes_text, 0);
  if (e != ESPANK_SUCCESS && e != ESPANK_ENV_EXISTS)
    slurm_verbose("naa: cannot set SLURM_SPANK_NAA_CODES in task %" PRIu32, rank);
  return 0;
}
