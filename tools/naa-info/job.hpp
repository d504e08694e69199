// SPDX-License-Identifier: BSD-3-Clause
// naa-info --job: which NAAs serve which codes for this job, and which ranks use which.
#pragma once

namespace naa_info {

// Prints the job's table (see naa-info(1)); ranks is the job's number of ranks, 0 for
// SLURM_NTASKS; only, a function code to restrict it to, or -1. Returns the exit status.
int show_job(unsigned long ranks, long only);

}  // namespace naa_info
