// SPDX-License-Identifier: BSD-3-Clause
// NAA energy per reply (doc/protocol.md §3.5), libnaa's extension between a libnaa host and
// naa-server: the host asks after its memory-region request, naa-server answers after its
// advertisement, and from then on each reply's immediate carries the kernel run's microjoules
// in the 24 bits beside the return code that the reference host ignores (§4.2). The ask and
// the answer follow an MRSP message whose own length is fixed by its count, where the decoders
// of the reference and of earlier libnaa versions ignore them; a host sends its ask by message
// only to a peer that named itself naa-server in its accept, so reference NAAs never see one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace naa::protocol::energy_report {

// The ask is this tag alone; the answer is the tag, a length byte, then that many bytes of what
// the NAA counts (ASCII).
inline constexpr char kTag[] = {'N', 'R', 'G', 'Y'};
inline constexpr size_t kTagSize = sizeof kTag;
inline constexpr size_t kAskSize = kTagSize;
inline constexpr size_t kMaxSourceName = 63;

// Whether the `len` bytes after an MRSP message start with the ask.
bool find_ask(const uint8_t *after, size_t len);

// The answer naming `source` (cut to kMaxSourceName bytes).
std::string encode_answer(const std::string &source);
// The answer in the `len` bytes after an MRSP message, if they start with one: *source named.
bool find_answer(const uint8_t *after, size_t len, std::string *source);

// The reply immediate's energy bits: 24 bits E around the return code (bits 8-15), E >> 8 in
// bits 16-31 and E's low byte in bits 0-7, so that the wire's bytes read E2 E1 code E0.
// E = exponent << 19 | mantissa stands for mantissa << exponent microjoules (exact below 2^19
// uJ, within 4 ppm above, at most about 1.1e9 J); all ones: unknown (no kernel ran, or a read
// failed).
inline constexpr uint32_t kEnergyBits = 0xffff00ffu;
uint32_t in_immediate(std::optional<uint64_t> uj);
std::optional<uint64_t> from_immediate(uint32_t r);

}  // namespace naa::protocol::energy_report
