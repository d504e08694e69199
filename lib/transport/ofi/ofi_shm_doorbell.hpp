// SPDX-License-Identifier: BSD-3-Clause
// A doorbell for the ofi+shm listener. libfabric 1.17's shm offers no wait that another process
// can end (fi_shm(7): manual progress only; a peer's message sets a flag in our region and wakes
// no descriptor), so a listener could only look at its queue between naps, and a connection
// request waited for the rest of a nap (up to 8 ms). The listener therefore also sleeps on an
// abstract Unix datagram socket named after its endpoint, and a client rings it (one byte) once
// its request is in the listener's queue. Best effort on both sides: a ring that cannot be sent
// (another network namespace, no descriptor left) or a listener that cannot bind the name
// (taken by another process) leaves the naps as they were. Private to lib/transport.
#pragma once

#include <string>

#include "deadline.hpp"

namespace naa::transport::ofi {

class ShmDoorbell {
 public:
  // The doorbell of the listener named `service` (shm_service(port)); without one when
  // `service` is empty, or (logged) when its name cannot be bound.
  explicit ShmDoorbell(const std::string &service);
  ~ShmDoorbell();
  ShmDoorbell(const ShmDoorbell &) = delete;
  ShmDoorbell &operator=(const ShmDoorbell &) = delete;

  enum class Woken { No, ByRing, ByInterrupt };
  // Sleeps until the doorbell rings, `interrupt` (-1: none) is readable or `timeout` passes
  // (without a doorbell, a sleep that only `interrupt` ends). The rings that came meanwhile are
  // taken with one.
  Woken wait(Deadline::Clock::duration timeout, int interrupt = -1);
  // Whether wait() sleeps on the doorbell (else a request waits out the sleep).
  bool rings() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Rings the doorbell of the listener whose endpoint is `server` ("fi_ns://SERVICE"); nothing for
// any other address.
void ring_shm_doorbell(const std::string &server);

}  // namespace naa::transport::ofi
