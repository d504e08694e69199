// SPDX-License-Identifier: BSD-3-Clause
// What a chain of WriteSegments becomes on a fabric: the same for every transport, so that
// they split alike and differ only in the descriptors they build.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "error.hpp"
#include "transport/transport.hpp"

namespace naa::transport {

// Calls write(segment, offset, length) for each write of `segments`, in order: every segment
// in pieces of at most `max_write` bytes at `offset` into it, and at least one piece per
// segment, because a zero-length segment is still a write (it may carry the immediate).
template <typename F>
void split_writes(const std::vector<WriteSegment> &segments, size_t max_write, F &&write) {
  if (segments.empty()) throw Error(NAA_ERR_INTERNAL, "empty write chain");
  for (const WriteSegment &s : segments) {
    size_t done = 0;
    do {
      const size_t length = std::min(s.length - done, max_write);
      write(s, done, length);
      done += length;
    } while (done < s.length);
  }
}

}  // namespace naa::transport
