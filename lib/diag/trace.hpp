// SPDX-License-Identifier: BSD-3-Clause
// The timeline (NAA_TRACE=DIR): the public calls and each invocation's span as Trace Event
// Format (Chrome/Perfetto JSON), streamed to DIR/naa-trace.[jJOB.][sSTEP.][rRANK.]pPID.json
// (SLURM_JOB_ID, SLURM_STEP_ID, the rank), created when tracing starts: events wait in memory
// until NAA_TRACE_BUFFER of them are written as one block, the rest and the end of the
// document at exit, so that memory stays bounded however long the process runs. Fed by
// lib/session/stats.cpp, which owns the per-handle figures both use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "naa.h"

namespace naa::diag::trace {

// Starts tracing into DIR (NAA_TRACE, not empty) on first use: creates DIR as mkdir -p does (mode
// 0700) and the process's file in it (O_EXCL|O_NOFOLLOW, mode 0600), and registers the exit writer
// and the fork handlers (a forked child traces into a file of its own); buffer_events
// (NAA_TRACE_BUFFER, >= 1) is how many events wait in memory before they are written. "" once
// tracing (a later call's buffer_events is then ignored), else why not (logged; a later call
// tries again).
std::string open(const std::string &dir, size_t buffer_events);

// A call from t0 to t1 (ns) on handle (0: none), of function code fn at naa (fn 0: unknown).
// function (and a stage's name) must outlive the process's exit: a literal. Events are kept
// as given and written as JSON a block at a time, so that tracing costs little per call.
// A naa_test that did not complete joins the handle's run of polls (one event per run).
void call(const char *function, uint64_t t0, uint64_t t1, uint64_t handle, unsigned fn,
          const char *naa, int code, bool completed_test);
// An invocation's span: from its naa_invoke to the end of the call that completed it.
void invocation_begin(uint64_t handle, uint64_t t0, unsigned fn, const char *naa,
                      uint64_t bytes_out, uint64_t bytes_back);
// host_j: the host's joules over the invocation's window (NAA_ENERGY), naa_j: the NAA's over
// its kernel run, as its reply reported them; < 0: not measured.
void invocation_end(uint64_t handle, uint64_t t1, int code, double host_j, double naa_j = -1);
// An energy counter (a counter event named `counter`) at t: the host's ("host energy", joules
// since the meter opened) read at each end of an invocation's window, t as the meter gave it
// with the reading; the NAAs' ("NAA energy", the joules their replies reported so far) at
// each reply, t taken under the lock that sums them: either never goes back in time order,
// whichever threads read it.
void energy(uint64_t t, double joules, const char *counter = "host energy");
// A stage of the handle's invocation ("transfer", "NAA service") from t0 to t1, nested in its
// span.
void stage(uint64_t handle, const char *name, uint64_t t0, uint64_t t1);

}  // namespace naa::diag::trace
