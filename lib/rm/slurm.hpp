// SPDX-License-Identifier: BSD-3-Clause
// The Slurm resolver: inside a Slurm job without NAA_SPEC, which NAAs serve a function code,
// from what the job asked for (its environment, else its record through libslurm, loaded at run
// time so that libnaa never depends on Slurm) and the site's naa.conf.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rm/resolver.hpp"

namespace naa::rm {

// Whether this process runs inside a Slurm job (SLURM_JOB_ID set).
bool in_slurm_job();

// The NAAs of naa.conf serving function_code, in file order, if the job asked for the code
// (--naa of the naa_spank plugin) or holds an "naa" licence. Asks slurmctld at most once per
// process, and not at all when the environment says what the job asked for (see slurm.cpp);
// through libslurm in a child process, killed once `limit` (NAA_CONNECT_TIMEOUT; 0: none) has
// passed, so that libslurm's fatal() cannot end the caller.
// Throws Error: NAA_ERR_NO_NAA (the message names the job, licences and file; libslurm failed),
// NAA_ERR_TIMEOUT (libslurm took longer than limit), NAA_ERR_CONFIG (naa.conf malformed or
// unreadable, SLURM_JOB_ID malformed).
// conf_param is NAA_CONF's value ("" : see naa_conf_path).
std::vector<Candidate> slurm_candidates(uint8_t function_code, const std::string &conf_param,
                                        std::chrono::milliseconds limit);

// The NAAs of naa.conf serving function_code, for a process whose NAA_SPEC the naa_spank plugin
// set: it names one NAA per code (what reference clients read), and these are the ones to fail
// over to. Only where the job's --naa (SLURM_SPANK_NAA_CODES) lists the code, so slurmctld is
// never asked; empty otherwise. Never throws: an unreadable or malformed naa.conf only costs the
// alternatives, and says so in the log.
std::vector<Candidate> slurm_alternatives(uint8_t function_code, const std::string &conf_param);

// Where naa.conf is read from: `conf_param` (NAA_CONF), else the conf= argument of the naa_spank
// line in Slurm's plugstack.conf, else sysconfdir/naa.conf.
std::string naa_conf_path(const std::string &conf_param);

}  // namespace naa::rm
