// SPDX-License-Identifier: BSD-3-Clause
#include "client_cpu.hpp"

#include <cerrno>
#include <cstring>
#include <mutex>

#include "diag/log.hpp"

namespace naa::server {

const cpu_set_t &server_cpus() {
  static cpu_set_t cpus;
  static std::once_flag once;
  std::call_once(once, [] {
    if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) {
      CPU_ZERO(&cpus);  // unknown: no thread follows a client
      NAA_LOG_DEBUG("naa-server's CPUs unknown (%s): connections do not follow their clients",
                    std::strerror(errno));
    }
  });
  return cpus;
}

bool restore_server_cpus() {
  const cpu_set_t &cpus = server_cpus();
  if (CPU_COUNT(&cpus) == 0) return true;
  return sched_setaffinity(0, sizeof cpus, &cpus) == 0;
}

void ClientCpu::follow(int cpu, const std::string &peer) {
  if (cpu < 0 || cpu == on_ || cpu >= CPU_SETSIZE) return;
  const cpu_set_t &cpus = server_cpus();
  if (!CPU_ISSET(cpu, &cpus) || CPU_COUNT(&cpus) < 2) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) {
    NAA_LOG_DEBUG("client %s: cannot sleep on CPU %d, where it sleeps: %s", peer.c_str(), cpu,
                  std::strerror(errno));
    return;
  }
  on_ = cpu;
  NAA_LOG_DEBUG(
      "client %s: the node is oversubscribed; its connection sleeps on CPU %d, where "
      "the client sleeps",
      peer.c_str(), cpu);
}

void ClientCpu::release(const std::string &peer) {
  if (on_ < 0) return;
  if (!restore_server_cpus()) {
    NAA_LOG_WARN("client %s: cannot move its connection back onto naa-server's CPUs: %s",
                 peer.c_str(), std::strerror(errno));
    return;
  }
  on_ = -1;
  NAA_LOG_DEBUG("client %s: its connection is back on naa-server's CPUs", peer.c_str());
}

}  // namespace naa::server
