// SPDX-License-Identifier: BSD-3-Clause
// libfabric 1.17's shm unlinks an endpoint's 16 MiB region when the endpoint closes, and a
// killed process (SIGKILL at a job's time limit, a crash) leaves it in /dev/shm, where it holds
// its memory until the node reboots. A peer that sees the process die removes that peer's
// region; when both ends die, nobody did: the test suite alone left 1000 of them (5 GB) on a
// development machine. naa-server therefore removes, when its shm listener starts, what dead
// libnaa processes left: only objects of its own user, named as libnaa names its endpoints
// (PID-16HEX, with shm's ":UID:INDEX" and the bell's ".bell", shm/names.hpp and
// shm/bell.hpp) and whose PID no process has, and the listener objects (naa-UID-PORT) that
// no live server holds an flock on and that are older than a minute (a server that starts
// creates its object a moment before it locks it). A live process's object is never touched:
// its pid exists (a pid reused since only keeps a leftover longer), nor a dead process's region
// that a live server may still map (below). Private to lib/transport.
#pragma once

#include <string>

namespace naa::transport::ofi::shm {

// Removes them from `dir` (/dev/shm); returns how many. Logged when any.
size_t remove_dead_processes_regions(const std::string &dir = "/dev/shm");

// A connection request waits in the listener's queue until the server next reads the queue,
// and libfabric 1.17 maps the requesting endpoint's region only then: where the region is gone
// by then (its process died meanwhile, a client that gave up or was killed, and a sweep removed
// it), the server dies of SIGSEGV in that read. So both sides leave a time on their object (its
// modification time, which nothing else sets after creation): a client after each post that
// may have put its name in a listener's queue, a server before each read of its queue (once a
// second at most: a stale stamp only keeps more). A dead process's region stamped no earlier
// than the oldest stamp of a live listener may still wait in that listener's queue, and stays
// for a later sweep. A server stopped or starved of descriptors, whose stamp ages, keeps them
// all while it lives.
void stamp_region(const std::string &endpoint_name);
void stamp_listener(int listener_fd);

// Whether `name` (a file name in /dev/shm) is one of libnaa's endpoint objects; its pid in `pid`.
bool libnaa_region_name(const std::string &name, long *pid);

}  // namespace naa::transport::ofi::shm
