// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/shm/bell.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>

#include "diag/log.hpp"
#include "transport/interruptible_nap.hpp"
#include "transport/ofi/shm/names.hpp"
#include "transport/ofi/shm/request.hpp"

namespace naa::transport::ofi::shm {
namespace {

constexpr size_t kPage = 4096;
static_assert((kBellCpuWord + 1) * sizeof(uint32_t) <= kPage, "the CPU word is on the page");

// The abstract socket (no file left behind by a killed process) of the bell page `object`.
socklen_t bell_address(const std::string &object, sockaddr_un *addr) {
  *addr = {};
  addr->sun_family = AF_UNIX;
  const size_t len = std::min(object.size() - 1, sizeof addr->sun_path - 1);
  std::memcpy(addr->sun_path + 1, object.data() + 1, len);  // without the object's '/'
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + len);
}

std::atomic<uint32_t> *map_word(int fd) {
  void *p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<std::atomic<uint32_t> *>(p);
}

void unmap_word(std::atomic<uint32_t> *word) {
  if (word != nullptr) munmap(word, kPage);
}

}  // namespace

std::string bell_object(const std::string &name) {
  const std::string object = region_object(name);
  if (object.size() < 2 || object.find('/', 1) != std::string::npos) return {};
  return object + ".bell";
}

std::string listener_bell_object(const std::string &address) {
  const std::string text(address.c_str());  // FI_ADDR_STR: up to its NUL
  if (text.rfind(kListenerAddressPrefix, 0) != 0) return {};
  const std::string service = text.substr(sizeof kListenerAddressPrefix - 1);
  if (service.empty() || service.find('/') != std::string::npos) return {};
  return "/" + service + ".bell";
}

Bell::Bell(const std::string &object) : object_(object) {
  if (object_.empty()) return;
  // An endpoint's region's name is new (give_unique_source), so is its bell's; a listener
  // removes a dead server's page once it holds the name.
  int fd = shm_open(object_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    if (ftruncate(fd, kPage) == 0) word_ = map_word(fd);
    ::close(fd);
  }
  if (word_ != nullptr) {
    sockaddr_un addr;
    const socklen_t len = bell_address(object_, &addr);
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr *>(&addr), len) == 0) return;
  }
  NAA_LOG_INFO("shm %s: no bell (%s); its waits are naps", object_.c_str() + 1, strerror(errno));
  if (fd >= 0) shm_unlink(object_.c_str());
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  unmap_word(word_);
  word_ = nullptr;
  object_.clear();
}

Bell::~Bell() {
  if (fd_ >= 0) ::close(fd_);
  unmap_word(word_);
  if (!object_.empty()) shm_unlink(object_.c_str());
}

void Bell::raise() {
  publish_cpu();
  word_->exchange(1, std::memory_order_seq_cst);
}

void Bell::lower() {
  word_->store(0, std::memory_order_relaxed);
  char rings[64];
  while (recv(fd_, rings, sizeof rings, 0) > 0) {
  }
}

Bell::Woken Bell::sleep(Deadline::Clock::duration timeout, int interrupt) {
  if (!ok()) return nap_unless_interrupted(interrupt, timeout) ? Woken::ByInterrupt : Woken::No;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::max(timeout, Deadline::Clock::duration::zero()))
                      .count();
  const timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  pollfd p[2] = {{fd_, POLLIN, 0}, {interrupt, POLLIN, 0}};
  const int n = ::ppoll(p, interrupt >= 0 ? 2 : 1, &ts, nullptr);
  lower();
  if (n <= 0) return Woken::No;
  if (interrupt >= 0 && p[1].revents != 0) return Woken::ByInterrupt;
  return Woken::ByRing;
}

// The name came from the peer: only a page of this user's, whole (a shorter file would fault
// at the first look), is mapped.
BellRope::BellRope(const std::string &object) : object_(object) {
  if (object.empty()) return;
  int fd = shm_open(object.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
  if (fd < 0) return;  // an older libnaa: it naps
  has_bell_ = true;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
      st.st_size >= static_cast<off_t>(kPage))
    word_ = map_word(fd);
  if (word_ != nullptr) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  ::close(fd);
  if (word_ == nullptr)
    NAA_LOG_INFO("shm peer %s: its bell's page cannot be mapped; every post rings it",
                 object.c_str() + 1);
  sockaddr_un addr;
  socket_name_.assign(reinterpret_cast<const char *>(&addr), bell_address(object, &addr));
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

BellRope::~BellRope() {
  if (fd_ >= 0) ::close(fd_);
  unmap_word(word_);
}

// One stat where a new rope takes an shm_open, an fstat, an mmap and a socket (a share of each
// side's warm naa_create, doc/performance.md).
bool BellRope::still_for(const std::string &object) const {
  if (ino_ == 0 || object != object_) return false;
  struct stat st {};
  return stat(object_path(object_).c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

void BellRope::ring() noexcept {
  const char ring = 1;
  if (fd_ < 0 ||
      sendto(fd_, &ring, 1, MSG_NOSIGNAL, reinterpret_cast<const sockaddr *>(socket_name_.data()),
             static_cast<socklen_t>(socket_name_.size())) != 1)
    NAA_LOG_DEBUG("shm peer's bell not rung (%s): it sees the post after its sleep",
                  fd_ < 0 ? "no socket" : strerror(errno));
}

}  // namespace naa::transport::ofi::shm
