// SPDX-License-Identifier: BSD-3-Clause
// The guard before each invocation's final write-with-immediate to an NAA that did not identify
// itself as naa-server (doc/protocol.md §4.4): such an NAA may re-arm its completion queue
// without polling it and so never see a request that arrives too soon after its reply. How
// long "too soon" is grows with how slowly the NAA runs (the reference NAA under emulation
// needed 30 times the guard it needs on hardware): the reference re-arms only once it has
// handled its own send's completion as one whole event, after its MRSP answer as after every
// reply. So the guard is one such event as the handle measured it: never shorter than
// NAA_PACING_US, nor than the shorter of the connection's memory-region exchange (a message
// the NAA handles, with no kernel in it) and the recent invocation round trips (one event, the
// transfers and the kernel: they can only shorten the guard, so a long kernel never lengthens
// it), and doubled for the rest of the process for an NAA that left a request acknowledged and
// never answered. "Recent" follows the slow ones: a round trip raises it at once and it decays
// by an eighth per invocation, since an NAA slowed down (descheduled, emulated under load)
// stays slow for a while and re-arms late meanwhile; the fastest round trip alone stranded the
// reference NAA under emulation.
#pragma once

#include <chrono>
#include <string>

#include "deadline.hpp"

namespace naa::protocol {

// The longest guard, however often it doubled, and the largest NAA_PACING_US
// (config/options.hpp): 10 s.
inline constexpr std::chrono::microseconds kMaxGuard{10000000};

class Pacing {
 public:
  // For a new connection to `naa` ("host:port") whose memory-region exchange took
  // `exchange` (zero when it rode in the connection setup): floor 0 turns pacing off;
  // `adaptive` false keeps the guard at the floor (NAA_PACING_ADAPTIVE=0).
  void reset(std::chrono::microseconds floor, bool adaptive, std::string naa,
             Deadline::Clock::duration exchange);
  bool enabled() const { return floor_.count() > 0; }
  bool adaptive() const { return enabled() && adaptive_; }
  // One invocation's round trip, from its final write posted to its reply polled.
  void round_trip(Deadline::Clock::duration rtt);
  std::chrono::microseconds guard() const;
  // A request this NAA acknowledged and never answered: doubles its guard in this process.
  // Returns the new guard.
  std::chrono::microseconds unanswered();

 private:
  std::chrono::microseconds floor_{0};
  bool adaptive_ = true;
  Deadline::Clock::duration exchange_{};
  Deadline::Clock::duration recent_{};  // the recent round trips, zero before the first
  std::string naa_;
};

}  // namespace naa::protocol
