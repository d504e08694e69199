// SPDX-License-Identifier: BSD-3-Clause
// The 32-bit immediates of the final RDMA WRITE WITH IMM in each direction (doc/protocol.md
// §4.1, §4.2). Values here are host-order integers; the transport converts with htonl/ntohl,
// which yields the big-endian wire order the spec requires.
#pragma once

#include <cstdint>

namespace naa::protocol::imm {

constexpr uint32_t kStartMarker = 0x80, kFunctionMask = 0x7f, kReturnShift = 8;

// Host -> NAA value V: user2 << 24 | user1 << 16 | user0 << 8 | 0x80 | function code. The marker
// keeps V non-zero because V = 0 tells the NAA that the host could not prepare an invocation.
constexpr uint32_t host_request(uint8_t function_code, uint8_t user0 = 0, uint8_t user1 = 0,
                                uint8_t user2 = 0) {
  return uint32_t{user2} << 24 | uint32_t{user1} << 16 | uint32_t{user0} << 8 |
         uint32_t{function_code} | kStartMarker;
}

constexpr uint8_t function_code(uint32_t v) {
  return static_cast<uint8_t>(v & kFunctionMask);
}
constexpr uint32_t user_data(uint32_t v) {
  return v & 0xffffff00u;
}
constexpr bool is_start(uint32_t v) {
  return (v & kStartMarker) != 0;
}

// NAA -> host value R. Where the return code sits is not fixed by the reference (doc/protocol.md
// §9, AMBIGUOUS item 1); code << 8 is the spec's recommendation because the reference host reads
// R >> 8, and success (R = 0) reads the same under every interpretation.
constexpr uint32_t naa_reply(uint8_t return_code) {
  return uint32_t{return_code} << kReturnShift;
}

// Only 8 bits of R >> 8 are meaningful: the return codes end at 0x7f.
constexpr uint8_t return_code(uint32_t r) {
  return static_cast<uint8_t>((r >> kReturnShift) & 0xff);
}

// The reference host ignores these bits and the FPGA may use them for something unknown, so callers
// log a non-zero value instead of treating it as an error.
constexpr uint8_t reply_low_byte(uint32_t r) {
  return static_cast<uint8_t>(r & 0xff);
}

}  // namespace naa::protocol::imm
