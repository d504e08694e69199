// SPDX-License-Identifier: BSD-3-Clause
// The CPU time of libnaa's progress thread (NAA_PROGRESS=thread, named "naa-progress"), for the
// overlap table: the share of a core that asynchronous progress took, polling while work is in
// flight and dozing between invocations (lib/progress/progress_engine.cpp).
#pragma once

#include <cstdint>

namespace naa::bench {

// Nanoseconds the progress thread has run so far (the kernel's schedstat), or -1 when there is
// no such thread or the kernel keeps no schedstat.
int64_t progress_thread_cpu_ns();

}  // namespace naa::bench
