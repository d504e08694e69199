// SPDX-License-Identifier: BSD-3-Clause
// NAA energy per reply (doc/protocol.md §3.5), libnaa's extension between a libnaa host and
// naa-server: the host asks after its memory-region request, naa-server answers after its
// advertisement, and from then on writes a 16-byte record of the kernel's joules into the
// host's buffer before each reply's final write-with-immediate. Both blocks follow an MRSP
// message whose own length is fixed by its count, where the decoders of the reference and of
// earlier libnaa versions ignore them; a host sends its ask by message only to a peer that
// named itself naa-server in its accept, so reference NAAs never see one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace naa::energy_report {

// Opens both blocks.
inline constexpr char kTag[] = {'N', 'R', 'G', 'Y'};
inline constexpr size_t kTagSize = sizeof kTag;
// The ask: the tag, then where the records go: the host buffer's address (8 bytes) and rkey
// (4 bytes), big-endian.
inline constexpr size_t kAskSize = kTagSize + 8 + 4;
// The answer: the tag, a length byte, then that many bytes of what the NAA counts (ASCII).
inline constexpr size_t kMaxSourceName = 63;
// The record: microjoules (8 bytes), the connection's reply number from 1 (4 bytes, wrapping),
// flags (1 byte: kMeasured), 3 zero bytes; big-endian.
inline constexpr size_t kRecordSize = 16;
inline constexpr uint8_t kMeasured = 0x01;

struct Ask {
  uint64_t address;
  uint32_t rkey;
};

struct Record {
  uint64_t uj;
  uint32_t reply;
  bool measured;  // false: no kernel ran, or the counters could not be read: unknown, not zero
};

// The ask into out (kAskSize bytes).
void encode_ask(const Ask &ask, uint8_t *out);
// The ask in the `len` bytes after an MRSP message, if they start with one.
bool find_ask(const uint8_t *after, size_t len, Ask *ask);

// The answer naming `source` (cut to kMaxSourceName bytes).
std::string encode_answer(const std::string &source);
// The answer in the `len` bytes after an MRSP message, if they start with one: *source named.
bool find_answer(const uint8_t *after, size_t len, std::string *source);

void encode_record(const Record &r, uint8_t *out);
Record decode_record(const uint8_t *in);

}  // namespace naa::energy_report
