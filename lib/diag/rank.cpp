// SPDX-License-Identifier: BSD-3-Clause
#include "diag/rank.hpp"

#include <cstdlib>
#include <initializer_list>

namespace naa::diag {

int rank() {
  static const int value = [] {
    for (const char *name : {"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
      const char *text = std::getenv(name);
      if (text == nullptr || *text == '\0') continue;
      char *end;
      const long r = std::strtol(text, &end, 10);
      if (*end == '\0' && r >= 0 && r < (1L << 30)) return static_cast<int>(r);
    }
    return -1;
  }();
  return value;
}

}  // namespace naa::diag
