// SPDX-License-Identifier: BSD-3-Clause
// What the command line asks naa-bench to do (see naa-bench(1)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace naa::bench {

struct Settings {
  uint32_t function_code = 3;  // naa-server's noop kernel
  std::string naa;             // "host:port" of --host/--port; empty: NAA_SPEC's
  bool in_place = false;
  std::vector<size_t> sizes;  // default: 1 B .. 64 MiB, powers of 4
  size_t iters = 1000;        // round trips per size up to kFullIterationBytes
  size_t min_iters = 20;
  size_t warmup = 0;  // 0: a tenth of the iterations, at least 2
  size_t setup_iters = 10;
  std::vector<unsigned> inflight = {1, 2, 4, 8};
  std::string compare_variable;  // --compare VAR=V1,V2,...
  std::vector<std::string> compare_values;
  size_t turn = 1;             // --turn: round trips of one handle before the next one's
  bool fresh_handles = false;  // --fresh-handles: each turn on a new handle
  bool compute_busy = true, compute_sleep = true;  // --compute: the overlap test's host(s)
  std::vector<std::string> progress_modes = {"spin-then-block", "thread"};  // --progress
  bool latency = true, overlap = true, throughput = true, setup = true;
  bool waitany = false;           // not in the default set: it needs a napping kernel
  size_t waitany_handles = 1000;  // --handles
  uint32_t slow_code = 105;       // --slow-code: the test plugin's nap_fill
  bool raw = false;
  std::string raw_host;         // where the raw peer listens (spawned there unless raw_port)
  uint16_t raw_port = 0;        // 0: spawn our own raw peer
  bool raw_via_server = false;  // drive the raw writes against the naa-server instead
  bool fi_pingpong = false;     // fi_pingpong beside each latency size
  unsigned load = 0;            // --load: busy threads beside every test
  unsigned load_clients = 0;    // --load-clients: clients of their own beside latency and compare
  bool csv = false;
  std::string plot_path;

  // Above this many bytes the iteration count shrinks so that each size moves about as much
  // data as iters round trips of this size do.
  static constexpr size_t kFullIterationBytes = 16384;
  size_t iterations_for(size_t size) const {
    size_t n = size <= kFullIterationBytes ? iters : iters * kFullIterationBytes / size;
    return n < min_iters ? min_iters : n;
  }
  size_t warmup_for(size_t iterations) const {
    if (warmup != 0) return warmup;
    return iterations / 10 < 2 ? 2 : iterations / 10;
  }
};

}  // namespace naa::bench
