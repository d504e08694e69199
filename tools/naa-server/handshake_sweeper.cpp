// SPDX-License-Identifier: BSD-3-Clause
#include "handshake_sweeper.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>
#include <vector>

#include "diag/log.hpp"
#include "transport/descriptor_gate.hpp"

namespace naa::server {
namespace {

constexpr int kTcpListen = 0x0a;  // st column of /proc/net/tcp (include/net/tcp_states.h)

// "0100007F:1F90" (as /proc/net/tcp prints a struct sockaddr: the address's bytes in memory
// order, 32 bits at a time, and the port in host order) in Endpoint::peer()'s spelling.
std::string peer_name(const std::string &hex, bool v6) {
  size_t colon = hex.find(':');
  if (colon == std::string::npos) return "?";
  unsigned port = static_cast<unsigned>(std::strtoul(hex.c_str() + colon + 1, nullptr, 16));
  uint32_t words[4] = {};
  const size_t n = v6 ? 4 : 1;
  if (colon != 8 * n) return "?";
  for (size_t i = 0; i < n; ++i)
    words[i] = static_cast<uint32_t>(std::strtoul(hex.substr(8 * i, 8).c_str(), nullptr, 16));
  char ip[INET6_ADDRSTRLEN] = "?";
  inet_ntop(v6 ? AF_INET6 : AF_INET, words, ip, sizeof ip);
  return v6 ? "[" + std::string(ip) + "]:" + std::to_string(port)
            : std::string(ip) + ":" + std::to_string(port);
}

}  // namespace

HandshakeSweeper::HandshakeSweeper(uint16_t port, std::chrono::milliseconds timeout,
                                   Listing listing, unsigned per_source)
    : port_(port),
      timeout_(timeout),
      per_source_(per_source),
      // Four sweeps per deadline: a silent connection outlives it by half at most (seen up to
      // a sweep after it came, closed up to a sweep after its deadline).
      period_(timeout / 4),
      look_period_(std::min<Clock::duration>(period_, std::chrono::milliseconds(500))),
      fd_dir_(opendir("/proc/self/fd")),
      tcp_fd_(open("/proc/net/tcp", O_RDONLY | O_CLOEXEC)),
      tcp6_fd_(open("/proc/net/tcp6", O_RDONLY | O_CLOEXEC)),
      diag_fd_(listing == Listing::Kernel
                   ? socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)
                   : -1),
      snmp_fd_(open("/proc/net/snmp", O_RDONLY | O_CLOEXEC)),
      next_look_(Clock::now() + look_period_),
      next_sweep_(Clock::now() + period_) {
  // The kernel answers a dump at once: the bound is for a kernel that does not.
  const timeval answer_bound{1, 0};
  if (diag_fd_ >= 0)
    setsockopt(diag_fd_, SOL_SOCKET, SO_RCVTIMEO, &answer_bound, sizeof answer_bound);
  if (fd_dir_ == nullptr || tcp_fd_ < 0)
    NAA_LOG_WARN(
        "cannot read /proc/self/fd or /proc/net/tcp: connections that send nothing are "
        "not timed out (--handshake-timeout) and a stalled request is not bounded");
  else
    bound_receives();
  // The probe holds a descriptor of its own for life: taken now, not at the first look.
  transport::descriptors_spare(kSpareDescriptors);
  sweep_opens_ = passive_opens();
}

HandshakeSweeper::~HandshakeSweeper() {
  if (fd_dir_ != nullptr) closedir(fd_dir_);
  if (tcp_fd_ >= 0) close(tcp_fd_);
  if (tcp6_fd_ >= 0) close(tcp6_fd_);
  if (diag_fd_ >= 0) close(diag_fd_);
  if (snmp_fd_ >= 0) close(snmp_fd_);
}

// The "Tcp:" lines of /proc/net/snmp: the names, then the values.
long long HandshakeSweeper::passive_opens() const {
  char text[4096];
  const ssize_t n = snmp_fd_ < 0 ? -1 : pread(snmp_fd_, text, sizeof text - 1, 0);
  if (n <= 0) return -1;
  text[n] = '\0';
  const char *names = strstr(text, "\nTcp: ");
  const char *values = names == nullptr ? nullptr : strstr(names + 1, "\nTcp: ");
  if (values == nullptr) return -1;
  std::istringstream name_line(std::string(names + 6, values)), value_line(values + 6);
  std::string name, value;
  while (name_line >> name && value_line >> value)
    if (name == "PassiveOpens") return std::strtoll(value.c_str(), nullptr, 10);
  return -1;
}

void HandshakeSweeper::read_table(int fd, bool v6, std::map<ino_t, TcpSocket> *out) const {
  if (fd < 0 || lseek(fd, 0, SEEK_SET) != 0) return;
  std::string text;
  char buf[16384];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    std::istringstream f(line);
    std::string sl, local, remote, st, queues, timer, retr, uid, tmo;
    unsigned long inode = 0;
    if (!(f >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> tmo >> inode) ||
        inode == 0)
      continue;
    size_t colon = local.find(':');
    if (colon == std::string::npos || std::strtoul(local.c_str() + colon + 1, nullptr, 16) != port_)
      continue;
    size_t q = queues.find(':');
    bool unread = q != std::string::npos && std::strtoul(queues.c_str() + q + 1, nullptr, 16) != 0;
    (*out)[static_cast<ino_t>(inode)] = TcpSocket{
        peer_name(remote, v6), std::strtoul(st.c_str(), nullptr, 16) == kTcpListen, unread};
  }
}

HandshakeSweeper::Answer HandshakeSweeper::ask_kernel(uint8_t family,
                                                      std::map<ino_t, TcpSocket> *out) {
  alignas(nlmsghdr) char buf[16384];
  // The rest of a dump given up on is read to its end first: the kernel refuses a second dump
  // on a socket (EBUSY) while one is under way, and reading is what moves it on.
  if (dump_unread_) {
    while (recv(diag_fd_, buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
    dump_unread_ = false;
  }
  struct {
    nlmsghdr head;
    inet_diag_req_v2 request;
    nlattr filter;
    inet_diag_bc_op ops[4];
  } ask{};
  ask.head.nlmsg_len = sizeof ask;
  ask.head.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.head.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  ask.head.nlmsg_seq = ++diag_seq_;
  ask.request.sdiag_family = family;
  ask.request.sdiag_protocol = IPPROTO_TCP;
  ask.request.idiag_states = ~0u;
  // The kernel keeps only the sockets whose local port is ours: port >= ours and <= ours. A
  // compare passes to the next op, or jumps 4 bytes past the end, which rejects the socket;
  // the op after each compare holds the port.
  ask.filter.nla_len = sizeof ask.filter + sizeof ask.ops;
  ask.filter.nla_type = INET_DIAG_REQ_BYTECODE;
  ask.ops[0] = {INET_DIAG_BC_S_GE, 8, 20};
  ask.ops[1] = {0, 0, port_};
  ask.ops[2] = {INET_DIAG_BC_S_LE, 8, 12};
  ask.ops[3] = {0, 0, port_};
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(diag_fd_, &ask, sizeof ask, 0, reinterpret_cast<sockaddr *>(&kernel), sizeof kernel) <
      0)
    return Answer::Never;
  if (lose_answer_) {
    lose_answer_ = false;
    dump_unread_ = true;
    return Answer::NotNow;
  }
  for (;;) {
    // A slow answer (the receive timeout: EAGAIN) or a signal (EINTR: a socket with a timeout
    // is not restarted) costs this sweep its listing, not the later ones theirs: a dump under
    // load is slow now and then, and /proc/net/tcp is what the kernel listing saves.
    ssize_t n = recv(diag_fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      dump_unread_ = true;
      return Answer::NotNow;
    }
    for (auto *h = reinterpret_cast<nlmsghdr *>(buf); NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_seq != diag_seq_) continue;  // the rest of an answer given up on
      if (h->nlmsg_type == NLMSG_DONE) return Answer::Listed;
      if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
          h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
        return Answer::Never;  // NLMSG_ERROR: no diagnostics for TCP (tcp_diag not loaded)
      const auto *m = static_cast<const inet_diag_msg *>(NLMSG_DATA(h));
      if (m->idiag_inode == 0) continue;  // a request or a TIME_WAIT: no descriptor
      char ip[INET6_ADDRSTRLEN] = "?";
      inet_ntop(family, m->id.idiag_dst, ip, sizeof ip);
      const std::string port = std::to_string(ntohs(m->id.idiag_dport));
      (*out)[static_cast<ino_t>(m->idiag_inode)] = TcpSocket{
          family == AF_INET6 ? "[" + std::string(ip) + "]:" + port : std::string(ip) + ":" + port,
          m->idiag_state == TCP_LISTEN, m->idiag_rqueue != 0};
    }
  }
}

bool HandshakeSweeper::kernel_listing(std::map<ino_t, TcpSocket> *out) {
  Answer a = ask_kernel(AF_INET, out);
  if (a == Answer::Listed && tcp6_fd_ >= 0) a = ask_kernel(AF_INET6, out);
  if (a == Answer::Listed) return true;
  out->clear();
  if (a == Answer::NotNow) {
    NAA_LOG_DEBUG(
        "the kernel's socket diagnostics did not answer in time: this handshake sweep "
        "reads /proc/net/tcp");
    return false;
  }
  NAA_LOG_INFO(
      "the kernel's socket diagnostics do not answer for TCP: the handshake sweeps read "
      "/proc/net/tcp instead");
  close(diag_fd_);
  diag_fd_ = -1;
  return false;
}

std::map<ino_t, HandshakeSweeper::TcpSocket> HandshakeSweeper::proc_listing() const {
  std::map<ino_t, TcpSocket> sockets;
  read_table(tcp_fd_, false, &sockets);
  read_table(tcp6_fd_, true, &sockets);
  return sockets;
}

template <typename F>
unsigned HandshakeSweeper::for_each_socket_fd(F &&f) const {
  unsigned fds = 0;
  if (fd_dir_ == nullptr) return fds;
  rewinddir(fd_dir_);
  while (dirent *e = readdir(fd_dir_)) {
    fds += e->d_name[0] != '.';
    // The link's text, not the descriptor: reading it cannot disturb another thread's fd.
    char target[64];
    ssize_t n = readlinkat(dirfd(fd_dir_), e->d_name, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    unsigned long inode = 0;
    if (std::sscanf(target, "socket:[%lu]", &inode) == 1)
      f(std::atoi(e->d_name), static_cast<ino_t>(inode));
  }
  return fds;
}

void HandshakeSweeper::bound_receives() {
  std::map<ino_t, TcpSocket> sockets;
  if (diag_fd_ < 0 || !kernel_listing(&sockets)) sockets = proc_listing();
  timeval tv{static_cast<time_t>(kReceiveBound.count() / 1000),
             static_cast<suseconds_t>(kReceiveBound.count() % 1000 * 1000)};
  unsigned bounded = 0;
  // Only the listening socket itself, which the listener (opened on this thread) holds.
  for_each_socket_fd([&](int fd, ino_t inode) {
    auto it = sockets.find(inode);
    if (it != sockets.end() && it->second.listening &&
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0)
      ++bounded;
  });
  if (bounded == 0)
    NAA_LOG_WARN(
        "found no listening TCP socket on port %u: a stalled connection request can hold "
        "the others",
        static_cast<unsigned>(port_));
}

void HandshakeSweeper::stir(Clock::time_point now) {
  if (!quiet_) return;
  quiet_ = false;
  next_look_ = now + look_period_;
}

void HandshakeSweeper::sweep(const std::set<std::string> &served) {
  const auto now = Clock::now();
  next_look_ = now + look_period_;
  // A sweep may read the link of every descriptor in /proc/self/fd: about 5 ms with 64 tcp
  // clients' descriptors, which twice a second was most of an idle server's 1 % of a core.
  // Between sweeps only a shortage is looked for, with a probe of a few system calls.
  const bool spare = transport::descriptors_spare(kSpareDescriptors);
  // With a bound per source, a look also reads how many TCP connections the host accepted
  // since the last sweep (PassiveOpens, one read of /proc/net/snmp): more than the bound, and
  // a flood may have begun, so the sweep comes now rather than up to a period later.
  const bool burst = per_source_ != 0 && !flooding_ && now < next_sweep_ && spare &&
                     passive_opens() - sweep_opens_ > static_cast<long long>(per_source_);
  if (now < next_sweep_ && spare && !flooding_ && !burst) return;
  next_sweep_ = now + period_;
  quiet_ = false;  // until this sweep finds nothing waiting
  // Read before the listing: a connection accepted meanwhile is looked at by the next sweep.
  const long long opens = passive_opens();
  sweep_opens_ = opens;
  if (spare && opens >= 0 && opens == quiet_opens_) {  // no connection since: none waits
    quiet_ = true;
    return;
  }
  quiet_opens_ = -1;
  ++listings_;
  // The kernel's list of the port's sockets, where it gives one: when each is the listener or
  // a served client's, no request can be waiting, and the descriptors need not be read.
  std::map<ino_t, TcpSocket> sockets;
  const bool from_kernel = diag_fd_ >= 0 && kernel_listing(&sockets);
  if (from_kernel) last_listing_ = sockets.size();
  if (from_kernel && std::all_of(sockets.begin(), sockets.end(), [&](const auto &s) {
        return s.second.listening || served.count(s.second.remote) != 0;
      })) {
    first_seen_.clear();
    shut_.clear();
    bound_per_source({});  // nothing waits: a burst has ended
    quiet_opens_ = opens;
    quiet_ = spare;
    return;
  }
  ++descriptor_scans_;
  std::vector<std::pair<int, ino_t>> socket_fds;
  const unsigned fds =
      for_each_socket_fd([&](int fd, ino_t inode) { socket_fds.emplace_back(fd, inode); });
  // Out of descriptors (18.3), libfabric accepts a silent connection into every one that is
  // freed and the clients' sessions get none: then every silent connection that has seen one
  // sweep goes at once, and the sweeps follow each other until there is room again.
  rlimit limit{};
  const bool scarce = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
                      fds + kSpareDescriptors >= limit.rlim_cur;
  next_sweep_ = scarce ? now : now + period_;
  if (scarce) next_look_ = now;
  if (!from_kernel) {
    // /proc/net/tcp lists every TCP socket of the host: 22379 of them (3.4 MB of text, 0.1 s
    // to read, 1900 page faults of this thread) on a test machine that flood tests had used,
    // twice a second beside the sessions' spinning threads (doc/performance.md). It is read
    // only when one of our sockets is new since the last read or was a request still waiting.
    const bool all_settled = first_seen_.empty() &&
                             std::all_of(socket_fds.begin(), socket_fds.end(), [&](const auto &s) {
                               return settled_.count(s.second) != 0;
                             });
    if (all_settled && !scarce) {
      bound_per_source({});  // nothing waits: a burst has ended
      quiet_opens_ = opens;
      quiet_ = spare;
      return;
    }
    sockets = proc_listing();
    last_listing_ = sockets.size();
  }
  std::map<ino_t, Clock::time_point> seen;
  std::set<ino_t> settled, shut;
  std::vector<std::pair<Clock::time_point, int>> silent;  // first seen, fd
  std::map<int, std::string> peer_of;
  std::map<std::string, std::vector<Waiting>> by_host;
  for (const auto &[fd, inode] : socket_fds) {
    auto it = sockets.find(inode);
    // Another port's socket, the listener or a served client's: none of them can turn into a
    // waiting request (a socket keeps its port, and a served one was handed over already).
    // The kernel's listing is taken before the descriptors are read: a socket missing from it
    // may be a request accepted meanwhile, which the next sweep looks at, so only /proc's
    // (read after them) settles it.
    if (it == sockets.end()) {
      if (!from_kernel) settled.insert(inode);
      continue;
    }
    if (it->second.listening || served.count(it->second.remote) != 0) {
      settled.insert(inode);
      continue;
    }
    // Aged from the first sweep that saw it, at most a period after libfabric accepted it.
    auto first = first_seen_.emplace(inode, now).first->second;
    seen.emplace(inode, first);
    if (shut_.count(inode) != 0) {  // shut down already: libfabric closes it on its next pass
      shut.insert(inode);
      continue;
    }
    const std::string &remote = it->second.remote;
    by_host[remote.substr(0, remote.rfind(':'))].push_back(
        Waiting{first, inode, fd, !it->second.unread});
    // Unread bytes: libfabric reads them on its next pass, bounded by kReceiveBound.
    if (it->second.unread) continue;
    silent.emplace_back(first, fd);
    peer_of[fd] = remote;
  }
  first_seen_.swap(seen);  // forgets the sockets that are gone
  settled_.swap(settled);
  const std::set<int> flood_shut = bound_per_source(by_host);
  for (const auto &[fd, inode] : socket_fds)
    if (flood_shut.count(fd) != 0) shut.insert(inode);
  shut_.swap(shut);
  if (first_seen_.empty() && !scarce) {
    quiet_opens_ = opens;
    quiet_ = spare;
  }
  unsigned closed = 0;
  std::string last_peer;
  for (const auto &[first, fd] : silent) {
    if (flood_shut.count(fd) != 0) continue;
    if (now - first < (scarce ? Clock::duration(1) : Clock::duration(timeout_))) continue;
    // Not closed here: libfabric owns the descriptor, sees the end and closes it.
    shutdown(fd, SHUT_RDWR);
    last_peer = peer_of[fd];
    ++closed;
  }
  // One line per sweep, however many: a flood of silent connections cannot flood the log.
  if (closed != 0)
    NAA_LOG_WARN(
        "closed %u connection(s) that sent no request within %ld ms (--handshake-timeout%s; "
        "last from %s)",
        closed, static_cast<long>(timeout_.count()), scarce ? ", sooner: out of descriptors" : "",
        last_peer.c_str());
}

std::set<int> HandshakeSweeper::bound_per_source(
    const std::map<std::string, std::vector<Waiting>> &by_host) {
  std::set<int> shut;
  if (per_source_ == 0) return shut;
  std::string first_host;
  for (const auto &[host, waiting] : by_host) {
    if (waiting.size() <= per_source_) continue;
    std::vector<Waiting> oldest;
    for (const Waiting &w : waiting)
      if (w.silent) oldest.push_back(w);
    // Oldest first: the first sweep that saw it, then the kernel's order of creation.
    std::sort(oldest.begin(), oldest.end(), [](const Waiting &a, const Waiting &b) {
      return a.first_seen != b.first_seen ? a.first_seen < b.first_seen : a.inode < b.inode;
    });
    oldest.resize(std::min(oldest.size(), waiting.size() - per_source_));
    for (const Waiting &w : oldest) {
      // Not closed here: libfabric owns the descriptor, sees the end and closes it.
      shutdown(w.fd, SHUT_RDWR);
      shut.insert(w.fd);
    }
    if (first_host.empty()) first_host = host;
  }
  if (!first_host.empty()) {
    if (!flooding_)
      NAA_LOG_WARN(
          "connection flood from %s: closing its oldest connections that sent no request "
          "beyond %u waiting (--handshake-per-source) until it ends",
          first_host.c_str(), per_source_);
    flooding_ = true;
    burst_closed_ += shut.size();
    flood_closed_ += shut.size();
  } else if (flooding_) {
    NAA_LOG_WARN(
        "the connection flood ended: %lu connection(s) closed beyond --handshake-per-source",
        burst_closed_);
    flooding_ = false;
    burst_closed_ = 0;
  }
  return shut;
}

}  // namespace naa::server
