// SPDX-License-Identifier: BSD-3-Clause
#include "rm/params.hpp"

#include "rm/spread.hpp"

namespace naa::rm {

const config::params::Table &parameters() {
  static const config::params::Table params = {
      {"NAA_SPEC", "host:port:fncode:n_inputs[,...]", "",
       "which NAA serves which function code (else the Slurm job's naa.conf)", nullptr},
      {"NAA_CONF", "path", "",
       "the site's naa.conf in a Slurm job (default: plugstack.conf's conf=, else "
       "SYSCONFDIR/naa.conf)",
       nullptr},
      {"NAA_SPREAD", "rank|local", "rank",
       "which rank spreads processes over several NAAs for one code: the job-wide rank, or the "
       "node-local one for NAAs attached to each node",
       check_spread},
  };
  return params;
}

}  // namespace naa::rm
