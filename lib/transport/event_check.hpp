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
  // Where an empty poll only reads memory (shm: some 50 ns), 64 of them are a few microseconds
  // and the check (a poll(2) of the peer's pidfd, about 1 us) was a reply's delay in one
  // round trip of five.
  static constexpr unsigned kCheapPollsPerCheck = 1024;
  explicit EventCheckPacer(unsigned every = kEmptyPollsPerCheck) : every_(every) {}
  // Counts an empty poll; true on every `every`-th.
  bool due() { return ++empty_polls_ % every_ == 0; }

 private:
  unsigned every_;
  unsigned empty_polls_ = 0;
};

}  // namespace naa::transport
