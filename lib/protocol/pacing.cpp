// SPDX-License-Identifier: BSD-3-Clause
#include "protocol/pacing.hpp"

#include <algorithm>
#include <map>
#include <mutex>

namespace naa::protocol {
namespace {

std::mutex doublings_mu;
std::map<std::string, unsigned> doublings;  // "host:port" -> times its guard was doubled

unsigned doublings_of(const std::string &naa) {
  std::lock_guard<std::mutex> lock(doublings_mu);
  auto it = doublings.find(naa);
  return it == doublings.end() ? 0 : it->second;
}

}  // namespace

void Pacing::reset(std::chrono::microseconds floor, bool adaptive, std::string naa,
                   Deadline::Clock::duration exchange) {
  floor_ = floor;
  adaptive_ = adaptive;
  exchange_ = exchange;
  recent_ = {};
  naa_ = std::move(naa);
}

void Pacing::round_trip(Deadline::Clock::duration rtt) {
  recent_ = std::max(rtt, recent_ * 7 / 8);
}

std::chrono::microseconds Pacing::guard() const {
  if (!adaptive()) return floor_;
  // One event of the NAA's: the shorter of the two round trips measured (zero: not measured;
  // an exchange that rode in the connection setup measures nothing).
  Deadline::Clock::duration event = exchange_;
  if (recent_.count() > 0 && (event.count() == 0 || recent_ < event)) event = recent_;
  const std::chrono::microseconds g =
      std::max(floor_, std::chrono::duration_cast<std::chrono::microseconds>(event));
  const unsigned n = std::min(doublings_of(naa_), 20u);
  return std::min(kMaxGuard, g * (1L << n));
}

std::chrono::microseconds Pacing::unanswered() {
  if (adaptive()) {
    std::lock_guard<std::mutex> lock(doublings_mu);
    ++doublings[naa_];
  }
  return guard();
}

}  // namespace naa::protocol
