// SPDX-License-Identifier: BSD-3-Clause
// Optional access control: with NAA_AUTH_KEY (or NAA_AUTH_KEY_FILE) set, libnaa sends the key in
// the connection request's private data and naa-server refuses a request without the right key
// before it allocates or registers anything for it. It keeps jobs off an NAA that is not theirs;
// it is not cryptography (the key crosses the fabric in the clear), and the reference NAAs ignore
// private data, so it protects only NAAs that check it.
#pragma once

#include <string>

#include "naa.h"

namespace naa::config::auth {

constexpr size_t kMaxKeyLength = 48;  // rdma_cm's REQ carries 56 bytes of private data (PS_TCP)

// The first line of the file at `path` (NAA_AUTH_KEY_FILE; params::Values::auth_key() reads
// NAA_AUTH_KEY first). Throws Error(NAA_ERR_CONFIG) for an unreadable file or a key longer
// than kMaxKeyLength.
std::string key_from_file(const std::string &path);
// `key` itself, or Error(code) naming `source` when it is longer than kMaxKeyLength.
std::string checked_key(std::string key, const std::string &source,
                        naa_error_t code = NAA_ERR_CONFIG);

// The private data that carries `key` ("NAA1", one length byte, the key): self-delimiting,
// because InfiniBand pads private data with zeros.
std::string encode(const std::string &key);

// How many bytes at the start of `private_data` an encoded key takes (0: none): what follows
// it (doc/protocol.md §3.4) starts there.
size_t encoded_length(const std::string &private_data);

// What a libnaa host's connection request carries first: `key` encoded (if any), then the
// client identity, which tells naa-server that the host polls its own write's completion
// before the NAA's reply and so needs no reply guard (naa-server(1), doc/protocol.md §3.4),
// where the two fit the 56 bytes of a request's private data (with a key of 48 bytes only
// the key goes: naa-server then guards its replies, which costs time, not correctness).
std::string connect_data(const std::string &key);
// Whether `private_data` carries the client identity (after the key, if any); and where what
// follows the key and the identity starts (the memory-region request, doc/protocol.md §3.4).
bool from_libnaa(const std::string &private_data);
size_t connect_data_length(const std::string &private_data);

// Whether `private_data` carries exactly `key`, compared in constant time.
bool matches(const std::string &private_data, const std::string &key);

}  // namespace naa::config::auth
