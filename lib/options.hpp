// SPDX-License-Identifier: BSD-3-Clause
// Runtime parameters read from the environment (documented in naa(7), RUNTIME PARAMETERS).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace naa {

// NAA_TIMEOUT: seconds (a decimal number > 0, default 60) that connecting plus MRSP, and each
// naa_wait, may take. Throws Error(NAA_ERR_CONFIG) when malformed.
std::chrono::milliseconds timeout_from_environment();
// The same for `text` (NULL or empty: the default); `name` names its source in the error.
std::chrono::milliseconds parse_timeout(const char *text, const char *name);
inline constexpr long kMaxTimeoutSeconds = 31536000;

// NAA_PROGRESS: who moves the data and how naa_wait waits. spin: poll until done (lowest
// latency, burns the core); block: sleep in the transport until a completion arrives (frees the
// core, adds a wake-up); spin-then-block (default): poll for NAA_SPIN_US microseconds (default
// 100), then block. In these three the calling thread drives the transfers (posting in
// naa_invoke, completions in naa_test/naa_wait). thread: a library thread drives every such
// handle (naa_invoke only enqueues, naa_test only reads a flag), pinned to NAA_PROGRESS_CPU when
// set. provider: libfabric's own progress (FI_PROGRESS_AUTO) where the provider offers it,
// spin-then-block otherwise as the default.
struct Progress {
  enum class Mode { Spin, Block, SpinThenBlock, Thread, Provider } mode = Mode::SpinThenBlock;
  std::chrono::microseconds spin{100};
  int cpu = -1;  // NAA_PROGRESS_CPU for the thread: -1 leaves it to the scheduler
};
Progress progress_from_environment();
// NAA_SPIN_US and NAA_PROGRESS_CPU alone, the mode left at its default: for a mode set by
// naa_attr_t.progress, which NAA_PROGRESS must then not fail.
Progress progress_tuning_from_environment();
// One NAA_PROGRESS name ("" is the default); `name` names its source in the error.
Progress::Mode parse_progress_mode(const std::string &mode, const char *name);

// NAA_PACING_US: the guard, in microseconds, between polling an NAA's reply (or its MRSP
// answer) and posting the next invocation's final write-with-immediate, for NAAs that do not
// identify themselves as libnaa servers. The reference NAA loses a request that arrives while
// it re-arms its completion queue (doc/protocol.md §4.4): 336 of 336 invocations completed
// with a gap of at least 50 µs; the default doubles that for hosts with noisier timing.
// Application time between calls counts toward the guard; 0 turns pacing off.
inline constexpr std::chrono::microseconds kDefaultPacing{100};
inline constexpr uint64_t kMaxMicroseconds = 10000000;  // NAA_PACING_US, NAA_SPIN_US: 10 s
std::chrono::microseconds pacing_from_environment();

// NAA_LOCAL_IP: the source address to connect from (empty: let routing choose).
std::string local_ip_from_environment();

// NAA_RDMA_DEVICE: the RDMA device verbs connects from when NAA_LOCAL_IP is not set ("": any).
std::string rdma_device_from_environment();

}  // namespace naa
