// SPDX-License-Identifier: BSD-3-Clause
// Spreading the processes of a job over the NAAs that serve a function code: the same rule for
// NAA_SPEC and for naa.conf (and the naa_spank plugin), so that a table of which rank gets which
// NAA holds whichever way a process learns its NAAs.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace naa::rm {

// The rank that spreads this process, and the environment variable it came from ("" when none
// is set: rank 0). NAA_SPREAD=rank (the default) reads the job-wide rank, the MPI launcher's
// first (PMIX_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK; mpirun inside an allocation starts ranks
// that inherit the allocation's SLURM_PROCID), then SLURM_PROCID; NAA_SPREAD=local the rank on
// this node (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID), for NAAs attached to
// each node. A value that is not a number is skipped. Throws Error NAA_ERR_CONFIG for an
// NAA_SPREAD that is neither.
struct ProcessRank {
  unsigned long rank = 0;
  std::string from;
};
ProcessRank process_rank(const std::string &spread);

// Checks an NAA_SPREAD value (the params registry's check); source names it in the message.
void check_spread(const std::string &spread, const std::string &source);

// Of n candidates (in the order NAA_SPEC or naa.conf lists them), the one for the next handle:
// candidate (rank mod n) first, then the following ones in turn; among those that fit, the first
// with the fewest live handles in this process (use). n when none fits.
size_t pick(size_t n, unsigned long rank, const std::function<bool(size_t)> &fits,
            const std::function<unsigned(size_t)> &use);

}  // namespace naa::rm
