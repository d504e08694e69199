// SPDX-License-Identifier: BSD-3-Clause
// How an ofi+shm server is found by its port: the name of its listener, and whether a live
// server holds that name. Private to lib/transport.
#pragma once

#include <rdma/fabric.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace naa::transport::ofi {

// shm names endpoints, not hosts and ports: "HOST:PORT" of a same-host NAA maps to the name of
// the listener that serves PORT. A TCP port number is unique on a host (the server holds it
// with its tcp listener, or reserves it when it serves shm alone), so the port names one server;
// the uid is part of the name because shm's regions and its process_vm_writev copies work only
// between processes of one user, so a client of another user finds no such name (and auto
// reaches that server over TCP instead).
std::string shm_service(uint16_t port);

// A listener's address: this prefix and its service name (shm_service).
inline constexpr char kListenerAddressPrefix[] = "fi_ns://";

// The file behind POSIX shared-memory object `object` ("/NAME"): glibc's shm_open keeps them
// under /dev/shm, so a stat of it answers what shm_open, fstat and close would.
inline std::string shm_object_path(const std::string &object) {
  return "/dev/shm" + object;
}

// shm keeps an endpoint's region as the POSIX shared-memory object of the endpoint's name
// (fi_shm(7)). A listener holds an flock on its object while it lives: that tells a live server
// from the leftover of one that was killed (which would make a new listener's fi_enable fail
// with EBUSY), and lets a client see at once that no server is there.
enum class NameState { Free, Live, Stale };

NameState shm_name_state(const std::string &name);

// shm names an endpoint SOURCE:UID:INDEX, SOURCE being its fi_info's source address, which is
// "fi_shm://PID" unless given. Pids wrap around, so a long-lived server meets clients with the
// pid, and so the name, of earlier ones; libfabric 1.17's listener keeps every client it has
// heard from by name and tells a reused name from the old one only by the pid in its region,
// so it answered the new client's connection request into the old client's region, and the
// request was never sent (test/integration/shm_pid_reuse.sh). A random part after the pid
// gives `info` a source no earlier process had.
void give_unique_shm_source(fi_info *info);

// Locks the object of `name` for the listener's life: the descriptor to close at its end, or -1
// (with a log line) when it cannot.
int hold_shm_name(const std::string &name);

// The object behind a listener's address ("fi_ns://SERVICE"): its device and inode, or none
// (no such object, or not such an address). A server started anew at the same port makes a
// new object under the same name (claiming a dead one's name unlinks the old object first),
// and an inode is not given again while the old object is mapped.
struct ShmObject {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const ShmObject &o) const { return dev == o.dev && ino == o.ino; }
};
std::optional<ShmObject> shm_listener_object(const std::string &address);

}  // namespace naa::transport::ofi
