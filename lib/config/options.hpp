// SPDX-License-Identifier: BSD-3-Clause
// The parsers and types of the numeric and mode runtime parameters (lib/config/params.cpp declares
// them, naa(7) RUNTIME PARAMETERS documents them). Each parser takes the text and the name of
// its source (a variable, an naa_attr_t field) for its error.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "protocol/pacing.hpp"

namespace naa::config {

// NAA_TIMEOUT (each naa_wait, default 60) and NAA_CONNECT_TIMEOUT (connecting plus MRSP in
// naa_create and each reconnect, default 30): seconds, a decimal number > 0. Two deadlines, so
// that a long kernel's wait does not make a dead NAA slow to notice on connecting, nor a short
// wait make connecting fail. Throws Error(NAA_ERR_CONFIG) when malformed.
std::chrono::milliseconds parse_timeout(const std::string &text, const std::string &source);
inline constexpr long kMaxTimeoutSeconds = 31536000;

// NAA_PROGRESS: who moves the data and how naa_wait waits. spin: poll until done (lowest
// latency, burns the core); block: sleep in the transport until a completion arrives (frees the
// core, adds a wake-up); spin-then-block: poll for NAA_SPIN_US microseconds (default 100),
// longer while a reply is due, then block; adaptive (default): as spin-then-block, but it
// sleeps at once while the node is oversubscribed (progress/busy_node.hpp) and while the
// handle's recent polls did not pay (progress/spin_budget.hpp), and yields the core while it
// polls on a CPU it shares (progress/busy_node.hpp). In these the calling thread drives the
// transfers (posting in naa_invoke, completions in naa_test/naa_wait). thread: a library thread
// drives every such handle (naa_invoke only enqueues, naa_test only reads a flag), pinned to
// NAA_PROGRESS_CPU when set. provider: libfabric's own progress (FI_PROGRESS_AUTO) where the
// provider offers it, spin-then-block otherwise.
struct Progress {
  enum class Mode { Spin, Block, SpinThenBlock, Thread, Provider, Adaptive } mode = Mode::Adaptive;
  std::chrono::microseconds spin{100};
  int cpu = -1;  // NAA_PROGRESS_CPU for the thread: -1 leaves it to the scheduler
};
// One NAA_PROGRESS name ("" is the default).
Progress::Mode parse_progress_mode(const std::string &mode, const std::string &source);
// Its NAA_PROGRESS name.
const char *progress_name(Progress::Mode mode);
// NAA_PROGRESS_CPU: a CPU number ("" leaves it to the scheduler: -1).
int parse_cpu(const std::string &text, const std::string &source);

// NAA_PACING_US: the guard, in microseconds, between polling an NAA's reply (or its MRSP
// answer) and posting the next invocation's final write-with-immediate, for NAAs that do not
// identify themselves as libnaa servers. The reference NAA loses a request that arrives while
// it re-arms its completion queue (doc/protocol.md §4.4): 336 of 336 invocations completed
// with a gap of at least 50 µs; the default doubles that for hosts with noisier timing.
// Application time between calls counts toward the guard; 0 turns pacing off.
inline constexpr std::chrono::microseconds kDefaultPacing{100};
// NAA_PACING_US, NAA_SPIN_US: 10 s, the longest pacing guard.
inline constexpr uint64_t kMaxMicroseconds = protocol::kMaxGuard.count();
// NAA_PACING_ADAPTIVE: 1 (default) lets the guard grow with the NAA (lib/protocol/pacing.hpp), 0
// keeps it at NAA_PACING_US.
bool parse_switch(const std::string &text, const std::string &source);
// A whole number of microseconds in 0..kMaxMicroseconds.
std::chrono::microseconds parse_microseconds(const std::string &text, const std::string &source);

// NAA_RECONNECT: whether a handle whose connection is gone connects again: 0 never, 1..100
// yes, with attempts until NAA_CONNECT_TIMEOUT runs out (the number no longer counts them;
// the range is kept for the settings written when it did).
inline constexpr uint64_t kMaxReconnect = 100;
unsigned parse_reconnect(const std::string &text, const std::string &source);

// NAA_OFI_WRITE_CHUNK: bytes >= 4096 ("" : no split, SIZE_MAX).
size_t parse_write_chunk(const std::string &text, const std::string &source);
// NAA_SHM_IDLE_ENDPOINTS: 0 to 16.
size_t parse_idle_endpoints(const std::string &text, const std::string &source);
// NAA_TRACE_BUFFER: events kept in memory before they are written, 1 to kMaxTraceBuffer.
inline constexpr uint64_t kMaxTraceBuffer = 1048576;
size_t parse_trace_buffer(const std::string &text, const std::string &source);

}  // namespace naa::config
