// SPDX-License-Identifier: BSD-3-Clause
// The Slurm resolver: inside a Slurm job without NAA_SPEC, which NAA serves a function code,
// from the job record (libslurm, loaded at run time so that libnaa never depends on Slurm) and
// the site's naa.conf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace naa::rm {

struct SlurmChoice {
  std::string host;
  uint16_t port;
  std::string source;  // e.g. "naa.conf line 3 (/etc/naa.conf), Slurm job 12 --naa=10"
  std::vector<SlurmChoice> alternatives;  // the other NAAs that fit, for failover, in pick order
};

// Whether this process runs inside a Slurm job (SLURM_JOB_ID set).
bool in_slurm_job();

// Picks the NAA for function_code: the job must have asked for the code (--naa of the naa_spank
// plugin) or hold an "naa" licence; among the NAAs of naa.conf serving the code, the process's
// MPI/Slurm rank picks one as the plugin does (rank mod count), and of those the one with the
// fewest handles in this process (use_count) wins. Throws Error: NAA_ERR_NO_NAA (the message
// names the job, licences and file), NAA_ERR_CONFIG (naa.conf malformed or unreadable,
// SLURM_JOB_ID malformed), NAA_ERR_INVALID_ARGUMENT (n_inputs differs from naa.conf).
// conf_param is NAA_CONF's value ("" : see naa_conf_path).
SlurmChoice resolve_slurm(uint8_t function_code, size_t n_inputs, const std::string &conf_param,
                          unsigned (*use_count)(const std::string &host, uint16_t port));

// Where naa.conf is read from: `conf_param` (NAA_CONF), else the conf= argument of the naa_spank
// line in Slurm's plugstack.conf, else sysconfdir/naa.conf.
std::string naa_conf_path(const std::string &conf_param);

}  // namespace naa::rm
