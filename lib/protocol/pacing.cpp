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

// Half the memory-region exchange's round trip: the window an event-driven NAA leaves after its
// reply is a part of the time it takes to handle one event, and the exchange holds one such
// event (the request) besides the transfers (measurements in doc/protocol.md §4.4).
constexpr int kRoundTripDivisor = 2;

}  // namespace

void Pacing::reset(std::chrono::microseconds floor, bool adaptive, std::string naa,
                   Deadline::Clock::duration exchange) {
  floor_ = floor;
  adaptive_ = adaptive;
  exchange_ = exchange;
  naa_ = std::move(naa);
}

std::chrono::microseconds Pacing::guard() const {
  if (!adaptive()) return floor_;
  const std::chrono::microseconds g = std::max(
      floor_, std::chrono::duration_cast<std::chrono::microseconds>(exchange_ / kRoundTripDivisor));
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
