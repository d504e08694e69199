// SPDX-License-Identifier: BSD-3-Clause
// The measurements: each runs over every size and prints its table as it goes.
#pragma once

#include <cstdio>
#include <vector>

#include "report.hpp"
#include "settings.hpp"
#include "transport/transport.hpp"

namespace naa::bench {

struct RawTarget {  // the raw peer, when --raw
  transport::Transport *transport = nullptr;
  std::string host;
  uint16_t port = 0;
  bool via_server = false;  // the naa-server itself answers the raw writes
};

// Round trip median/p99 and bandwidth for libnaa, and side by side for the raw transport when
// raw.transport is set (interleaved in rounds). Returns the points for --plot.
std::vector<PlotPoint> run_latency(const Settings &s, const RawTarget &raw, FILE *out);
void run_overlap(const Settings &s, FILE *out);
void run_throughput(const Settings &s, FILE *out);
void run_setup(const Settings &s, FILE *out);
// One handle per value of an environment variable libnaa reads at naa_create ("-": unset),
// their round trips alternating: NAA_PROGRESS modes, NAA_OFI_WRITE_CHUNK split sizes, ...
void run_compare(const Settings &s, FILE *out);
// Single-core memcpy bandwidth: the physical reference for what one core can move.
void run_memcpy(const Settings &s, FILE *out);

}  // namespace naa::bench
