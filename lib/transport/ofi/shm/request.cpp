// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/shm/request.hpp"
#include "transport/ofi/shm/names.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>

namespace naa::transport::ofi::shm {
namespace {

constexpr char kPrefix[] = "fi_shm://";

std::atomic<unsigned long> maps_read_count{0};

// The object behind `name` (its owner and identity), or false when there is none (or it is
// no object: a link is not followed). One lstat where shm_open, fstat and close take three
// system calls, in every shm connection request.
bool object_stat(const std::string &name, struct stat *st) {
  const std::string object = region_object(name);
  if (object.size() < 2 || object.find('/', 1) != std::string::npos) return false;
  return lstat(object_path(object).c_str(), st) == 0 && S_ISREG(st->st_mode);
}

bool object_owner(const std::string &name, uid_t *uid) {
  struct stat st {};
  const bool ok = object_stat(name, &st);
  *uid = st.st_uid;
  return ok;
}

// Whether process `pid` maps the object behind `name`: the region is that process's endpoint,
// not one another process made under its pid (a process can give its endpoint any name).
bool maps_object(uint32_t pid, const std::string &name) {
  ++maps_read_count;
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  const std::string path = object_path(region_object(name));
  for (std::string line; std::getline(maps, line);) {
    const size_t at = line.find(path);
    if (at != std::string::npos && at + path.size() == line.size() && line[at - 1] == ' ')
      return true;
  }
  return false;
}

// The regions a process was seen to map, for its next requests: a client that takes a kept
// endpoint (ofi_endpoint_reuse.cpp) names the same region each time, and reading its maps
// is a large share of a warm naa_create (doc/performance.md). Trusted again only while the name's
// object is the one that was seen mapped (the same inode: one made anew under the name, or the name
// of a region that went, is looked at again) and claimed by the same pid; the process may have
// unmapped it since only by closing its endpoint, which unlinks the object. Bounded:
// forgotten all at once when full.
class SeenMapped {
 public:
  bool has(const std::string &name, uint32_t pid, const struct stat &st) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = seen_.find(name);
    return it != seen_.end() && it->second.pid == pid && it->second.dev == st.st_dev &&
           it->second.ino == st.st_ino;
  }
  void add(const std::string &name, uint32_t pid, const struct stat &st) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (seen_.size() >= kLimit) seen_.clear();
    seen_[name] = {pid, st.st_dev, st.st_ino};
  }

 private:
  static constexpr size_t kLimit = 256;
  struct Seen {
    uint32_t pid;
    dev_t dev;
    ino_t ino;
  };
  std::mutex mutex_;
  std::map<std::string, Seen> seen_;
};

SeenMapped &seen_mapped() {
  static auto *seen = new SeenMapped;  // never destroyed: listeners may outlive statics
  return *seen;
}

}  // namespace

unsigned long maps_read() {
  return maps_read_count.load();
}

std::string region_object(const std::string &name) {
  const std::string text(name.c_str());  // FI_ADDR_STR names travel with their NUL
  if (text.compare(0, sizeof kPrefix - 1, kPrefix) != 0) return {};
  return "/" + text.substr(sizeof kPrefix - 1);
}

pid_t name_pid(const std::string &name) {
  const std::string object = region_object(name);
  long pid = 0;
  size_t i = 1;
  for (; i < object.size() && i < 12 && object[i] >= '0' && object[i] <= '9'; ++i)
    pid = pid * 10 + (object[i] - '0');
  if (i == 1 || i >= object.size() || object[i] != '-' || object[1] == '0' || pid > 0x7fffffff)
    return 0;
  return static_cast<pid_t>(pid);
}

bool request_plausible(const std::string &name, uint32_t pid, std::string *why) {
  const pid_t named = name_pid(name);
  if (named == 0 || static_cast<uint32_t>(named) != pid) {
    *why = "its name does not carry the pid " + std::to_string(pid) + " it claims";
    return false;
  }
  struct stat st {};
  if (stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0) {
    *why = "process " + std::to_string(pid) + " does not exist";
    return false;
  }
  if (st.st_uid != geteuid()) {
    *why = "process " + std::to_string(pid) + " is another user's";
    return false;
  }
  struct stat object {};
  if (!object_stat(name, &object)) {
    *why = "its endpoint has no shm region to answer";
    return false;
  }
  if (object.st_uid != geteuid()) {
    *why = "its endpoint's shm region is another user's";
    return false;
  }
  if (seen_mapped().has(name, pid, object)) return true;
  if (!maps_object(pid, name)) {
    *why = "process " + std::to_string(pid) + " does not map its endpoint's shm region";
    return false;
  }
  seen_mapped().add(name, pid, object);
  return true;
}

bool region_of(const std::string &name, pid_t pid) {
  uid_t owner = 0;
  return pid > 0 && name_pid(name) == pid && object_owner(name, &owner) && owner == geteuid();
}

}  // namespace naa::transport::ofi::shm
