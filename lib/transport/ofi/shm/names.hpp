// SPDX-License-Identifier: BSD-3-Clause
// How an ofi+shm server is found by its port: the name of its listener, and whether a live
// server holds that name. Private to lib/transport.
#pragma once

#include <rdma/fabric.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "transport/shm_name.hpp"

namespace naa::transport::ofi::shm {

// A listener's address: this prefix and its service name (shm_service).
inline constexpr char kListenerAddressPrefix[] = "fi_ns://";

// The file behind POSIX shared-memory object `object` ("/NAME"): glibc's shm_open keeps them
// under /dev/shm, so a stat of it answers what shm_open, fstat and close would.
inline std::string object_path(const std::string &object) {
  return "/dev/shm" + object;
}

// shm names an endpoint SOURCE:UID:INDEX, SOURCE being its fi_info's source address, which is
// "fi_shm://PID" unless given. Pids wrap around, so a long-lived server meets clients with the
// pid, and so the name, of earlier ones; libfabric 1.17's listener keeps every client it has
// heard from by name and tells a reused name from the old one only by the pid in its region,
// so it answered the new client's connection request into the old client's region, and the
// request was never sent (test/integration/shm_pid_reuse.sh). A random part after the pid
// gives `info` a source no earlier process had.
void give_unique_source(fi_info *info);

// Locks the object of `name` for the listener's life: the descriptor to close at its end, or -1
// (with a log line) when it cannot.
int hold_name(const std::string &name);

// The object behind a listener's address ("fi_ns://SERVICE"): its device and inode, or none
// (no such object, or not such an address). A server started anew at the same port makes a
// new object under the same name (claiming a dead one's name unlinks the old object first),
// and an inode is not given again while the old object is mapped.
struct Object {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const Object &o) const { return dev == o.dev && ino == o.ino; }
};
std::optional<Object> listener_object(const std::string &address);

}  // namespace naa::transport::ofi::shm
