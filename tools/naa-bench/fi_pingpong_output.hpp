// SPDX-License-Identifier: BSD-3-Clause
// Reading fi_pingpong's (libfabric-bin) result line. Its usec/xfer column is half a round trip
// (util/pingpong.c: elapsed / iterations / 2, two transfers per iteration), so compared with
// naa-bench's round trip it must be doubled, never read as is.
#pragma once

#include <string>

namespace naa::bench {

struct FiPingpongResult {
  bool ok = false;
  double round_trip_us = 0;  // 2 x usec/xfer
  std::string error;         // when !ok: what is wrong, naming the line
};

// `output` is everything fi_pingpong printed on stdout: a heading line naming usec/xfer and,
// below it, one result line.
FiPingpongResult parse_fi_pingpong(const std::string &output);

}  // namespace naa::bench
