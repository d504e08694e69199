// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: naa-server's handling of connection requests under -A (KeyCheck, what
// Server::admit runs before anything is allocated for a request), driven from bytes. Input:
// one byte K, K % 49 bytes of key (empty: "k"), then requests, each a byte F (bits 0-1: which
// of four peers, bit 7: private data starts with the right key, bits 2-6: 100 ms steps of
// the clock before it), a byte L and L % 64 bytes of private data. Checked against the rules
// of naa-server(1): only the right key is let in, a host's 3rd wrong key refuses it unchecked
// for 1 s, a host that never guessed wrong is never refused the right key, and each host
// gets one log line per minute at most. The memory-region request after the key
// (doc/protocol.md §3.4) is found within the private data, and decodes without reading past it.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "key_check.hpp"
#include "protocol/connect_data.hpp"
#include "protocol/mrsp.hpp"

using namespace naa;
using Clock = server::RefusalThrottle::Clock;

namespace {

const char *const kPeers[] = {"10.0.0.1:4000", "10.0.0.1:4001", "10.0.0.2:4000", "[fe80::1]:4000"};

struct HostRecord {
  unsigned wrong = 0;  // wrong keys since the last backoff began
  Clock::time_point blocked_until{};
  Clock::time_point logged_at{};
  bool logged = false;
  bool ever_wrong = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return -1;
  size_t klen = data[0] % (config::auth::kMaxKeyLength + 1);
  data += 1, size -= 1;
  if (klen > size) klen = size;
  std::string key(reinterpret_cast<const char *>(data), klen);
  if (key.empty()) key = "k";
  data += klen, size -= klen;
  server::KeyCheck check(key);
  std::map<std::string, HostRecord> hosts;
  Clock::time_point now{};
  while (size >= 2) {
    uint8_t f = data[0];
    size_t len = data[1] % 64;
    data += 2, size -= 2;
    if (len > size) len = size;
    std::string pd = (f & 0x80) != 0 ? config::auth::encode(key) : std::string();
    pd.append(reinterpret_cast<const char *>(data), len);
    data += len, size -= len;
    now += std::chrono::milliseconds(100) * ((f >> 2) & 0x1f);
    const std::string peer = kPeers[f & 3];
    const std::string host = server::peer_host(peer);
    if (peer.compare(0, host.size(), host) != 0 || host.empty()) std::abort();
    HostRecord &h = hosts[host];
    const bool right = config::auth::matches(pd, key);
    const bool blocked = now < h.blocked_until;
    const size_t key_end = config::auth::encoded_length(pd);
    if (key_end > pd.size() || (right && key_end != config::auth::encode(key).size())) std::abort();
    const size_t data_end =
        config::auth::connect_data_length(pd);  // the key and the client identity
    if (data_end < key_end || data_end > pd.size()) std::abort();
    size_t request_len = 0;
    if (const uint8_t *request = protocol::mrsp::from_connect_data(pd, data_end, &request_len)) {
      const auto *end = reinterpret_cast<const uint8_t *>(pd.data()) + pd.size();
      if (request < reinterpret_cast<const uint8_t *>(pd.data()) || request + request_len != end)
        std::abort();
      // A copy of exactly those bytes: ASan sees a read past them.
      std::vector<uint8_t> bytes(request, request + request_len);
      protocol::mrsp::Message m;
      protocol::mrsp::decode(bytes.data(), bytes.size(), m, nullptr);
    }
    server::KeyVerdict v = check.check(peer, pd, now);
    if (v.admitted != (right && !blocked)) std::abort();
    if (right && !h.ever_wrong && !v.admitted) std::abort();
    if (v.admitted) {
      if (v.reason != nullptr || !v.log_line.empty()) std::abort();
      continue;
    }
    if (v.reason == nullptr) std::abort();
    if (!v.log_line.empty()) {
      if (h.logged && now - h.logged_at < server::RefusalThrottle::kLogInterval) std::abort();
      h.logged = true;
      h.logged_at = now;
    }
    if (!blocked && (key_end != 0 || pd.size() > data_end)) {  // a key tried
      h.ever_wrong = true;
      if (++h.wrong >= server::RefusalThrottle::kBurst) {
        h.blocked_until = now + server::RefusalThrottle::kBackoff;
        h.wrong = 0;
      }
    }
  }
  return 0;
}
