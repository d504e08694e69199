// SPDX-License-Identifier: BSD-3-Clause
// Transport names, as in Mercury: "verbs" is rdma-core, "ofi+tcp" libfabric's tcp provider,
// "ofi+shm" its shared-memory one, and "auto" chooses per destination: shared memory for an NAA
// on this host, verbs where an RDMA device routes to the NAA, TCP elsewhere. A shared-memory
// connection that auto chose and that does not complete soon gives way to the network path, as
// MPI libraries fall back from shared memory: with libfabric 1.17 a server's accept has been
// seen to stay unsent for good (test/slurm/srun.sh in CI), and a named transport keeps such
// failures visible instead.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "config.h"
#include "diag/error.hpp"
#include "diag/log.hpp"
#include "config/params.hpp"
#include "transport/host.hpp"
#include "transport/transport.hpp"
#ifdef NAA_HAVE_LIBFABRIC
#include "transport/ofi/ofi.hpp"
#endif
#ifdef NAA_HAVE_VERBS
#include "transport/verbs/verbs.hpp"
#endif

namespace naa::transport {
namespace {

std::unique_ptr<Transport> open_ofi(const std::string &name, const std::string &provider,
                                    const TransportOptions &options) {
#ifdef NAA_HAVE_LIBFABRIC
  NAA_LOG_DEBUG("transport %s -> libfabric provider '%s'", name.c_str(),
                provider.empty() ? "(any)" : provider.c_str());
  return open_ofi_transport(provider, options);
#else
  (void)provider;
  (void)options;
  throw Error(NAA_ERR_UNSUPPORTED, "transport " + name + ": libnaa was built without libfabric");
#endif
}

std::unique_ptr<Transport> open_verbs(const std::string &name, const std::string &device) {
#ifdef NAA_HAVE_VERBS
  (void)name;
  return open_verbs_transport(device);
#else
  (void)device;
  throw Error(NAA_ERR_UNSUPPORTED, "transport " + name + ": libnaa was built without rdma-core "
                                   "(configure --with-verbs)");
#endif
}

// Decides per connection, and for a listener by its address, so one process can reach an NAA
// on the RDMA fabric and another over plain TCP.
class AutoTransport : public Transport {
 public:
  explicit AutoTransport(TransportOptions options) : options_(std::move(options)) {}
  const char *name() const override { return name_.c_str(); }

  std::unique_ptr<Endpoint> connect(const std::string &host, uint16_t port,
                                    const std::string &local_ip, Deadline deadline,
                                    const std::string &private_data,
                                    const BeforeConnect &before_connect) override {
    std::string choice = auto_transport_for(host, port, local_ip, options_.device, deadline);
    NAA_LOG_INFO("NAA_TRANSPORT=auto: %s for %s:%u", choice.c_str(), host.c_str(), port);
    if (choice == "ofi+shm") {
      const auto limit = shm_connect_limit(deadline);
      try {
        return connect_with(choice, host, port, local_ip, Deadline::after(limit), private_data,
                            before_connect);
      } catch (const Refused &e) {
        if (!e.path_only()) throw;
        choice = network_transport_for(host, local_ip, options_.device, deadline);
        NAA_LOG_INFO("NAA_TRANSPORT=auto: %s; connecting with %s instead", e.what(), choice.c_str());
      } catch (const Error &e) {
        choice = network_transport_for(host, local_ip, options_.device, deadline);
        NAA_LOG_WARN("NAA_TRANSPORT=auto: no shared-memory connection to %s:%u within %.2f s (%s); "
                     "connecting with %s instead",
                     host.c_str(), port, std::chrono::duration<double>(limit).count(), e.what(),
                     choice.c_str());
      }
    }
    return connect_with(choice, host, port, local_ip, deadline, private_data, before_connect);
  }

  std::unique_ptr<Listener> listen(const std::string &host, uint16_t port) override {
    std::string choice = "ofi+tcp";
#ifdef NAA_HAVE_VERBS
    if (verbs_can_listen_on(host)) choice = "verbs";
#endif
    NAA_LOG_INFO("NAA_TRANSPORT=auto: listening on %s with %s", host.c_str(), choice.c_str());
    name_ = "auto: " + choice;
    return open_transport(choice, options_)->listen(host, port);
  }

 private:
  // What auto gives a shm connection of its choice: a same-host request is answered within
  // milliseconds (the server's shm listener naps at most 8 ms, an endpoint opens in tens), so
  // 3 s leaves two orders of magnitude for a loaded machine, and a short NAA_TIMEOUT keeps at
  // least three quarters of itself for the network connection and the memory-region exchange.
  static Deadline::Clock::duration shm_connect_limit(Deadline deadline) {
    return std::min<Deadline::Clock::duration>(std::chrono::seconds(3), deadline.remaining() / 4);
  }

  std::unique_ptr<Endpoint> connect_with(const std::string &choice, const std::string &host,
                                         uint16_t port, const std::string &local_ip,
                                         Deadline deadline, const std::string &private_data,
                                         const BeforeConnect &before_connect) {
    name_ = "auto: " + choice;
    return open_transport(choice, options_)->connect(host, port, local_ip, deadline, private_data,
                                                     before_connect);
  }

  const TransportOptions options_;
  std::string name_ = "auto";
};

}  // namespace

std::string private_data_text(const void *data, size_t length) {
  if (data == nullptr) return "";
  auto *p = static_cast<const char *>(data);
  size_t len = strnlen(p, length);
  for (size_t i = 0; i < len; ++i)
    if (p[i] < 0x20 || p[i] >= 0x7f) return "";
  return std::string(p, len);
}

bool is_libnaa_server(const std::string &peer_data) {
  return private_data_text(peer_data.data(), peer_data.size()) == kServerIdentity;
}

std::string transport_from_environment() { return params::Values::read().text("NAA_TRANSPORT"); }

std::vector<std::string> listen_transports(const std::string &name, const std::string &host) {
  if (name != "auto") return {name};
  std::vector<std::string> names;
#ifdef NAA_HAVE_LIBFABRIC
  names.emplace_back("ofi+tcp");
  // Whatever address it serves, a server serves this host's clients: shm names it by port.
  if (ofi_provider_available("shm")) names.emplace_back("ofi+shm");
  else NAA_LOG_INFO("libfabric has no usable shm provider: not listening with ofi+shm");
#endif
#ifdef NAA_HAVE_VERBS
  if (verbs_can_listen_on(host)) names.emplace_back("verbs");
  else NAA_LOG_INFO("no RDMA device serves %s: not listening with verbs", host.c_str());
#else
  (void)host;
#endif
  if (names.empty())
    throw Error(NAA_ERR_UNSUPPORTED, "no transport can listen on " + host + " (libnaa was "
                                     "built without libfabric, and no RDMA device serves it)");
  return names;
}

std::string auto_transport_for(const std::string &host, uint16_t port, const std::string &local_ip,
                               const std::string &device, Deadline deadline) {
#ifdef NAA_HAVE_LIBFABRIC
  // NAA_LOCAL_IP pins a network path, which shared memory does not take. A server on this host
  // that does not listen with shm (another user's, or one started with --transport ofi+tcp)
  // is reached as before.
  if (local_ip.empty() && is_local_host(host) && ofi_shm_server_at(port)) return "ofi+shm";
#else
  (void)port;
#endif
  return network_transport_for(host, local_ip, device, deadline);
}

std::string network_transport_for(const std::string &host, const std::string &local_ip,
                                  const std::string &device, Deadline deadline) {
#ifdef NAA_HAVE_VERBS
  if (verbs_routes_to(host, local_ip, device, deadline)) return "verbs";
#else
  (void)host;
  (void)local_ip;
  (void)device;
  (void)deadline;
#endif
  return "ofi+tcp";
}

Deadline::Clock::duration prepare_transport(const std::string &name) {
#ifdef NAA_HAVE_LIBFABRIC
  if (name == "auto" || name.rfind("ofi", 0) == 0) return initialise_libfabric();
#else
  (void)name;
#endif
  return {};
}

std::unique_ptr<Transport> open_transport(const std::string &name,
                                          const TransportOptions &options) {
  if (name == "auto") return std::make_unique<AutoTransport>(options);
  if (name == "verbs") return open_verbs(name, options.device);
  if (name == "ofi") return open_ofi(name, "", options);
  if (name.rfind("ofi+", 0) == 0 && name.size() > 4) return open_ofi(name, name.substr(4), options);
  throw Error(NAA_ERR_CONFIG, "NAA_TRANSPORT '" + name +
                                  "' is not a transport (use auto, verbs, ofi or ofi+PROVIDER)");
}

}  // namespace naa::transport
