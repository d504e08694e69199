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
      budget_(options.client_memory, options.total_memory),
      transport_(transport::open_transport(options.transport)),
      listener_(transport_->listen(options.address, options.port)) {
  if (!options_.ready_file.empty()) write_ready_file(options_.ready_file, port());
}

Server::~Server() { reap(true); }

void Server::reap(bool all) {
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
  while (!stop.load()) {
    std::unique_ptr<transport::Endpoint> ep;
    try {
      ep = listener_->next_request(Deadline::after(kAcceptSlice));
    } catch (const Error &e) {
      NAA_LOG_WARN("connection request failed: %s", e.what());
      continue;
    }
    reap(false);
    if (!ep) continue;
    // Before anything is allocated for the client: the key is the first thing checked.
    if (!options_.auth_key.empty() && !auth::matches(ep->request_data(), options_.auth_key)) {
      NAA_LOG_WARN("refusing %s: missing or wrong authentication key", ep->peer().c_str());
      ep->reject("naa-server: authentication failed (NAA_AUTH_KEY)");
      continue;
    }
    if (workers_.size() >= options_.max_clients) {
      NAA_LOG_WARN("refusing %s: %u clients already connected (--max-clients)", ep->peer().c_str(),
                   options_.max_clients);
      ep->reject("naa-server: too many clients");
      continue;
    }
    Worker &w = workers_.emplace_back();
    auto conn = std::make_shared<Connection>(std::move(ep), kernels_, budget_,
                                             options_.kernel_policy, options_.mrsp_timeout,
                                             options_.spin, stop);
    w.thread = std::thread([conn, &w] {
      conn->run();
      w.done.store(true);
    });
  }
  reap(true);
}

}  // namespace naa::server
