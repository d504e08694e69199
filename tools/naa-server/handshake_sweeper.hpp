// SPDX-License-Identifier: BSD-3-Clause
// Bounds the connection requests that libfabric 1.17's tcp provider holds for naa-server
// before it hands them over as FI_CONNREQ. That provider accepts every TCP
// connection at once, waits for its first byte for ever, and then reads the request with a
// blocking recv(MSG_WAITALL) on the thread that waits for connection requests; none of this
// is reachable through the libfabric API. Two bounds, neither of which acts on a descriptor
// another thread owns:
//
// - A receive timeout on the listening socket (SO_RCVTIMEO; Linux copies it into every socket
//   accepted from it), so that libfabric's blocking recv() of a request that stops half way
//   fails after kReceiveBound and libfabric closes the socket itself. This is what keeps one
//   stalled request from delaying the other clients by more than that bound.
// - A sweep for connections that are not handed over within --handshake-timeout: those that
//   never send a byte (a receive timeout cannot reach them: libfabric never reads them), and
//   those left half read when the receive timed out (libfabric 1.17 keeps them, waiting for
//   more). When descriptors run short, silent connections go at the next sweep instead.
//   The sockets of such requests belong to the thread that runs
//   the listener's fi_eq_sread(): libfabric accepts, reads and closes them only inside that
//   call, until it hands one over as FI_CONNREQ. sweep() therefore runs on that thread,
//   between two waits, and shuts down only sockets on the port that no served client holds
//   (the caller says which peers are served); libfabric then sees the end of the connection
//   and closes it. The sockets are found through /proc (readlink of /proc/self/fd/N, and
//   /proc/net/tcp{,6}), which reads no other thread's descriptor; the handles stay open so
//   that a sweep needs no descriptor when the process has run out of them (18.3).
//   While it has nothing to look at it is not looked at all: see next_due() and stir(). An
//   idle naa-server's listener then sleeps until a request or the stop.
//   Two cheaper looks come first. A sweep after one that left nothing waiting ends at once
//   when no TCP connection was accepted anywhere on the host since (PassiveOpens of
//   /proc/net/snmp). Else the kernel's socket diagnostics (NETLINK_SOCK_DIAG, what ss(8)
//   reads) list the port's sockets: when each is the listener or a served client's, the
//   descriptors are not read (their links cost ~2 us each: 60-185 ms a sweep for 1000
//   clients' ~9000 descriptors; a dump walks the host's TCP hash, ~3 ms here). Where the
//   kernel offers no diagnostics, the sweep reads /proc/net/tcp{,6} instead.
// - A bound per source host on the connections waiting to be handed over (per_source): a
//   host that opens connections faster than they time out (a connect flood) loses its
//   oldest silent ones at once, beyond that many, so that the flood holds neither the
//   descriptors nor the listener's passes that the other hosts' clients need. A sweep finds
//   the excess: the next look, where the host accepted more than per_source TCP
//   connections since the last sweep (PassiveOpens), else the next sweep; while there is
//   one, each look is a sweep. One line when a burst begins, one when it ends.
//
// Rejected designs: a sweeper thread (the first version) inspected and shut down descriptors
// owned by other threads, which may be closed and reused between its look and its shutdown
// (TSan reported it); an accept front end of our own cannot hand an accepted socket to
// libfabric, so it would have to relay every byte.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/types.h>

namespace naa::server {

class HandshakeSweeper {
 public:
  using Clock = std::chrono::steady_clock;
  // A request whose bytes stop arriving for this long is dropped (by libfabric): a client
  // sends its request in one go, so this only has to cover a scheduler hiccup between two
  // send() calls of the client, and it is how long one stalled request can hold the others.
  static constexpr std::chrono::milliseconds kReceiveBound{1000};
  // Descriptors kept free for the clients' sessions (endpoint, queues, shared regions).
  static constexpr unsigned kSpareDescriptors = 16;

  // Where the sockets on the port are listed from: the kernel's diagnostics, while they
  // answer, or /proc/net/tcp{,6} (also where they do not).
  enum class Listing { Kernel, Proc };

  // On the thread that opened the listener, before any other thread serves it. per_source:
  // connections from one host that may wait to be handed over (0: no bound).
  HandshakeSweeper(uint16_t port, std::chrono::milliseconds timeout,
                   Listing listing = Listing::Kernel, unsigned per_source = 0);
  ~HandshakeSweeper();
  HandshakeSweeper(const HandshakeSweeper &) = delete;
  HandshakeSweeper &operator=(const HandshakeSweeper &) = delete;

  // When the next look (or sweep) is due; never (time_point::max()) while it is quiet: a
  // sweep found nothing waiting and no connection came since, so there is nothing to look
  // at. The listener's thread sleeps to it.
  Clock::time_point next_due() const { return quiet_ ? Clock::time_point::max() : next_look_; }
  bool due(Clock::time_point now) const { return now >= next_due(); }
  // Something came on the port (a request, or a wake-up of the listener that brought a
  // connection's socket): the looks resume, the first a look period from now.
  void stir(Clock::time_point now);
  // On the listener's thread, between two waits for a request: shuts down the connections to
  // the port that sent nothing for `timeout` and are not one of `served` ("ip:port" as
  // transport::Endpoint::peer() spells it).
  void sweep(const std::set<std::string> &served);
  // For tests: sweeps that listed the port's sockets, how many the last listing held, those
  // that read the links of /proc/self/fd (none while all are served, when the kernel lists the
  // sockets), and whether the kernel does.
  unsigned long listings() const { return listings_; }
  size_t last_listing() const { return last_listing_; }
  unsigned long descriptor_scans() const { return descriptor_scans_; }
  bool lists_from_kernel() const { return diag_fd_ >= 0; }
  // For tests: connections closed beyond per_source, in all.
  unsigned long flood_closed() const { return flood_closed_; }
  // For tests: the next request to the kernel is sent but its answer left unread, as one that
  // does not come within the receive timeout (a slow dump under load) or a signal leaves it.
  void lose_next_answer() { lose_answer_ = true; }

 private:
  struct TcpSocket {
    std::string remote;  // "ip:port" or "[ip6]:port"
    bool listening;
    bool unread;  // bytes received that nobody has read yet
  };
  // The port's sockets from the kernel's socket diagnostics: false where it gave none this
  // time (the caller reads /proc/net/tcp{,6} once instead); where it cannot answer at all, it
  // is not asked again.
  bool kernel_listing(std::map<ino_t, TcpSocket> *out);
  std::map<ino_t, TcpSocket> proc_listing() const;
  long long passive_opens() const;  // -1 where unknown
  void read_table(int fd, bool v6, std::map<ino_t, TcpSocket> *out) const;
  // A listing with no answer (Never: the kernel refused the request, or it could not be sent),
  // or none this time (NotNow: no answer within the receive timeout, or a signal).
  enum class Answer { Listed, NotNow, Never };
  Answer ask_kernel(uint8_t family, std::map<ino_t, TcpSocket> *out);
  // f(fd, inode) for every socket descriptor; returns how many descriptors are open.
  template <typename F>
  unsigned for_each_socket_fd(F &&f) const;
  void bound_receives();
  // A connection waiting to be handed over, as a sweep saw it.
  struct Waiting {
    Clock::time_point first_seen;
    ino_t inode;
    int fd;
    bool silent;  // no unread bytes: libfabric is not about to read it
  };
  // Shuts down, per host with more than per_source_ connections waiting, its oldest silent
  // ones beyond that; logs the start and the end of a burst. Returns the descriptors shut.
  std::set<int> bound_per_source(const std::map<std::string, std::vector<Waiting>> &by_host);

  const uint16_t port_;
  const std::chrono::milliseconds timeout_;
  const unsigned per_source_;
  const Clock::duration period_;       // of the sweeps
  const Clock::duration look_period_;  // of the looks for a shortage of descriptors between them
  DIR *const fd_dir_;
  const int tcp_fd_, tcp6_fd_;
  int diag_fd_;  // NETLINK_SOCK_DIAG, or -1: /proc/net/tcp{,6} instead
  const int snmp_fd_;
  long long quiet_opens_ = -1;  // PassiveOpens when a sweep began that left nothing waiting
  uint32_t diag_seq_ = 0;
  bool dump_unread_ = false;  // a dump given up on may still be under way on diag_fd_
  bool lose_answer_ = false;
  std::map<ino_t, Clock::time_point> first_seen_;
  std::set<ino_t> settled_;     // our sockets that the last read of the table found harmless
  std::set<ino_t> shut_;        // shut down by a sweep; libfabric has yet to close them
  bool flooding_ = false;       // the last sweep found a host beyond per_source_
  long long sweep_opens_ = -1;  // PassiveOpens when the last sweep began
  unsigned long burst_closed_ = 0;
  unsigned long flood_closed_ = 0;
  Clock::time_point next_look_;
  Clock::time_point next_sweep_;
  // No look is due until stir(): from the start (every connection wakes the listener, which
  // stirs), and after a sweep that left nothing waiting with descriptors to spare.
  bool quiet_ = true;
  unsigned long listings_ = 0;
  size_t last_listing_ = 0;
  unsigned long descriptor_scans_ = 0;
};

}  // namespace naa::server
