// SPDX-License-Identifier: BSD-3-Clause
// Statistics of the public calls (NAA_STATS, naa_stats_get(3)), and what the timeline
// (lib/diag/trace.hpp) is told of them: counted in the C entry points
// only, so that the sessions and transports carry no hook. Off (the default) a call costs one
// relaxed atomic load; on, two clock reads and one short locked update.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "naa.h"
#include "protocol/regions.hpp"

namespace naa::config::params {
class Values;
}

namespace naa::session::stats {

// Other: counted only if it fails; Completion: naa_waitall & co.
enum class Call { Create, Invoke, Test, Wait, Completion, Other };

namespace detail {
enum : int { kStats = 1, kTrace = 2 };
extern std::atomic<int> state;  // -1 unread, else kStats | kTrace (0: off)
bool read_environment();
}  // namespace detail

// Whether calls are observed at all: statistics (NAA_STATS) or the timeline (NAA_TRACE).
inline bool on() {
  const int s = detail::state.load(std::memory_order_relaxed);
  return s < 0 ? detail::read_environment() : s != 0;
}

// A handle's naa_attr_t.params NAA_STATS=1 or NAA_TRACE=DIR (with its NAA_TRACE_BUFFER) turn
// them on for the process. Throws Error(NAA_ERR_CONFIG) when NAA_TRACE names a directory the
// trace cannot be created in (naa_create fails rather than losing the trace).
void enable(const config::params::Values &values);

// When an invocation's stages were seen, ns of CLOCK_MONOTONIC (Session::Stages): naa_invoke
// began, our writes were seen complete, the final write was posted and its post returned, the
// NAA's reply polled.
// With the NAA's joules over the kernel run (naa_measured; Session::Stages).
struct Stages {
  uint64_t invoked, written, final_posted, final_post_returned, replied;
  bool naa_measured;
  uint64_t naa_uj;
  std::string naa_source;
};

// Nanoseconds of CLOCK_MONOTONIC; 0 when statistics are off (nothing is then recorded), except
// for a create, which may turn them on (naa_attr_t.params) and then counts itself.
uint64_t start(Call call);
// A public call that began at t0 (start()) ended with code on handle_id (0: none);
// completed: a naa_test that completed the invocation; stages: of the invocation the call
// completed (null: it completed none).
void finish(Call call, const char *function, uint64_t t0, uint64_t handle_id, int code,
            bool completed, const Stages *stages);
// Whether a call (as finish() is told of it) completed an invocation.
inline bool completes(Call call, int code, bool completed) {
  return call == Call::Wait ? code == NAA_SUCCESS || code == NAA_ERR_NAA
                            : call == Call::Test && completed;
}
// naa_create succeeded: handle_id serves function_code at naa with these regions.
void created(uint64_t handle_id, uint8_t function_code, const std::string &naa,
             const std::vector<protocol::Region> &regions);
// naa_finalize: the handle's figures stay in its function code's line.
void finalized(uint64_t handle_id);

// naa_stats_get(3).
int get(naa_stats_t *totals, naa_stats_function_t *functions, size_t max_functions);
// naa_stats_energy_get(3); throws Error for a NULL or unset totals.
int energy(naa_stats_energy_t *totals, naa_stats_energy_function_t *functions,
           size_t max_functions);

}  // namespace naa::session::stats
