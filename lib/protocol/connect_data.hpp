// SPDX-License-Identifier: BSD-3-Clause
// MRSP carried in the connection's private data (doc/protocol.md §3.4), libnaa's extension
// over libfabric's tcp and shm providers: the host's request rides in its connection request
// and naa-server's advertisement in its accept, so that naa_create makes one round trip where
// the reference makes two. A peer that does not know it ignores it: the reference NAAs read no
// private data, and a libnaa host whose accept carries no advertisement exchanges MRSP by
// messages as §2 says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace naa::protocol::mrsp {

// Precedes the MRSP message in the private data; what precedes the tag is the sender's own
// (the host's key, naa-server's identity).
inline constexpr char kConnectTag[] = {'M', 'R', 'S', 'P'};
inline constexpr size_t kConnectTagSize = sizeof kConnectTag;

// The tag and the `len` bytes of `msg`, to follow what the private data already carries; ""
// when `len` is 0 or the two take more than `room` bytes.
std::string in_connect_data(const uint8_t *msg, size_t len, size_t room);

// The MRSP message that follows the tag at `offset` of `data`, with *len its bytes to the end of
// the data (the decoder checks them against what it announces), or nullptr when the tag is not
// there.
const uint8_t *from_connect_data(const std::string &data, size_t offset, size_t *len);

}  // namespace naa::protocol::mrsp
