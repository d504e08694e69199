// SPDX-License-Identifier: BSD-3-Clause
// What an ofi+shm listener believes of a connection request before it answers it. Any process
// of any user on the host can put a request in the listener's queue, and the request names
// the endpoint to answer and the process to watch: naa-server then maps that endpoint's
// region, watches that process, and removes the region when the process dies. Private to
// lib/transport (and test/fuzz/fuzz_ofi_control drives it with any name and pid).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace naa::transport::ofi::shm {

// The pid an endpoint name "fi_shm://PID-..." carries (the prefix give_unique_source
// gives every libnaa endpoint), or 0 when it carries none.
pid_t name_pid(const std::string &name);

// Whether a request naming `name` and claiming process `pid` may be answered: the name
// carries that pid, the process lives and is this user's (shm's process_vm_writev copies reach
// no other user's), the region of the name exists and is this user's, and that process maps
// it (so a process cannot pass for another by naming its endpoint after it). Anything else is
// dropped unanswered, at once (an answer to a region that cannot be mapped would be retried
// for seconds), with `why`.
bool request_plausible(const std::string &name, uint32_t pid, std::string *why);
// How many times it has read a process's memory map (once per region and process: a region
// seen mapped is trusted again while the object behind its name stays the same); for tests.
unsigned long maps_read();

// Whether the region of `name` may be removed once process `pid` is gone: the name carries
// that pid and the object is this user's. Never the name of a listener ("naa-UID-PORT"),
// which carries no pid.
bool region_of(const std::string &name, pid_t pid);

// The POSIX shared-memory object behind an endpoint name: "/" and the name without its
// "fi_shm://" prefix (fi_shm(7)), or "" when it has no such prefix.
std::string region_object(const std::string &name);

}  // namespace naa::transport::ofi::shm
