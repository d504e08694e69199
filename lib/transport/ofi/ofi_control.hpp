// SPDX-License-Identifier: BSD-3-Clause
// The messages that stand in for a connection on libfabric's reliable-datagram (FI_EP_RDM)
// endpoints, which have no connection manager: the request (with its private data: the auth
// key, then the memory-region request of doc/protocol.md §3.4), the accept (with naa-server's
// identity, then its advertisement) or reject (with the reason), and the goodbye
// that ends a connection. They travel as tagged messages (kControlTag), so they never land in
// the receives the protocol posts for MRSP.
//
// Layout, little-endian: "NAAc", version (1), type, 2 reserved bytes, sender's pid (u32),
// name length (u16), data length (u16), the sender's endpoint name, the data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace naa::transport::ofi::control {

inline constexpr uint64_t kControlTag = 0x4e4141632d637472ull;  // "NAAc-ctr"
inline constexpr size_t kHeaderSize = 16;
inline constexpr size_t kMaxName = 256;  // fi_getname's FI_ADDR_STR names are far shorter
// As a CM event's private data. Part of the wire format (doc/protocol.md §3.4): a peer drops a
// message with more, so a larger value would cut off every earlier naa-server and libnaa.
inline constexpr size_t kMaxData = 256;
inline constexpr size_t kMaxMessage = kHeaderSize + kMaxName + kMaxData;

enum class Type : uint8_t { Request = 1, Accept = 2, Reject = 3, Goodbye = 4 };

struct Message {
  Type type = Type::Goodbye;
  uint32_t pid = 0;  // the sender's process, for the liveness check of same-host peers
  std::string name;  // the sender's endpoint name (request: the client's; accept: the server's)
  std::string data;  // private data (request, accept) or the reason (reject)
};

// Returns the length written to `out` (kMaxMessage bytes suffice), 0 if a field is too long.
size_t encode(const Message &m, uint8_t *out, size_t capacity);

// False (with `why`) unless `len` bytes are exactly one well-formed message.
bool decode(const uint8_t *buf, size_t len, Message *m, std::string *why);

const char *type_name(Type t);

}  // namespace naa::transport::ofi::control
