// SPDX-License-Identifier: BSD-3-Clause
// One lock over the steps of this process that take file descriptors in bulk and the one that
// must not run out of them. libfabric 1.17's shm provider crashes inside fi_cq_read when a new
// peer's request arrives while no descriptor is left to map that peer, and it dies holding its
// region's lock, on which every later sender to that region spins for ever. The shm listener
// therefore reads its queue, and a shm endpoint sends its control messages (the first send
// to a peer maps the peer's region), only while descriptors are spare; the tcp listener's
// accepts take one per connection. All of these run under this lock, so that no accept falls
// between a count and the step it allows (one did: test_hostile's flood of idle connections
// on a loaded machine). Part of the transport interface, whatever transports are built:
// naa-server takes descriptors in bulk too (its regions' memfds) and gates them by the same lock.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>

#include "deadline.hpp"

namespace naa::transport {

std::mutex &descriptor_gate();

// What a shm step may open (a new peer's region, a request's fresh endpoint), with room to
// spare.
inline constexpr size_t kSpareDescriptors = 16;

// Whether this process can still open `count` descriptors. Call it holding the gate.
bool descriptors_spare(size_t count);

// A same-host step that waits for descriptors (the shm listener that cannot read its queue, a
// shm endpoint that cannot send its answer) holds a claim while it waits. While any claim is
// held, the tcp listener accepts only with kClaimHeadroom more to spare, so that what
// naa-server's handshake sweep frees goes to the claimant, not to the next silent connection
// of a flood: under TSan, the tcp listener took every descriptor the sweep freed, and shm
// clients were refused or left unanswered (test_hostile's idle_raw_connections and
// shm_requests_amid_connection_churn).
inline constexpr size_t kClaimHeadroom = 16;

class DescriptorClaim {
 public:
  DescriptorClaim() = default;
  DescriptorClaim(const DescriptorClaim &) = delete;
  DescriptorClaim &operator=(const DescriptorClaim &) = delete;
  ~DescriptorClaim() { hold(false); }
  void hold(bool waiting);

 private:
  bool held_ = false;
};

// Whether the tcp listener may accept a connection now. Call it holding the gate.
bool accepts_spare();

// attempt() (0, or an errno) again while it fails for want of descriptors (EMFILE, ENFILE),
// holding a claim, until `deadline`: what the handshake sweep frees goes to it. Returns
// attempt()'s last result.
int retry_while_short(const std::function<int()> &attempt, Deadline deadline);

}  // namespace naa::transport
