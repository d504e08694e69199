// SPDX-License-Identifier: BSD-3-Clause
// --fi-pingpong: libfabric's own ping-pong (fi_pingpong, libfabric-bin) run on loopback beside
// each latency size, over the provider the libnaa handle uses, as the floor libnaa is compared
// with.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace naa::bench {

// fi_pingpong's provider and endpoint arguments for a handle's transport as naa_handle_info
// reports it ("ofi+tcp", "auto: ofi+shm"); empty for one fi_pingpong does not cover (verbs).
std::vector<std::string> fi_pingpong_provider(const std::string &transport);

// Whether HOST names this machine's loopback, where naa-bench starts both fi_pingpong sides.
bool is_loopback(const std::string &host);

// A server and a client of `size` bytes and `iters` iterations on 127.0.0.1 at a free port;
// the round trip in microseconds (2 x usec/xfer). Both are killed when they have not ended
// within a deadline scaled by the bytes moved. Throws naa::Error saying what went wrong.
double run_fi_pingpong(const std::vector<std::string> &provider, size_t size, size_t iters);

}  // namespace naa::bench
