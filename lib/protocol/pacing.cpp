// SPDX-License-Identifier: BSD-3-Clause
#include "protocol/pacing.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "config/options.hpp"

namespace naa {
namespace {

std::mutex doublings_mu;
std::map<std::string, unsigned> doublings;  // "host:port" -> times its guard was doubled

unsigned doublings_of(const std::string &naa) {
  std::lock_guard<std::mutex> lock(doublings_mu);
  auto it = doublings.find(naa);
  return it == doublings.end() ? 0 : it->second;
}

// Half the fastest round trip: the window an event-driven NAA leaves after its reply is a part
// of the time it takes to handle one event, and a round trip holds at least one such event
// (the request) besides the transfers (measurements in doc/protocol.md §4.4).
constexpr int kRoundTripDivisor = 2;

}  // namespace

void Pacing::reset(std::chrono::microseconds floor, bool adaptive, std::string naa) {
  floor_ = floor;
  adaptive_ = adaptive;
  fastest_ = Deadline::Clock::duration::max();
  naa_ = std::move(naa);
}

void Pacing::round_trip(Deadline::Clock::duration rtt) { fastest_ = std::min(fastest_, rtt); }

std::chrono::microseconds Pacing::guard() const {
  if (!adaptive()) return floor_;
  std::chrono::microseconds g = floor_;
  if (fastest_ != Deadline::Clock::duration::max())
    g = std::max(g, std::chrono::duration_cast<std::chrono::microseconds>(fastest_ / kRoundTripDivisor));
  const unsigned n = std::min(doublings_of(naa_), 20u);
  const auto cap = std::chrono::microseconds(kMaxMicroseconds);
  return std::min(cap, g * (1L << n));
}

std::chrono::microseconds Pacing::unanswered() {
  if (adaptive()) {
    std::lock_guard<std::mutex> lock(doublings_mu);
    ++doublings[naa_];
  }
  return guard();
}

}  // namespace naa
