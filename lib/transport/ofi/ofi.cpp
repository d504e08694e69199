// SPDX-License-Identifier: BSD-3-Clause
// The libfabric transport: connected FI_EP_MSG endpoints (provider tcp here, verbs/others where
// present) and reliable-datagram FI_EP_RDM endpoints (shm, tcp;ofi_rxm, verbs;ofi_rxm, lnx),
// fi_writemsg chains ending in a write with remote CQ data, MRSP over fi_sendmsg/fi_recv.
//
// An RDM endpoint has no connection manager, so the connection is made of messages
// (ofi_control.hpp): the server's listener is an RDM endpoint at a well-known address; for each
// connection request it opens a fresh RDM endpoint and answers from it, so that every Endpoint
// talks to exactly one peer, as a MSG connection does, and the Session and naa-server code is
// the same for both. The accept names the fresh endpoint: shm 1.17 reports a message's source
// only for addresses already in the address vector (no FI_SOURCE_ERR), so the client could not
// learn it otherwise. A peer leaves with a goodbye; one that dies without it is noticed by its
// process (shm) or, elsewhere (PROVIDER;ofi_rxm), by the deadline of whatever waits for it.
//
// The parts: ofi_endpoint*.cpp (the Endpoint), ofi_listener.cpp (MSG) and ofi_rdm_listener.cpp
// (RDM), shm/names.cpp (how a client finds a same-host shm server), ofi_fabric.cpp (what
// they share); this file holds the Transport and what the rest of libnaa asks of libfabric.
#include "transport/ofi/ofi.hpp"

#include <algorithm>

#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "error.hpp"
#include "diag/log.hpp"
#include "transport/host.hpp"
#include "transport/ofi/ofi_endpoint.hpp"
#include "transport/ofi/ofi_fabric.hpp"
#include "transport/ofi/ofi_listener.hpp"
#include "transport/ofi/ofi_rdm_listener.hpp"
#include "transport/ofi/shm/names.hpp"

namespace naa::transport::ofi {

namespace {

// How long an answer of fi_getinfo for a destination is used again (OfiTransport::destination).
constexpr auto kDestinationKept = std::chrono::seconds(5);

// libfabric 1.17's shm crashes a server that reads a client's first message (its name, queued
// with the first send) once the client's region is gone, and closing an endpoint removes its
// region. A client that gave up before its connection request could be sent (a stopped or
// starved server, or auto turning to the network) therefore does not close that endpoint: it
// stays open until the process ends, and its region behind it, as a killed client's does.
void keep_open(std::unique_ptr<OfiEndpoint> ep) {
  static std::mutex mutex;
  static auto *kept = new std::vector<std::unique_ptr<OfiEndpoint>>;  // never destroyed
  std::lock_guard<std::mutex> lock(mutex);
  kept->push_back(std::move(ep));
}

class OfiTransport : public Transport {
 public:
  OfiTransport(std::string provider, const TransportOptions &options)
      : provider_(std::move(provider)),
        auto_progress_(options.provider_progress),
        write_chunk_(options.write_chunk),
        options_(options),
        name_(provider_.empty() ? "ofi" : "ofi+" + provider_) {}

  const char *name() const override { return name_.c_str(); }

  std::unique_ptr<Endpoint> connect(const std::string &host, uint16_t port,
                                    const std::string &local_ip, Deadline deadline,
                                    const std::string &private_data,
                                    const BeforeConnect &before_connect) override {
    const fi_ep_type type = endpoint_type();
    const bool named = rdm_probe_ && rdm_probe_->addr_format == FI_ADDR_STR;
    if (named && !is_local_host(host))
      throw Error(NAA_ERR_UNSUPPORTED, name_ + " reaches only NAAs on this host, and " + host +
                                           " is not one of its addresses");
    if (named && shm_name_state(shm_service(port)) != NameState::Live)
      throw Error(NAA_ERR_CONNECTION, "no naa-server of this user listens with " + name_ +
                                          " for port " + std::to_string(port) + " on this host");
    InfoPtr hints = make_hints(provider_, auto_progress_, type);
    sockaddr_in *src = nullptr;
    if (!local_ip.empty() && !named) {
      src = static_cast<sockaddr_in *>(calloc(1, sizeof(sockaddr_in)));
      if (src == nullptr) throw Error(NAA_ERR_NO_RESOURCES, "out of memory");
      src->sin_family = AF_INET;
      hints->src_addr = src;  // owned by hints from here on
      hints->src_addrlen = sizeof *src;
      hints->addr_format = FI_SOCKADDR_IN;
      src->sin_addr = local_ipv4(local_ip);
    }
    require_resolvable(host);
    InfoPtr chosen =
        named ? named_destination(port) : destination(hints.get(), host, port, local_ip);
    if (!chosen) throw Error(NAA_ERR_NO_RESOURCES, "fi_dupinfo failed");
    NAA_LOG_INFO(
        "connecting to %s:%u with provider %s (%s, fabric %s, domain %s, %s data progress)",
        host.c_str(), static_cast<unsigned>(port), chosen->fabric_attr->prov_name,
        type == FI_EP_RDM ? "FI_EP_RDM" : "FI_EP_MSG", chosen->fabric_attr->name,
        chosen->domain_attr->name,
        chosen->domain_attr->data_progress == FI_PROGRESS_AUTO ? "auto" : "manual");
    auto context = OfiContext::acquire(chosen.get());
    auto ep =
        std::make_unique<OfiEndpoint>(std::move(context), std::move(chosen), nullptr, std::string(),
                                      OfiEndpoint::Reuse::Client, options_.idle_endpoints);
    ep->limit_writes(write_chunk_);
    ep->plan_setup_waits(options_);
    if (type == FI_EP_RDM) ep->set_peer_label(host + ":" + std::to_string(port));
    std::string request_data = private_data;
    if (before_connect) {
      const size_t room = ep->connect_data_room();
      if (room > request_data.size())
        request_data += before_connect(*ep, room - request_data.size());
    }
    try {
      ep->connect(deadline, request_data);
    } catch (const Error &) {
      if (named && ep->request_unsent()) keep_open(std::move(ep));
      throw;
    }
    return ep;
  }

  std::unique_ptr<Listener> listen(const std::string &host, uint16_t port) override {
    if (endpoint_type() == FI_EP_RDM)
      return std::make_unique<OfiRdmListener>(provider_, host, port, write_chunk_,
                                              options_.idle_endpoints);
    return std::make_unique<OfiListener>(provider_, host, port, options_);
  }

 private:
  // Connected endpoints where the provider has them (tcp, verbs), reliable datagrams where it
  // has only those (shm, PROVIDER;ofi_rxm, lnx). "ofi" without a provider keeps to MSG.
  // Looked up once per process and provider: fi_getinfo walks every interface (netlink and
  // ethtool calls), and a warm naa_create over tcp made this lookup anew each time.
  fi_ep_type endpoint_type() {
    if (!type_) {
      struct Known {
        fi_ep_type type = FI_EP_MSG;
        InfoPtr rdm_probe;
      };
      static std::mutex mutex;
      static auto *known = new std::map<std::string, Known>;  // never destroyed
      const std::string key = provider_ + '\n' + std::to_string(auto_progress_);
      std::lock_guard<std::mutex> lock(mutex);
      auto it = known->find(key);
      if (it == known->end()) {
        Known k;
        if (!provider_.empty() &&
            !find_info(provider_, auto_progress_, FI_EP_MSG, nullptr, nullptr, 0))
          k.rdm_probe = find_info(provider_, auto_progress_, FI_EP_RDM, nullptr, nullptr, 0);
        if (k.rdm_probe) k.type = FI_EP_RDM;
        it = known->emplace(key, std::move(k)).first;
      }
      type_ = it->second.type;
      if (it->second.rdm_probe) rdm_probe_ = InfoPtr(fi_dupinfo(it->second.rdm_probe.get()));
    }
    return *type_;
  }

  // What fi_getinfo answers for `host`:`port`, the first (preferred) match. A provider's answer
  // for a destination costs it a look at every interface (tcp: two netlink dumps, ethtool
  // queries, a routing probe; 150-200 us, most of a warm naa_create), so the answer is kept a
  // few seconds for the next handle of the process to the same NAA.
  InfoPtr destination(const fi_info *hints, const std::string &host, uint16_t port,
                      const std::string &local_ip) {
    static std::mutex mutex;
    struct Answer {
      InfoPtr info;
      Deadline::Clock::time_point at;
    };
    static auto *answers = new std::map<std::string, Answer>;  // never destroyed
    const std::string key = provider_ + '\n' + std::to_string(auto_progress_) + '\n' + host + '\n' +
                            std::to_string(port) + '\n' + local_ip;
    const auto now = Deadline::Clock::now();
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = answers->find(key);
      if (it != answers->end() && now - it->second.at < kDestinationKept)
        return InfoPtr(fi_dupinfo(it->second.info.get()));
    }
    fi_info *info = nullptr;
    const std::string service = std::to_string(port);
    int rc = fi_getinfo(kApiVersion, host.c_str(), service.c_str(), 0, const_cast<fi_info *>(hints),
                        &info);
    if (rc < 0)
      fail(rc == -FI_ENODATA ? NAA_ERR_UNSUPPORTED : NAA_ERR_CONNECTION,
           "no libfabric provider" + provider_phrase(provider_) +
               (auto_progress_ ? " with FI_PROGRESS_AUTO (NAA_PROGRESS=provider)" : "") +
               " reaches " + host + ":" + service,
           rc);
    InfoPtr first(fi_dupinfo(info));
    fi_freeinfo(info);
    if (!first) return nullptr;
    std::lock_guard<std::mutex> lock(mutex);
    (*answers)[key] = Answer{InfoPtr(fi_dupinfo(first.get())), now};
    return first;
  }

  // The probe's endpoint, under a name of its own, aimed at the listener's name for `port`.
  InfoPtr named_destination(uint16_t port) {
    InfoPtr info(fi_dupinfo(rdm_probe_.get()));
    if (!info) return nullptr;
    shm::give_unique_source(info.get());
    std::string dest = shm::kListenerAddressPrefix + shm_service(port);
    free(info->dest_addr);
    info->dest_addr = strdup(dest.c_str());
    info->dest_addrlen = info->dest_addr != nullptr ? dest.size() + 1 : 0;
    return info->dest_addr != nullptr ? std::move(info) : nullptr;
  }

  std::string provider_;
  const bool auto_progress_;
  const size_t write_chunk_;
  const TransportOptions options_;
  std::string name_;
  std::optional<fi_ep_type> type_;
  InfoPtr rdm_probe_;  // what the provider offers for RDM, when it offers no MSG
};

}  // namespace

std::unique_ptr<Transport> open_ofi_transport(const std::string &provider,
                                              const TransportOptions &options) {
  return std::make_unique<OfiTransport>(provider, options);
}

void initialise_libfabric() {
  static std::once_flag once;
  std::call_once(once, [] {
    const auto start = Deadline::Clock::now();
    fi_info *all = nullptr;
    // No hints: every provider answers, which costs little once they are initialised.
    if (fi_getinfo(kApiVersion, nullptr, nullptr, 0, nullptr, &all) == 0) fi_freeinfo(all);
    const auto took = Deadline::Clock::now() - start;
    NAA_LOG_INFO(
        "libfabric %s initialised its providers in %.1f ms (once per process, before "
        "NAA_CONNECT_TIMEOUT starts)",
        ofi_runtime_version().c_str(), std::chrono::duration<double, std::milli>(took).count());
  });
}

std::vector<std::string> list_ofi_providers() {
  std::vector<std::string> lines;
  for (fi_ep_type type : {FI_EP_MSG, FI_EP_RDM}) {
    InfoPtr hints = make_hints("", false, type);
    fi_info *list = nullptr;
    if (fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &list) < 0) continue;
    InfoPtr owned(list);
    for (fi_info *i = list; i != nullptr; i = i->next) {
      // libfabric lists a provider once per variant of its attributes (tcp;ofi_rxm thrice):
      // what a user chooses from is the provider, endpoint type, fabric and domain.
      std::string line = std::string(i->fabric_attr->prov_name) + "  " +
                         (type == FI_EP_MSG ? "msg" : "rdm") + "  fabric " + i->fabric_attr->name +
                         "  domain " + i->domain_attr->name;
      if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
    }
  }
  return lines;
}

bool ofi_provider_available(const std::string &provider) {
  return find_info(provider, false, FI_EP_MSG, nullptr, nullptr, 0) ||
         find_info(provider, false, FI_EP_RDM, nullptr, nullptr, 0);
}

bool ofi_tcp_crashable_by_peers() {
  uint32_t v = fi_version();
  return FI_MAJOR(v) == 1 && FI_MINOR(v) == 17;
}

std::string ofi_runtime_version() {
  uint32_t v = fi_version();
  return std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v));
}

}  // namespace naa::transport::ofi
