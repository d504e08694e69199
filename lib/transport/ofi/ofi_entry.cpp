// SPDX-License-Identifier: BSD-3-Clause
// The registry's entries of libfabric (registry.hpp): ofi and ofi+PROVIDER over the network,
// and ofi+shm, shared memory to an NAA on this host.
#include "diag/log.hpp"
#include "transport/ofi/ofi.hpp"
#include "transport/registry.hpp"

namespace naa::transport::ofi {
namespace {

std::vector<std::string> providers_lines() {
  std::vector<std::string> lines{"libfabric " + ofi_runtime_version()};
  std::vector<std::string> providers = list_ofi_providers();
  if (providers.empty())
    lines.emplace_back("no provider offers msg or rdm endpoints with RMA and remote CQ data");
  for (std::string &p : providers) lines.push_back(std::move(p));
  return lines;
}

class Ofi final : public Entry {
 public:
  std::unique_ptr<Transport> open(const std::string &variant,
                                  const TransportOptions &options) const override {
    NAA_LOG_DEBUG("transport %s -> libfabric provider '%s'",
                  variant.empty() ? "ofi" : ("ofi+" + variant).c_str(),
                  variant.empty() ? "(any)" : variant.c_str());
    return open_ofi_transport(variant, options);
  }
  // The network path of last resort: TCP reaches every host.
  std::string reaches(const Destination &) const override { return "ofi+tcp"; }
  std::string listens(const std::string &) const override { return "ofi+tcp"; }
  Capabilities capabilities(const std::string &variant) const override {
    Capabilities c;
    c.tcp_connections = variant == "tcp";
    return c;
  }
  std::vector<std::string> details() const override { return providers_lines(); }
  void prepare() const override { initialise_libfabric(); }
  std::string listen_warning(const std::string &variant) const override {
    if (variant != "tcp" || !ofi_tcp_crashable_by_peers()) return "";
    return "libfabric " + ofi_runtime_version() +
           ": its tcp provider crashes on one crafted packet from any peer that can connect, "
           "ending this server and every session in it; -A does not prevent it. Serve ofi+tcp "
           "only to trusted networks, or rebuild against a fixed libfabric "
           "(--with-libfabric=DIR). See naa(7), SECURITY.";
  }
};

class Shm final : public Entry {
 public:
  std::unique_ptr<Transport> open(const std::string &,
                                  const TransportOptions &options) const override {
    NAA_LOG_DEBUG("transport ofi+shm -> libfabric provider 'shm'");
    return open_ofi_transport("shm", options);
  }
  // The row's may_reach found a listener of this user for the port on this host, with no
  // NAA_LOCAL_IP pinning a network path: shared memory reaches it.
  std::string reaches(const Destination &) const override { return "ofi+shm"; }
  // Whatever address it serves, a server serves this host's clients: shm names it by port.
  std::string listens(const std::string &) const override {
    if (ofi_provider_available("shm")) return "ofi+shm";
    NAA_LOG_INFO("libfabric has no usable shm provider: not listening with ofi+shm");
    return "";
  }
  std::string unusable() const override {
    return ofi_provider_available("shm") ? "" : "libfabric has no usable shm provider";
  }
  void prepare() const override { initialise_libfabric(); }
};

}  // namespace

const Entry *ofi_entry() {
  static const Ofi entry;
  return &entry;
}

const Entry *shm_entry() {
  static const Shm entry;
  return &entry;
}

}  // namespace naa::transport::ofi
