// SPDX-License-Identifier: BSD-3-Clause
#include "rm/spread.hpp"

#include <climits>
#include <cstdlib>
#include <cstring>

#include "error.hpp"
#include "config/number.h"

namespace naa::rm {

void check_spread(const std::string &spread, const std::string &source) {
  if (spread != "rank" && spread != "local")
    throw Error(NAA_ERR_CONFIG, source + "=\"" + spread + "\" is neither rank nor local");
}

ProcessRank process_rank(const std::string &spread) {
  const std::string how = spread.empty() ? "rank" : spread;
  check_spread(how, "NAA_SPREAD");
  static const char *const global[] = {"PMIX_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                       "SLURM_PROCID", nullptr};
  static const char *const local[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                      "SLURM_LOCALID", nullptr};
  for (const char *const *name = how == "local" ? local : global; *name != nullptr; ++name) {
    const char *v = std::getenv(*name);
    uint64_t r = 0;
    if (v != nullptr && naa_parse_number(v, std::strlen(v), 0, ULONG_MAX, &r) == 0)
      return ProcessRank{static_cast<unsigned long>(r), *name};
  }
  return ProcessRank{};
}

size_t pick(size_t n, unsigned long rank, const std::function<bool(size_t)> &fits,
            const std::function<unsigned(size_t)> &use) {
  size_t best = n;
  unsigned best_use = 0;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (rank % n + k) % n;
    if (!fits(i)) continue;
    const unsigned u = use(i);
    if (best == n || u < best_use) {
      best = i;
      best_use = u;
    }
  }
  return best;
}

}  // namespace naa::rm
