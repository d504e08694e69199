// SPDX-License-Identifier: BSD-3-Clause
#include "handshake_sweeper.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "log.hpp"

namespace naa::server {
namespace {

// The TCP_INFO field that tells an unanswered connection (Linux 4.19 and later).
constexpr socklen_t kNeedInfo = offsetof(tcp_info, tcpi_bytes_sent) + sizeof(tcp_info::tcpi_bytes_sent);

uint16_t local_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in &>(addr).sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6 &>(addr).sin6_port);
  return 0;
}

std::string remote_host(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  char text[INET6_ADDRSTRLEN] = "?";
  if (getpeername(fd, reinterpret_cast<sockaddr *>(&addr), &len) == 0) {
    if (addr.ss_family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in &>(addr).sin_addr, text, sizeof text);
    else if (addr.ss_family == AF_INET6)
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6 &>(addr).sin6_addr, text, sizeof text);
  }
  return text;
}

}  // namespace

HandshakeSweeper::HandshakeSweeper(uint16_t port, std::chrono::milliseconds timeout)
    : port_(port), timeout_(timeout), fd_dir_(opendir("/proc/self/fd")), thread_([this] { run(); }) {
  if (fd_dir_ == nullptr)
    NAA_LOG_WARN("cannot read /proc/self/fd: unfinished connections are not timed out");
}

HandshakeSweeper::~HandshakeSweeper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (fd_dir_ != nullptr) closedir(fd_dir_);
}

void HandshakeSweeper::run() {
  // Twice per deadline at least, so that no connection outlives it by more than half of it.
  const auto period = std::min<std::chrono::milliseconds>(timeout_ / 2, std::chrono::milliseconds(500));
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    lock.unlock();
    sweep();
    lock.lock();
  }
}

void HandshakeSweeper::sweep() {
  DIR *dir = fd_dir_;
  if (dir == nullptr) return;
  rewinddir(dir);
  unsigned closed = 0;
  std::string last_host;
  const auto now = std::chrono::steady_clock::now();
  std::map<ino_t, std::chrono::steady_clock::time_point> seen;
  while (dirent *e = readdir(dir)) {
    char *end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || fd < 0 || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (local_port(static_cast<int>(fd)) != port_) continue;
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening)
      continue;
    tcp_info info{};
    len = sizeof info;
    if (getsockopt(static_cast<int>(fd), IPPROTO_TCP, TCP_INFO, &info, &len) != 0 || len < kNeedInfo)
      continue;
    // Answered connections have sent the accept or the reject.
    if (info.tcpi_bytes_sent != 0) continue;
    // Aged from the first sweep that saw it (at most a period after it was accepted), so
    // that a request trickling in byte by byte meets the same deadline.
    auto [it, fresh] = first_seen_.emplace(st.st_ino, now);
    seen.emplace(st.st_ino, it->second);
    if (now - it->second < timeout_) continue;
    // A request still unread waits behind another one the provider is stuck on (18.2): it
    // gets the time to be read once that one is gone, up to three deadlines in all.
    int unread = 0;
    if (ioctl(static_cast<int>(fd), FIONREAD, &unread) == 0 && unread > 0 && now - it->second < 3 * timeout_)
      continue;
    last_host = remote_host(static_cast<int>(fd));
    shutdown(static_cast<int>(fd), SHUT_RDWR);
    ++closed;
  }
  first_seen_.swap(seen);  // forgets the sockets that are gone
  // One line per sweep, however many: a flood of half-open connections cannot flood the log.
  if (closed != 0)
    NAA_LOG_WARN("closed %u connection(s) not completed within %ld ms (--handshake-timeout; "
                 "last from %s)", closed, static_cast<long>(timeout_.count()), last_host.c_str());
}

}  // namespace naa::server
