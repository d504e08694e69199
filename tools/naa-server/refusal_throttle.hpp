// SPDX-License-Identifier: BSD-3-Clause
// Slows down key guessing and keeps refusals from flooding the log: after
// kBurst wrong keys (a mistyped key may be corrected at once), a host's requests within the
// backoff are refused without a look at their key, and each host's refusals are logged once
// per interval with a count of the rest.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace naa::server {

class RefusalThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr unsigned kBurst = 3;
  static constexpr std::chrono::seconds kBackoff{1};
  static constexpr std::chrono::seconds kLogInterval{60};

  // False while `host` is in its backoff after a wrong key.
  bool may_try(const std::string &host, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = hosts_.find(host);
    return it == hosts_.end() || now >= it->second.blocked_until;
  }

  // Records a refusal of `host` (`guessed`: its key was checked and wrong; the kBurst-th
  // such starts a backoff). True when it is to be logged; *unlogged is the refusals not logged
  // before it.
  bool refused(const std::string &host, bool guessed, Clock::time_point now, unsigned *unlogged) {
    std::lock_guard<std::mutex> lock(mu_);
    if (hosts_.size() > kMaxHosts) forget_quiet(now);
    Host &h = hosts_[host];
    if (guessed && ++h.wrong_keys >= kBurst) {
      h.blocked_until = now + kBackoff;
      h.wrong_keys = 0;
    }
    if (h.logged && now - h.logged_at < kLogInterval) {
      ++h.unlogged;
      return false;
    }
    *unlogged = h.unlogged;
    h.unlogged = 0;
    h.logged_at = now;
    h.logged = true;
    return true;
  }

 private:
  struct Host {
    Clock::time_point blocked_until{};
    Clock::time_point logged_at{};
    bool logged = false;  // logged_at is set (a clock may read its epoch)
    unsigned unlogged = 0;
    unsigned wrong_keys = 0;  // since the last backoff
  };
  static constexpr size_t kMaxHosts = 4096;  // bounds the memory a scan of many hosts costs

  void forget_quiet(Clock::time_point now) {
    for (auto it = hosts_.begin(); it != hosts_.end();)
      it = now - it->second.logged_at >= kLogInterval && now >= it->second.blocked_until
               ? hosts_.erase(it)
               : std::next(it);
  }

  std::mutex mu_;
  std::map<std::string, Host> hosts_;
};

}  // namespace naa::server
