// SPDX-License-Identifier: BSD-3-Clause
// The first thing naa-server does with a connection request under -A: the key
// in its private data, checked before anything is allocated for it, with the refusals
// throttled and logged once per host per interval (RefusalThrottle). On its own so that
// test/fuzz/fuzz_connreq can drive it with any peer and private data.
#pragma once

#include <string>
#include <utility>

#include "config/auth.hpp"
#include "refusal_throttle.hpp"

namespace naa::server {

// The shm peers' host, as the limits and the throttle count them.
inline constexpr char kShmHost[] = "this host over shm";

// The address part of a peer name ("10.0.0.1:4242" -> "10.0.0.1", "[::1]:4242" -> "[::1]"):
// what the per-peer limits and the refusal throttle count by. An shm peer is named by its
// endpoint ("fi_shm://PID-RANDOM:UID:INDEX"), a name per handle; they are all processes of this
// host (and of this user: the listener answers no other), so they count together as one host's
// clients do over tcp.
inline std::string peer_host(const std::string &peer) {
  if (peer.rfind("fi_shm://", 0) == 0) return kShmHost;
  size_t colon = peer.rfind(':');
  return colon == std::string::npos || peer.back() == ']' ? peer : peer.substr(0, colon);
}

struct KeyVerdict {
  bool admitted = true;
  const char *reason = nullptr;  // for the client, when refused
  std::string log_line;          // empty: not to be logged (one line per host per interval)
};

class KeyCheck {
 public:
  explicit KeyCheck(std::string key) : key_(std::move(key)) {}

  KeyVerdict check(const std::string &peer, const std::string &private_data,
                   RefusalThrottle::Clock::time_point now) {
    KeyVerdict v;
    const std::string host = peer_host(peer);
    const bool tried = refusals_.may_try(host, now);
    if (tried && config::auth::matches(private_data, key_)) return v;
    v.admitted = false;
    v.reason = tried ? "naa-server: authentication failed (NAA_AUTH_KEY)"
                     : "naa-server: authentication failed (NAA_AUTH_KEY; retry later)";
    unsigned unlogged = 0;
    // A key was tried: anything beyond a libnaa host's identity alone.
    const bool keyed = config::auth::encoded_length(private_data) != 0 ||
                       private_data.size() > config::auth::connect_data_length(private_data);
    if (refusals_.refused(host, tried && keyed, now, &unlogged))
      v.log_line = "refusing " + peer + ": " +
                   (tried ? "missing or wrong authentication key" : "too soon after a wrong key") +
                   " (" + std::to_string(unlogged) + " earlier refusals of " + host +
                   " not logged: one line per host per " +
                   std::to_string(RefusalThrottle::kLogInterval.count()) + " s)";
    return v;
  }

 private:
  const std::string key_;
  RefusalThrottle refusals_;
};

}  // namespace naa::server
