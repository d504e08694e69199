// SPDX-License-Identifier: BSD-3-Clause
// The software NAA: accepts clients on every transport it listens on (one accepting thread
// each) and serves each client on its own thread (worker_pool.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "handshake_sweeper.hpp"
#include "kernel_worker.hpp"
#include "kernels.hpp"
#include "memory_budget.hpp"
#include "key_check.hpp"
#include "listener_wake.hpp"
#include "region_pool.hpp"
#include "stop_signal.hpp"
#include "worker_pool.hpp"
#include "transport/transport.hpp"

namespace naa::server {

// Which same-host processes the server serves over ofi+shm (--shm). Over shm, libfabric 1.17
// copies a client's writes with process_vm_writev to whatever address it names, so a client
// can reach any memory of the server: only processes trusted like the server's user may have it.
enum class ShmPeers {
  OwnUser,       // any process of the server's user (who could ptrace it anyway)
  ProcessGroup,  // only processes of the server's process group (one job's)
  Off,           // no shm listener: same-host clients come over tcp
};
bool parse_shm_peers(const std::string &text, ShmPeers *out);

struct ServerOptions {
  // "auto": ofi+tcp, and verbs too where an RDMA device serves `address`, on one port number.
  std::string transport = "auto";
  std::string address = "0.0.0.0";
  uint16_t port = 12345;
  unsigned max_clients = 64;
  unsigned peer_clients = 0;  // per peer host; 0: half of max_clients (at least 1)
  uint64_t client_memory = uint64_t{1} << 30;
  uint64_t total_memory = uint64_t{4} << 30;
  uint64_t peer_memory = 0;  // per peer host; 0: half of total_memory
  std::chrono::milliseconds mrsp_timeout{10000};
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(1800)};  // 0: never
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(10)};
  unsigned handshake_per_source = 64;   // connections of one host waiting for hand-over; 0: any
  std::chrono::microseconds spin{100};  // the least it polls after each invocation (wait plan)
  // --wait adaptive (default): a connection polls for the next invocation only while the node
  // is not oversubscribed and its recent polls paid; spin-then-block: by the wait plan alone.
  bool adaptive = true;
  // --reference-guard-us: the least time a reply to a client that is not libnaa waits after
  // its request was seen (Connection::hold_reply).
  std::chrono::microseconds reference_guard{0};
  KernelPolicy kernel_policy;
  ShmPeers shm = ShmPeers::OwnUser;
  std::string ready_file;  // gets the bound port once listening (for --port 0 and scripts)
  std::string auth_key;    // when set, requests without it are rejected (see lib/config/auth.hpp)
};

class Server {
 public:
  Server(const ServerOptions &options, const KernelRegistry &kernels);
  ~Server();

  uint16_t port() const { return port_; }
  std::string transport_names() const;  // "ofi+tcp, verbs"
  // What the transports it listens with warn of at start (a library's known defects).
  const std::vector<std::string> &warnings() const { return warnings_; }

  // Serves until `stop` is raised, then ends every connection and returns.
  void run(const StopSignal &stop);

 private:
  struct Listening {
    std::unique_ptr<transport::Transport> transport;
    std::unique_ptr<transport::Listener> listener;
    // Where its connections are TCP sockets (Capabilities::tcp_connections): handshake_sweeper.hpp
    std::unique_ptr<HandshakeSweeper> sweeper;
    std::unique_ptr<ListenerWake> wake;  // from run() on
    bool sleeps = false;  // the listener sleeps to the deadline, ending on `wake` (else: slices)
    Deadline::Clock::time_point last_request{};  // when its thread last admitted or refused one
  };
  // A client being served (or served until just now: reap() forgets it).
  struct Worker {
    std::string peer;  // Endpoint::peer() of the client
    std::string host;  // peer_host() of it
    std::atomic<bool> done{false};
    // Its connection has stopped serving (run() returned): a request naming the client's
    // endpoint again is the client's next connection, which an ofi+shm client may make as soon
    // as the goodbye answer that closing the old one sends has come.
    std::atomic<bool> served{false};
  };
  void listen(const std::string &transport_name, uint16_t port);
  void accept_loop(Listening &l, const StopSignal &stop);
  Deadline::Clock::time_point housekeeping_due(const Listening &l) const;
  void nudge(Listening &l);
  std::set<std::string> served_peers();
  // `l`: where the request came; its thread is nudged when the client's connection has ended.
  void admit(std::unique_ptr<transport::Endpoint> ep, Listening &l, const StopSignal &stop);
  const char *refusal(const transport::Endpoint &ep, const std::string &host);
  void reap();

  const ServerOptions options_;
  const unsigned peer_clients_;
  const KernelRegistry &kernels_;
  MemoryBudget budget_;
  std::vector<Listening> listening_;
  std::vector<std::string> warnings_;  // of the transports listening (listen_warning_of)
  uint16_t port_ = 0;
  std::unique_ptr<KeyCheck> keys_;  // with -A only
  std::mutex workers_mu_;
  std::list<Worker> workers_;
  std::atomic<size_t> workers_done_{0};  // Workers marked done since reap() last looked
  RegionPool regions_;                   // the regions of finished connections (region_pool.hpp)
  // After workers_ and regions_, so that it is destroyed first: its jobs mark their Worker
  // done and give their regions back.
  WorkerPool pool_;
};

}  // namespace naa::server
