// SPDX-License-Identifier: BSD-3-Clause
// When a poll that found no completion looks at the connection's events, for every transport.
// A disconnect shows on the event queue (rdma_cm's channel, libfabric's EQ), not on the CQ,
// and only once that event is read; reading it on every empty poll would cost naa_test a
// syscall each time (callgrind, 64-byte round trips: the EQ read was 20 % of an empty poll).
#pragma once

namespace naa::transport {

class EventCheckPacer {
 public:
  static constexpr unsigned kEmptyPollsPerCheck = 64;
  // Counts an empty poll; true on every kEmptyPollsPerCheck-th.
  bool due() { return ++empty_polls_ % kEmptyPollsPerCheck == 0; }

 private:
  unsigned empty_polls_ = 0;
};

}  // namespace naa::transport
