// The software NAA: accepts clients on one transport and serves each on its own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "kernel_worker.hpp"
#include "kernels.hpp"
#include "memory_budget.hpp"
#include "transport/transport.hpp"

namespace naa::server {

struct ServerOptions {
  std::string transport = "auto";
  std::string address = "0.0.0.0";
  uint16_t port = 12345;
  unsigned max_clients = 64;
  uint64_t client_memory = uint64_t{1} << 30;
  uint64_t total_memory = uint64_t{4} << 30;
  std::chrono::milliseconds mrsp_timeout{10000};
  std::chrono::microseconds spin{0};  // poll this long after each invocation before blocking
  KernelPolicy kernel_policy;
  std::string ready_file;  // gets the bound port once listening (for --port 0 and scripts)
  std::string auth_key;    // when set, requests without it are rejected (see lib/auth.hpp)
};

class Server {
 public:
  Server(const ServerOptions &options, const KernelRegistry &kernels);
  ~Server();

  uint16_t port() const { return listener_->port(); }
  const char *transport_name() const { return transport_->name(); }

  // Serves until `stop` becomes true, then ends every connection and returns.
  void run(const std::atomic<bool> &stop);

 private:
  struct Worker {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void reap(bool all);

  const ServerOptions options_;
  const KernelRegistry &kernels_;
  MemoryBudget budget_;
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<transport::Listener> listener_;
  std::list<Worker> workers_;
};

}  // namespace naa::server
