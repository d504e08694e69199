// SPDX-License-Identifier: BSD-3-Clause
// The guard before each invocation's final write-with-immediate to an NAA that did not identify
// itself as naa-server (doc/protocol.md §4.4): such an NAA may re-arm its completion queue
// without polling it and so never see a request that arrives too soon after its reply. How
// long "too soon" is grows with how slowly the NAA runs (the reference NAA under emulation
// needed 30 times the guard it needs on hardware), so the guard grows with what the handle
// observes: never shorter than NAA_PACING_US, nor than half the fastest round trip seen on the
// connection, and doubled for the rest of the process for an NAA that left a request
// acknowledged and never answered.
#pragma once

#include <chrono>
#include <string>

#include "deadline.hpp"

namespace naa {

class Pacing {
 public:
  // For a new connection to `naa` ("host:port"): floor 0 turns pacing off; `adaptive` false
  // keeps the guard at the floor (NAA_PACING_ADAPTIVE=0).
  void reset(std::chrono::microseconds floor, bool adaptive, std::string naa);
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
  Deadline::Clock::duration fastest_ = Deadline::Clock::duration::max();
  std::string naa_;
};

}  // namespace naa
