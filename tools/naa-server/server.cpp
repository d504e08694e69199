// SPDX-License-Identifier: BSD-3-Clause
#include "server.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <fstream>

#include "connection.hpp"
#include "option_choice.hpp"
#include "error.hpp"
#include "diag/log.hpp"
#include "config/params.hpp"
#include "transport/params.hpp"
#include "transport/descriptor_gate.hpp"
#include "transport/registry.hpp"

namespace naa::server {
namespace {

// How often a listening thread looks for the stop where its listener cannot sleep through to
// the deadline (transport::Listener::interrupt_on), and the least gap between two sweeps that
// follow each other while descriptors run short (handshake_sweeper.hpp) but for requests.
constexpr auto kAcceptSlice = std::chrono::milliseconds(200);
// A listening thread with no housekeeping pending sleeps until a request, a ring of its
// ListenerWake or the stop: this only bounds the sleep, as for idle connections.
constexpr auto kLongestSleep = std::chrono::hours(24);
// Threads kept parked for the next clients (worker_pool.hpp): a client that reconnects or a
// program that creates handles one after another finds one; after a second without a client
// an idle server has none left.
constexpr size_t kParkedWorkers = 4;
// Regions of finished connections are kept as long (region_pool.hpp).
constexpr auto kRegionsKept = std::chrono::seconds(1);

// How long a parked thread and a finished connection's regions wait for the next client:
// kRegionsKept. For the test suite only (naa-server(1), ENVIRONMENT), NAA_SERVER_TEST_KEEP_MS
// sets it, so that a test looks at what is parked or kept before it goes on however loaded a
// machine, instead of racing the second.
std::chrono::milliseconds kept_time() {
  static const std::chrono::milliseconds kept = [] {
    const char *v = std::getenv("NAA_SERVER_TEST_KEEP_MS");
    char *end = nullptr;
    const long ms = v != nullptr ? std::strtol(v, &end, 10) : 0;
    if (v == nullptr || *v == '\0' || *end != '\0' || ms <= 0)
      return std::chrono::milliseconds(kRegionsKept);
    return std::chrono::milliseconds(ms);
  }();
  return kept;
}

void write_ready_file(const std::string &path, uint16_t port) {
  // Written under a temporary name and renamed, so a reader never sees a partial file.
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << port << "\n";
    if (!out) throw Error(NAA_ERR_CONFIG, "cannot write ready file " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error(NAA_ERR_CONFIG, "cannot rename " + tmp + " to " + path);
}

}  // namespace

bool parse_shm_peers(const std::string &text, ShmPeers *out) {
  return parse_choice(
      text,
      {{"own-uid", ShmPeers::OwnUser}, {"pgid", ShmPeers::ProcessGroup}, {"off", ShmPeers::Off}},
      out);
}

Server::Server(const ServerOptions &options, const KernelRegistry &kernels)
    : options_(options),
      peer_clients_(options.peer_clients != 0 ? options.peer_clients
                                              : std::max(1u, options.max_clients / 2)),
      kernels_(kernels),
      budget_(options.client_memory, options.total_memory,
              options.peer_memory != 0 ? options.peer_memory : options.total_memory / 2),
      // A thread that ended is joined by the first listening thread's reap().
      pool_(kParkedWorkers, kept_time(), options.spin, [this] { nudge(listening_.front()); }) {
  if (!options_.auth_key.empty()) keys_ = std::make_unique<KeyCheck>(options_.auth_key);
  // Every transport on one port number: the first one chooses it when asked for port 0.
  // Under "auto" the others are extras: one that cannot listen there (another server of this
  // user holding the same shm name, a device that refuses) is left out, not fatal.
  for (const std::string &name :
       transport::listen_transports(options_.transport, options_.address)) {
    if (transport::capabilities_of(name).same_host && options_.shm == ShmPeers::Off) {
      if (options_.transport != "auto")
        throw Error(NAA_ERR_CONFIG, "--transport " + name + " and --shm off exclude each other");
      NAA_LOG_INFO("not listening with %s (--shm off)", name.c_str());
      continue;
    }
    if (listening_.empty() || options_.transport != "auto") {
      listen(name, listening_.empty() ? options_.port : port_);
      continue;
    }
    try {
      listen(name, port_);
    } catch (const Error &e) {
      NAA_LOG_WARN("not listening with %s on port %u: %s", name.c_str(),
                   static_cast<unsigned>(port_), e.what());
    }
  }
  if (!options_.ready_file.empty()) write_ready_file(options_.ready_file, port());
}

Server::~Server() {
  pool_.stop();
}

void Server::listen(const std::string &transport_name, uint16_t port) {
  Listening l;
  // NAA_OFI_WRITE_CHUNK and NAA_RDMA_DEVICE from naa-server's environment.
  l.transport = transport::open_transport(transport_name,
                                          transport::options_from(transport::read_parameters()));
  l.listener = l.transport->listen(options_.address, port);
  port_ = l.listener->port();
  if (transport::capabilities_of(transport_name).tcp_connections)
    l.sweeper = std::make_unique<HandshakeSweeper>(port_, options_.handshake_timeout,
                                                   HandshakeSweeper::Listing::Kernel,
                                                   options_.handshake_per_source);
  NAA_LOG_INFO("listening on %s:%u with %s", options_.address.c_str(), static_cast<unsigned>(port_),
               l.transport->name());
  listening_.push_back(std::move(l));
  const std::string warning = transport::listen_warning_of(transport_name);
  if (!warning.empty()) warnings_.push_back(warning);
}

std::string Server::transport_names() const {
  std::string names;
  for (const Listening &l : listening_)
    names += (names.empty() ? "" : ", ") + std::string(l.transport->name());
  return names;
}

void Server::reap() {
  pool_.reap();
  regions_.expire(kept_time());
  // Kept regions hold a descriptor each: a server short of them (a flood of connections, 18.3)
  // needs them for its clients' endpoints more.
  if (regions_.kept() > 0) {
    std::lock_guard<std::mutex> gate(transport::descriptor_gate());
    if (!transport::descriptors_spare(transport::kSpareDescriptors)) regions_.clear();
  }
  if (workers_done_.exchange(0) == 0) return;  // no walk of 1000 clients' list for nothing
  std::lock_guard<std::mutex> lock(workers_mu_);
  workers_.remove_if([](const Worker &w) { return w.done.load(); });
}

void Server::run(const StopSignal &stop) {
  for (Listening &l : listening_) {
    l.wake = std::make_unique<ListenerWake>(stop.fd());
    l.sleeps = l.listener->interrupt_on(l.wake->fd());
  }
  std::vector<std::thread> acceptors;
  for (size_t i = 1; i < listening_.size(); ++i)
    acceptors.emplace_back([this, i, &stop] {
      pthread_setname_np(pthread_self(), "naa-listen");  // the first one is the main thread
      accept_loop(listening_[i], stop);
    });
  accept_loop(listening_[0], stop);
  for (std::thread &t : acceptors) t.join();
  pool_.stop();
}

std::set<std::string> Server::served_peers() {
  std::lock_guard<std::mutex> lock(workers_mu_);
  std::set<std::string> peers;
  for (const Worker &w : workers_) peers.insert(w.peer);
  return peers;
}

void Server::accept_loop(Listening &l, const StopSignal &stop) {
  while (!stop.raised()) {
    const unsigned long stirs = l.listener->counts().stirs;
    // Before the housekeeping is looked at: a nudge meanwhile rings (see nudge()).
    l.wake->sleeping_until(Deadline::Clock::time_point::max());
    const Deadline::Clock::time_point due = housekeeping_due(l);
    l.wake->sleeping_until(due);
    std::unique_ptr<transport::Endpoint> ep;
    try {
      ep = l.listener->next_request(Deadline::at(due));
    } catch (const Error &e) {
      NAA_LOG_WARN("connection request failed: %s", e.what());
      continue;
    }
    l.wake->take();
    reap();
    const bool requested = ep != nullptr;
    const auto now = Deadline::Clock::now();
    if (ep) {
      l.last_request = now;
      admit(std::move(ep), l, stop);
    }
    if (!l.sweeper) continue;
    // A request or a connection's socket: the port may hold more than served clients now. A
    // listener woken by neither (one that slices its sleeps) stirs it on every pass, as
    // before: looks twice a second.
    if (requested || !l.sleeps || l.listener->counts().stirs != stirs) l.sweeper->stir(now);
    // Here, between two waits, and after admit(): every connection handed over is a worker's
    // by now, and the others are libfabric's, touched by no other thread (handshake_sweeper.hpp).
    if (l.sweeper->due(now)) l.sweeper->sweep(served_peers());
  }
}

// The earliest housekeeping pending for the thread of `l`: the kept regions' expiry, the
// sweeper's next look; reaping waits for a nudge (a worker or a connection ended), the queues
// of a closed connection for their listener (ofi_listener.cpp). Nothing pending: to the stop.
// A client that came lately may leave soon: for kRegionsKept after a request the thread passes
// by anyway, so that the ends of a program's short connections, one after another, need no
// nudge that rings (a wake-up of this thread beside each next setup).
Deadline::Clock::time_point Server::housekeeping_due(const Listening &l) const {
  const auto now = Deadline::Clock::now();
  auto due = std::min(now + (l.sleeps ? Deadline::Clock::duration(kLongestSleep) : kAcceptSlice),
                      regions_.expiry(kept_time()));
  if (l.last_request + kRegionsKept > now) due = std::min(due, l.last_request + kRegionsKept);
  if (l.sweeper) due = std::min(due, std::max(l.sweeper->next_due(), now + kAcceptSlice));
  return due;
}

// After a connection or a worker thread ended: rings the thread of `l` only where it would
// sleep past the housekeeping that leaves (regions and queues kept for kRegionsKept, a thread
// to join); else its next pass, within that time, finds it.
void Server::nudge(Listening &l) {
  l.wake->ring_if_asleep_past(Deadline::Clock::now() + kRegionsKept);
}

void Server::admit(std::unique_ptr<transport::Endpoint> ep, Listening &l, const StopSignal &stop) {
  // Before anything is allocated for the client (the endpoint opens its fabric resources only
  // when accepted): the key is the first thing checked.
  if (keys_) {
    KeyVerdict v = keys_->check(ep->peer(), ep->peer_data(), RefusalThrottle::Clock::now());
    if (!v.admitted) {
      if (!v.log_line.empty()) NAA_LOG_WARN("%s", v.log_line.c_str());
      ep->reject(v.reason);
      return;
    }
  }
  const std::string host = peer_host(ep->peer());
  const char *reason = nullptr;
  Worker *w = nullptr;
  std::shared_ptr<Connection> conn;
  {
    std::lock_guard<std::mutex> lock(workers_mu_);
    reason = refusal(*ep, host);
    if (reason == nullptr) {
      w = &workers_.emplace_back();  // stays in the list until its job has set done
      w->peer = ep->peer();
      w->host = host;
      conn = std::make_shared<Connection>(std::move(ep), kernels_, budget_, options_.kernel_policy,
                                          options_.mrsp_timeout, options_.idle_timeout,
                                          options_.spin, options_.adaptive,
                                          options_.reference_guard, stop, &regions_);
    }
  }
  // Outside the lock, which every transport's admission takes: a reject may wait on its peer
  // (bounded by the transport), and no other client may wait with it.
  if (!conn) {
    if (*reason != '\0') ep->reject(reason);
    return;
  }
  // The acceptance leaves from here where it needs no word from the client (ofi): the client
  // goes on while a thread takes the connection over (tens of microseconds, doc/performance.md).
  conn->start();
  const std::string peer = w->peer;
  // The nudge: the thread reaps the Worker, and sleeps to the expiry of what the connection
  // gave back (regions here, queues in its listener).
  auto finish = [this, w, &l] {
    w->done.store(true);
    ++workers_done_;
    nudge(l);
  };
  // The connection ends (its endpoint closed, its memory given back) before the client stops
  // counting for the limits.
  try {
    pool_.run([conn = std::move(conn), w, finish]() mutable {
      conn->run();
      w->served.store(true);
      conn.reset();
      finish();
    });
  } catch (const std::exception &e) {
    // No thread for it (a thread or memory limit): the job and its connection are gone, so the
    // client sees its connection close instead of waiting out its request's timeout, and its
    // slot is free again.
    NAA_LOG_ERROR("client %s: no thread to serve it (%s); dropping it", peer.c_str(), e.what());
    w->served.store(true);
    finish();
  }
}

// Why the request of `ep` is refused (the reason for the client; "" to drop it unanswered), or
// nullptr to admit it. Under workers_mu_.
const char *Server::refusal(const transport::Endpoint &ep, const std::string &host) {
  if (host == kShmHost) {
    if (options_.shm == ShmPeers::ProcessGroup) {
      const pid_t pid = ep.peer_pid();
      if (pid <= 0 || getpgid(pid) != getpgrp()) {
        NAA_LOG_WARN("refusing %s: process %ld is not in the server's process group (--shm pgid)",
                     ep.peer().c_str(), static_cast<long>(pid));
        return transport::kShmGroupOnly;  // clients with NAA_TRANSPORT=auto then use the network
      }
    }
    // A second request naming the endpoint of a client being served is not that client's (it
    // has its connection): an answer would land in the client's region.
    auto same_peer = [&ep](const Worker &w) { return !w.served.load() && w.peer == ep.peer(); };
    if (std::any_of(workers_.begin(), workers_.end(), same_peer)) {
      NAA_LOG_WARN("dropping a request naming %s, which is connected already", ep.peer().c_str());
      return "";
    }
  }
  // Done ones not counted: a job marks its Worker done before reap() may count it, and one
  // reaped later must not hold a slot meanwhile.
  auto live = [](const Worker &w) { return !w.done.load(); };
  if (static_cast<size_t>(std::count_if(workers_.begin(), workers_.end(), live)) >=
      options_.max_clients) {
    NAA_LOG_WARN("refusing %s: %u clients already connected (--max-clients)", ep.peer().c_str(),
                 options_.max_clients);
    return "naa-server: too many clients";
  }
  auto same_host = [&host](const Worker &w) { return !w.done.load() && w.host == host; };
  if (static_cast<unsigned>(std::count_if(workers_.begin(), workers_.end(), same_host)) >=
      peer_clients_) {
    NAA_LOG_WARN("refusing %s: %u clients of %s already connected (--peer-clients)",
                 ep.peer().c_str(), peer_clients_, host.c_str());
    return "naa-server: too many clients from this host";
  }
  return nullptr;
}

}  // namespace naa::server
