// SPDX-License-Identifier: BSD-3-Clause
#pragma once

#include <sys/types.h>

namespace naa::transport::ofi {

// This process's id: getpid(2), read once and again in a forked child (pthread_atfork). glibc
// makes getpid a system call at every call, and a warm naa_create over shm asked for it five
// times (its endpoint's name, its context's key, each control message, the parking check).
pid_t this_process();

}  // namespace naa::transport::ofi
