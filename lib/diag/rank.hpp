// SPDX-License-Identifier: BSD-3-Clause
// The process's rank in its parallel job, for log lines, statistics and trace file names.
#pragma once

namespace naa::diag {

// The first of SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK that holds a number,
// read once; -1 when the process is not a ranked task.
int rank();

}  // namespace naa::diag
