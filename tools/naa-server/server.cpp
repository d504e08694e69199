// SPDX-License-Identifier: BSD-3-Clause
#include "server.hpp"

#include <cstdio>
#include <fstream>

#include "auth.hpp"
#include "connection.hpp"
#include "error.hpp"
#include "log.hpp"

namespace naa::server {
namespace {

constexpr auto kAcceptSlice = std::chrono::milliseconds(200);

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

Server::Server(const ServerOptions &options, const KernelRegistry &kernels)
    : options_(options),
      kernels_(kernels),
      budget_(options.client_memory, options.total_memory) {
  // Every transport on one port number: the first one chooses it when asked for port 0.
  for (const std::string &name : transport::listen_transports(options_.transport, options_.address))
    listen(name, listening_.empty() ? options_.port : port_);
  if (!options_.ready_file.empty()) write_ready_file(options_.ready_file, port());
}

Server::~Server() { reap(true); }

void Server::listen(const std::string &transport_name, uint16_t port) {
  Listening l;
  l.transport = transport::open_transport(transport_name);
  l.listener = l.transport->listen(options_.address, port);
  port_ = l.listener->port();
  NAA_LOG_INFO("listening on %s:%u with %s", options_.address.c_str(), static_cast<unsigned>(port_),
               l.transport->name());
  listening_.push_back(std::move(l));
}

std::string Server::transport_names() const {
  std::string names;
  for (const Listening &l : listening_) names += (names.empty() ? "" : ", ") + std::string(l.transport->name());
  return names;
}

void Server::reap(bool all) {
  std::lock_guard<std::mutex> lock(workers_mu_);
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (all || it->done.load()) {
      it->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void Server::run(const std::atomic<bool> &stop) {
  std::vector<std::thread> acceptors;
  for (size_t i = 1; i < listening_.size(); ++i)
    acceptors.emplace_back([this, i, &stop] { accept_loop(*listening_[i].listener, stop); });
  accept_loop(*listening_[0].listener, stop);
  for (std::thread &t : acceptors) t.join();
  reap(true);
}

void Server::accept_loop(transport::Listener &listener, const std::atomic<bool> &stop) {
  while (!stop.load()) {
    std::unique_ptr<transport::Endpoint> ep;
    try {
      ep = listener.next_request(Deadline::after(kAcceptSlice));
    } catch (const Error &e) {
      NAA_LOG_WARN("connection request failed: %s", e.what());
      continue;
    }
    reap(false);
    if (ep) admit(std::move(ep), stop);
  }
}

void Server::admit(std::unique_ptr<transport::Endpoint> ep, const std::atomic<bool> &stop) {
  // Before anything is allocated for the client: the key is the first thing checked.
  if (!options_.auth_key.empty() && !auth::matches(ep->peer_data(), options_.auth_key)) {
    NAA_LOG_WARN("refusing %s: missing or wrong authentication key", ep->peer().c_str());
    ep->reject("naa-server: authentication failed (NAA_AUTH_KEY)");
    return;
  }
  std::lock_guard<std::mutex> lock(workers_mu_);
  if (workers_.size() >= options_.max_clients) {
    NAA_LOG_WARN("refusing %s: %u clients already connected (--max-clients)", ep->peer().c_str(),
                 options_.max_clients);
    ep->reject("naa-server: too many clients");
    return;
  }
  Worker &w = workers_.emplace_back();
  auto conn = std::make_shared<Connection>(std::move(ep), kernels_, budget_, options_.kernel_policy,
                                           options_.mrsp_timeout, options_.spin, stop);
  w.thread = std::thread([conn, &w] {
    conn->run();
    w.done.store(true);
  });
}

}  // namespace naa::server
