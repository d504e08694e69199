// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/shm/leftovers.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cinttypes>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <limits>
#include <vector>

#include "diag/log.hpp"
#include "transport/ofi/shm/names.hpp"
#include "transport/ofi/shm/request.hpp"

namespace naa::transport::ofi::shm {
namespace {

constexpr time_t kListenerGrace = 60;  // seconds

// One to ten digits at `at`; moves `at` past them.
bool digits(const std::string &s, size_t *at) {
  const size_t from = *at;
  while (*at < s.size() && std::isdigit(static_cast<unsigned char>(s[*at]))) ++*at;
  return *at > from && *at - from <= 10;
}

bool before(const timespec &a, const timespec &b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
}

}  // namespace

void stamp_region(const std::string &endpoint_name) {
  const std::string object = region_object(endpoint_name);
  if (!object.empty()) utimensat(AT_FDCWD, object_path(object).c_str(), nullptr, 0);
}

void stamp_listener(int listener_fd) {
  if (listener_fd >= 0) futimens(listener_fd, nullptr);
}

bool libnaa_region_name(const std::string &name, long *pid) {
  size_t at = 0;
  if (!digits(name, &at) || name[0] == '0' || at >= name.size() || name[at] != '-') return false;
  *pid = std::strtol(name.c_str(), nullptr, 10);
  ++at;
  for (size_t i = 0; i < 16; ++i, ++at)
    if (at >= name.size() || !std::isxdigit(static_cast<unsigned char>(name[at])) ||
        std::isupper(static_cast<unsigned char>(name[at])))
      return false;
  if (at < name.size() && name[at] == ':') {  // shm's ":UID:INDEX"
    ++at;
    if (!digits(name, &at) || at >= name.size() || name[at] != ':') return false;
    ++at;
    if (!digits(name, &at)) return false;
  }
  if (name.compare(at, std::string::npos, ".bell") == 0) at += 5;
  return at == name.size() && *pid > 0 && *pid <= INT32_MAX;
}

// "naa-UID-PORT" of this user: a listener's (shm_service()), or "naa-UID-PORT.bell", its bell's
// (shm/bell.hpp); `listener` is set to the first.
bool listener_name(const std::string &name, std::string *listener) {
  const std::string prefix = "naa-" + std::to_string(geteuid()) + "-";
  size_t at = prefix.size();
  if (name.compare(0, at, prefix) != 0 || !digits(name, &at)) return false;
  *listener = name.substr(0, at);
  return at == name.size() || name.compare(at, std::string::npos, ".bell") == 0;
}

size_t remove_dead_processes_regions(const std::string &dir) {
  DIR *d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  struct Object {
    std::string name;
    struct stat st;
    bool listener;
  };
  std::vector<Object> dead;  // of dead processes, and dead servers' listener objects
  // The oldest stamp of a live listener: a dead process's region stamped since may still wait
  // in its queue (stamp_region).
  timespec oldest_read{std::numeric_limits<time_t>::max(), 0};
  while (dirent *e = readdir(d)) {
    long pid = 0;
    const std::string name = e->d_name;
    std::string owner;  // a listener's object, for its bell's too
    const bool listener = listener_name(name, &owner);
    if (!listener && !libnaa_region_name(name, &pid)) continue;
    struct stat st {};
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid())
      continue;
    if (listener) {
      // A live server holds an flock on its listener's object from just after creating it:
      // an unlocked one is a dead server's, unless it is that young (a server starting now).
      if (shm_name_state(owner) == NameState::Live) {
        if (owner == name && before(st.st_mtim, oldest_read)) oldest_read = st.st_mtim;
        continue;
      }
      if (time(nullptr) - st.st_mtime < kListenerGrace) continue;
    } else if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) {
      continue;  // alive, or not ours to know
    }
    dead.push_back({name, st, listener});
  }
  size_t removed = 0;
  uint64_t bytes = 0;
  for (const Object &o : dead) {
    if (!o.listener && !before(o.st.st_mtim, oldest_read)) continue;
    if (unlinkat(dirfd(d), o.name.c_str(), 0) == 0) {
      ++removed;
      bytes += static_cast<uint64_t>(o.st.st_blocks) * 512;
    }
  }
  closedir(d);
  if (removed != 0)
    NAA_LOG_INFO("removed %zu shm object(s) (%" PRIu64 " MiB) that processes which died left in %s",
                 removed, bytes >> 20, dir.c_str());
  return removed;
}

}  // namespace naa::transport::ofi::shm
