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
// RLIMIT_NOFILE's soft limit as last read; 0: not read yet.
std::atomic<rlim_t> known_limit{0};
// Between tries of retry_while_short: the sweep frees descriptors once per accept slice at most.
constexpr std::chrono::milliseconds kClaimNap{2};

rlim_t read_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  known_limit.store(lim.rlim_cur, std::memory_order_relaxed);
  return lim.rlim_cur;
}

// The kernel hands out the lowest free number, so the highest `count` numbers below `limit`
// are taken only when nearly all are: one duplicate asked for at or above the first of them
// tells (no /proc scan). A limit lowered below that number fails the duplicate (EINVAL).
bool spare_below(int probe_source, rlim_t limit, size_t count) {
  if (limit == RLIM_INFINITY || limit > static_cast<rlim_t>(INT32_MAX)) return true;
  if (limit <= count) return false;
  const int lowest = static_cast<int>(limit - count);
  const int probe = fcntl(probe_source, F_DUPFD_CLOEXEC, lowest);
  if (probe < 0) return false;
  ::close(probe);
  return probe == lowest;
}

}  // namespace

std::mutex &descriptor_gate() {
  static std::mutex gate;
  return gate;
}

// What it duplicates is a descriptor of its own, opened once (O_PATH: it reads nothing). The
// limit is read again only when the probe below the one read last finds no room (a limit
// raised or lowered since, by the process or by prlimit(2) from outside, is then seen): a
// getrlimit(2) in each of a warm naa_create's three probes cost as much as the probe itself.
// A limit lowered since by less than `count` is not seen while the probe finds room.
bool descriptors_spare(size_t count) {
  static const int probe_source = open("/", O_PATH | O_CLOEXEC);
  if (probe_source < 0) return false;
  rlim_t limit = known_limit.load(std::memory_order_relaxed);
  if (limit != 0 && spare_below(probe_source, limit, count)) return true;
  const rlim_t now = read_limit();
  if (now == 0 || now == limit) return false;
  return spare_below(probe_source, now, count);
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
