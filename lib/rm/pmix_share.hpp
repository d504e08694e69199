// SPDX-License-Identifier: BSD-3-Clause
// One answer per node: where the job runs under a PMIx server (srun --mpi=pmix, Open MPI's
// mpirun), the node's first rank computes a value and publishes it with PMIx Put/Commit; the
// other ranks of the node Get it from there instead of computing it themselves. libpmix is
// loaded at run time; without it, or without a PMIx server, every process computes its own.
#pragma once

#include <functional>
#include <string>

namespace naa::rm {

// The value of key for this node: from the node's first rank through PMIx, or compute()'s own
// (in the first rank, without PMIx, or when the first rank has not published it within
// wait_seconds). compute() may throw; the first rank then publishes nothing usable and every
// rank computes (and throws) for itself.
std::string node_shared(const std::string &key, const std::function<std::string()> &compute,
                        int wait_seconds);

}  // namespace naa::rm
