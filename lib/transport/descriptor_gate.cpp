// SPDX-License-Identifier: BSD-3-Clause
#include "transport/descriptor_gate.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>

namespace naa::transport::ofi_detail {

std::mutex &descriptor_gate() {
  static std::mutex gate;
  return gate;
}

// The kernel hands out the lowest free number, so the highest `count` numbers below
// RLIMIT_NOFILE are taken only when nearly all are: one duplicate asked for at or above
// the first of them tells (a few system calls, no /proc scan). What it duplicates is a
// descriptor of its own, opened once (O_PATH: it reads nothing).
bool descriptors_spare(size_t count) {
  static const int probe_source = open("/", O_PATH | O_CLOEXEC);
  rlimit lim{};
  if (probe_source < 0 || getrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > static_cast<rlim_t>(INT32_MAX)) return true;
  if (lim.rlim_cur <= count) return false;
  const int lowest = static_cast<int>(lim.rlim_cur - count);
  const int probe = fcntl(probe_source, F_DUPFD_CLOEXEC, lowest);
  if (probe < 0) return false;
  ::close(probe);
  return probe == lowest;
}

}  // namespace naa::transport::ofi_detail
