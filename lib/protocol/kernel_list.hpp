// SPDX-License-Identifier: BSD-3-Clause
// The NAA's kernels (doc/protocol.md §3.6), libnaa's extension between a libnaa host and
// naa-server: the host asks after its memory-region request (and after the energy ask of §3.5,
// if any), naa-server answers after its advertisement (and after its energy answer) with the
// kernels it serves from a given function code on, as many as fit, and the code to ask from
// next. The ask and the answer follow MRSP messages whose own length their count fixes, where
// the decoders of the reference and of earlier libnaa versions read nothing; a host sends its ask
// by message only to a peer that named itself naa-server in its accept, so reference NAAs never
// see one, and a host that gets no answer knows the NAA does not list its kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace naa::protocol::kernel_list {

// The ask is the tag and the lowest function code wanted; the answer is the tag, the number of
// kernels n, the code to ask from next (0: none left), then n times: the function code, its
// kind (kBuiltin, kPlugin), a length byte and that many bytes of name (ASCII), ascending by code.
inline constexpr char kTag[] = {'K', 'L', 'S', 'T'};
inline constexpr size_t kTagSize = sizeof kTag;
inline constexpr size_t kAskSize = kTagSize + 1;
inline constexpr size_t kAnswerHeaderSize = kTagSize + 2;
inline constexpr size_t kMaxName = 63;
// The largest kernel entry: code, kind, length byte, name.
inline constexpr size_t kMaxEntrySize = 3 + kMaxName;
inline constexpr uint8_t kBuiltin = 0, kPlugin = 1;

struct Kernel {
  uint8_t function_code = 0;
  uint8_t kind = kBuiltin;
  std::string name;
};

struct Page {
  std::vector<Kernel> kernels;
  uint8_t next = 0;  // the code to ask from for the rest; 0: the list is complete
};

// Writes the ask for the kernels from code `from` (1..127) into kAskSize bytes at `out`.
void encode_ask(uint8_t from, uint8_t *out);
// Whether the `len` bytes at `at` start with an ask: *from the code asked from.
bool find_ask(const uint8_t *at, size_t len, uint8_t *from);

// The answer listing the kernels of `all` (ascending by code) from code `from` on, as many as
// fit in `room` bytes; "" when not even the header and one kernel fit where one is due.
std::string encode_answer(const std::vector<Kernel> &all, uint8_t from, size_t room);
// The answer in the `len` bytes at `at`, if they start with a well-formed one asked from
// `from`: codes 1..127 ascending from `from`, kinds known, names within the bytes, and a next
// code beyond the last listed (or 0). Names are made printable.
bool find_answer(const uint8_t *at, size_t len, uint8_t from, Page *page);

}  // namespace naa::protocol::kernel_list
