// SPDX-License-Identifier: BSD-3-Clause
#include "transport/descriptor_gate.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <thread>

namespace naa::transport {

namespace {
std::atomic<unsigned> claims{0};
// Between tries of retry_while_short: the sweep frees descriptors once per accept slice at most.
constexpr std::chrono::milliseconds kClaimNap{2};
}  // namespace

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

void DescriptorClaim::hold(bool waiting) {
  if (waiting == held_) return;
  held_ = waiting;
  if (waiting)
    claims.fetch_add(1, std::memory_order_relaxed);
  else
    claims.fetch_sub(1, std::memory_order_relaxed);
}

bool accepts_spare() {
  return claims.load(std::memory_order_relaxed) == 0 ||
         descriptors_spare(kSpareDescriptors + kClaimHeadroom);
}

int retry_while_short(const std::function<int()> &attempt, Deadline deadline) {
  DescriptorClaim claim;
  for (;;) {
    const int err = attempt();
    if ((err != EMFILE && err != ENFILE) || deadline.expired()) return err;
    claim.hold(true);
    std::this_thread::sleep_for(
        std::min<Deadline::Clock::duration>(kClaimNap, deadline.remaining()));
  }
}

}  // namespace naa::transport
