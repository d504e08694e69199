// SPDX-License-Identifier: BSD-3-Clause
// Where a connection thread sleeps while the node is oversubscribed (--wait adaptive): on the
// CPU where its same-host client last went to sleep or polled
// (transport::Endpoint::peer_cpu()). There, with other work on every CPU, the client's post
// wakes the server's thread on the CPU the client runs on and the reply wakes the client on the
// server's, a switch between two threads of one run queue; on two CPUs each wake-up must preempt
// that CPU's other work first, and a round trip took five times as long (doc/performance.md,
// "Oversubscribed, over shm").
#pragma once

#include <sched.h>

#include <string>

namespace naa::server {

// The calling thread's affinity while it follows a client. follow() and release() are called
// by the thread that is moved, and release() must come before that thread serves another
// client or parks (Connection::run).
class ClientCpu {
 public:
  ClientCpu() = default;
  ClientCpu(const ClientCpu &) = delete;
  ClientCpu &operator=(const ClientCpu &) = delete;

  // Onto `cpu` alone (the client's, -1: unknown, nothing changes), where the server's CPUs
  // include it; `peer` names the client in the log line.
  void follow(int cpu, const std::string &peer);
  // Back onto the server's CPUs, if it had moved.
  void release(const std::string &peer);

 private:
  int on_ = -1;  // the CPU it was moved to (-1: on the server's CPUs)
};

// The CPUs naa-server's threads may run on: the affinity of the first thread that asked, before
// any thread followed a client.
const cpu_set_t &server_cpus();
// For a process forked by a thread that may follow a client (a kernel worker): back onto the
// server's CPUs. Returns false (errno set) where that failed.
bool restore_server_cpus();

}  // namespace naa::server
