// SPDX-License-Identifier: BSD-3-Clause
// NAA_SPEC, the reference-compatible list of available NAAs set by the resource manager or user:
//   <host>:<port>:<fncode>:<n_inputs>[,<host>:<port>:<fncode>:<n_inputs>...]
// An IPv6 host goes in brackets ([::1]:12345:3:1); an empty port means 12345, as in the reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace naa::rm {

constexpr uint16_t kDefaultPort = 12345;

struct NaaEntry {
  std::string host;  // without the IPv6 brackets, ready for getaddrinfo
  uint16_t port;
  uint8_t function_code;
  unsigned n_inputs;
};

// Parses the whole spec in order. Whitespace around a chunk is trimmed and empty chunks are
// skipped; everything else is strict (decimal numbers only, port 1..65535, fncode 1..127,
// n_inputs 1..31, exactly 4 fields, non-empty host). On the first malformed chunk returns false,
// leaves out unchanged and sets *error (if non-null), e.g.
//   NAA_SPEC chunk 2 "host:x:1:1": port "x" is not a number 1..65535
bool parse_naa_spec(const std::string &spec, std::vector<NaaEntry> &out, std::string *error);

}  // namespace naa::rm
