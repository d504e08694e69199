// SPDX-License-Identifier: BSD-3-Clause
// The guard before each invocation's final write-with-immediate to an NAA that did not identify
// itself as naa-server (doc/protocol.md §4.4): such an NAA may re-arm its completion queue
// without polling it and so never see a request that arrives too soon after its reply. How
// long "too soon" is grows with how slowly the NAA runs (the reference NAA under emulation
// needed 30 times the guard it needs on hardware), so the guard follows what the handle
// measured of the NAA itself: never shorter than NAA_PACING_US, nor than half the round trip
// of the connection's memory-region exchange (a message the NAA handles, with no kernel in
// it: an invocation's round trip holds the kernel's time, and a guard learnt from it made a
// 2 s kernel cost 3 s), and doubled for the rest of the process for an NAA that left a
// request acknowledged and never answered.
#pragma once

#include <chrono>
#include <string>

#include "deadline.hpp"

namespace naa {

class Pacing {
 public:
  // For a new connection to `naa` ("host:port") whose memory-region exchange took
  // `exchange` (zero when it rode in the connection setup): floor 0 turns pacing off;
  // `adaptive` false keeps the guard at the floor (NAA_PACING_ADAPTIVE=0).
  void reset(std::chrono::microseconds floor, bool adaptive, std::string naa,
             Deadline::Clock::duration exchange);
  bool enabled() const { return floor_.count() > 0; }
  bool adaptive() const { return enabled() && adaptive_; }
  std::chrono::microseconds guard() const;
  // A request this NAA acknowledged and never answered: doubles its guard in this process.
  // Returns the new guard.
  std::chrono::microseconds unanswered();

 private:
  std::chrono::microseconds floor_{0};
  bool adaptive_ = true;
  Deadline::Clock::duration exchange_{};
  std::string naa_;
};

}  // namespace naa
