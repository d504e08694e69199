// SPDX-License-Identifier: BSD-3-Clause
// MRSP, the memory-region setup protocol exchanged once per connection (doc/protocol.md §3):
// byte-exact encoders and a defensive decoder for bytes received from an untrusted peer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace naa::protocol::mrsp {

constexpr size_t kBufferSize = 768, kHeaderSize = 4, kRequestEntrySize = 24, kAdvertEntrySize = 16,
                 kErrorSize = 4, kMemoryLimitSize = 20;
constexpr size_t kMaxRequestEntries = 31, kMaxAdvertEntries = 47;
constexpr uint64_t kMaxNaaAddress = (uint64_t{1} << 56) - 1;
constexpr uint64_t kPlaceholderAlignment = 4096;

// The entry limits are what fits the 768-byte receive buffer both reference sides post.
static_assert(kHeaderSize + kMaxRequestEntries * kRequestEntrySize <= kBufferSize &&
              kHeaderSize + (kMaxRequestEntries + 1) * kRequestEntrySize > kBufferSize);
static_assert(kHeaderSize + kMaxAdvertEntries * kAdvertEntrySize <= kBufferSize &&
              kHeaderSize + (kMaxAdvertEntries + 1) * kAdvertEntrySize > kBufferSize);

enum class Type : uint8_t {
  Error = 0x00,
  AdvertiseRequest = 0x01,
  Advertise = 0x02,
  Request = 0x03
};
enum Flag : uint8_t { kInternal = 0x01, kSingleSend = 0x02, kInput = 0x04, kOutput = 0x08 };
enum class ErrorCode : uint8_t { NoMemory = 0x01, InvalidAddress = 0x02, TooManyRegions = 0x03 };

struct RequestEntry {
  uint8_t flags;
  uint64_t naa_address;  // 56 bits on the wire
  uint64_t host_address;
  uint32_t host_rkey;
  uint32_t size;
};

struct AdvertEntry {
  uint64_t naa_address;  // all 64 bits travel: NAAs advertise whatever address they like
  uint32_t rkey;
  uint32_t size;
};

// Encoders write into out[0..cap) and return the number of bytes written, or 0 when the message
// would not fit cap, has too many entries (31 / 47), zero entries, or (request only) an
// naa_address above 56 bits. Flags are sent as given.
size_t encode_request(const RequestEntry *entries, size_t n, uint8_t *out, size_t cap);
size_t encode_advert(const AdvertEntry *entries, size_t n, uint8_t *out, size_t cap);
size_t encode_error(ErrorCode code, uint8_t *out, size_t cap);
// libnaa's extension of a "not enough memory" error (doc/protocol.md §3.3): after the 4 bytes,
// the bytes the request asked for and the bytes the NAA had left for it (8 each, big-endian),
// 20 bytes in all; a receiver that reads only the first 4 sees an ordinary error.
struct MemoryLimit {
  uint64_t requested, available;
};
size_t encode_memory_refusal(const MemoryLimit &limit, uint8_t *out, size_t cap);

struct Message {
  Type type;
  uint8_t error_code;     // for Type::Error; any value, see error_code_name()
  bool has_memory_limit;  // for Type::Error NoMemory with libnaa's extension:
  MemoryLimit memory_limit;
  std::vector<RequestEntry> request;  // for AdvertiseRequest: all entries in wire order
  std::vector<AdvertEntry> advert;    // for Advertise
};

// Why a message is malformed: what a peer answers it with depends on this (naa-server maps it to
// an MRSP error code), never on the wording of `why`.
enum class DecodeError : uint8_t {
  None = 0,
  Truncated,       // shorter than its header or than its announced entries
  NoEntries,       // an advertise(-request) announcing 0 entries
  TooManyEntries,  // more than kMaxRequestEntries / kMaxAdvertEntries
  BadFlags,        // a request entry's flags are unknown or contradictory
  UnknownType,     // a message type the protocol does not define (or reserves)
};

// Decodes one received message of len bytes. Every count and length is checked against len before
// anything is read. Trailing bytes beyond the announced entries and the header padding are
// ignored. Returns DecodeError::None, or what is wrong, with *why (if non-null) naming the cause
// in a short phrase for a log line.
DecodeError decode(const uint8_t *buf, size_t len, Message &out, std::string *why);

// The reference host's placeholder NAA addresses (doc/protocol.md §3.1): consecutive from offset,
// each region taking its size rounded up to 4096 bytes, in the order given (the reference gives
// INTERNAL regions first). Returns false, with out partly written, unless every region lies
// below 2^56.
bool placeholder_addresses(const uint32_t *sizes, size_t n, uint64_t offset, uint64_t *out);

const char *error_code_name(uint8_t code);

}  // namespace naa::protocol::mrsp
