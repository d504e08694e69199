// SPDX-License-Identifier: BSD-3-Clause
// How a same-host (shared-memory) server is found by its port, without its transport's module:
// auto asks it before it loads the module that serves shared memory, and the module asks the
// same (header-only, so libnaa and the module each have their copy, and a transport built into
// libnaa links it once).
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace naa::transport {

// shm names endpoints, not hosts and ports: "HOST:PORT" of a same-host NAA maps to the name of
// the listener that serves PORT. A TCP port number is unique on a host (the server holds it
// with its tcp listener, or reserves it when it serves shm alone), so the port names one server;
// the uid is part of the name because shm's regions and its process_vm_writev copies work only
// between processes of one user, so a client of another user finds no such name (and auto
// reaches that server over TCP instead).
inline std::string shm_service(uint16_t port) {
  return "naa-" + std::to_string(getuid()) + "-" + std::to_string(port);
}

// A shared-memory endpoint's region is the POSIX shared-memory object of the endpoint's name
// (fi_shm(7)). A listener holds an flock on its object while it lives: that tells a live server
// from the leftover of one that was killed (which would make a new listener's fi_enable fail
// with EBUSY), and lets a client see at once that no server is there.
enum class NameState { Free, Live, Stale };

inline NameState shm_name_state(const std::string &name) {
  int fd = shm_open(("/" + name).c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return NameState::Free;
  NameState state = flock(fd, LOCK_EX | LOCK_NB) == 0 ? NameState::Stale : NameState::Live;
  ::close(fd);
  return state;
}

// Whether a server of this user listens with shared memory for `port` on this host.
inline bool shm_server_at(uint16_t port) {
  return shm_name_state(shm_service(port)) == NameState::Live;
}

}  // namespace naa::transport
