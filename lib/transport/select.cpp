// SPDX-License-Identifier: BSD-3-Clause
// Transport names, as in Mercury: "verbs" is rdma-core, "ofi+tcp" libfabric's tcp provider,
// "ofi+shm" its shared-memory one, and "auto" chooses per destination: shared memory for an NAA
// on this host, verbs where an RDMA device routes to the NAA, TCP elsewhere. A shared-memory
// connection that auto chose and that does not complete soon gives way to the network path, as
// MPI libraries fall back from shared memory: with libfabric 1.17 a server's accept may stay
// unsent for good; a named transport keeps such failures visible instead.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "error.hpp"
#include "diag/log.hpp"
#include "config/params.hpp"
#include "transport/params.hpp"
#include "transport/host.hpp"
#include "transport/registry.hpp"
#include "transport/transport.hpp"

namespace naa::transport {
namespace {

// The rows auto may try for `dest`, by its preference to connect: built and, for a same-host
// one, only where `dest` is this host. None of their modules is loaded for this, and no row's
// may_reach is asked: admits() asks it of each row in turn, so that a choice made by the first
// (shared memory to a server on this host) costs no look at the others' devices.
std::vector<const Registration *> candidates(const Destination &dest, bool same_host_too) {
  std::vector<const Registration *> rows;
  for (const Registration *r : registration_rows()) {
    if (r->entry == nullptr || (r->same_host && !same_host_too)) continue;
    if (r->same_host && !is_local_host(dest.host)) continue;
    rows.push_back(r);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Registration *a, const Registration *b) {
    return a->connect_rank < b->connect_rank;
  });
  return rows;
}

// Whether `row` admits `dest` before its module is loaded (Registration::may_reach).
bool admits(const Registration &row, const Destination &dest) {
  return row.may_reach == nullptr || row.may_reach(dest);
}

// The row's entry for auto, loading its module now; nullptr (logged) where it cannot be used.
const Entry *tried(const Registration &row) {
  std::string why;
  const Entry *e = usable_entry(row, &why);
  if (e == nullptr)
    NAA_LOG_INFO("NAA_TRANSPORT=auto: not considering %s: %s", row.name, why.c_str());
  return e;
}

// auto's choice for `dest`: the first candidate that reaches it. Only the modules of the rows
// tried up to that one are loaded.
std::string choose(const Destination &dest, bool same_host_too) {
  for (const Registration *row : candidates(dest, same_host_too)) {
    if (!admits(*row, dest)) continue;
    const Entry *e = tried(*row);
    std::string name = e != nullptr ? e->reaches(dest) : "";
    if (!name.empty()) {
      NAA_LOG_DEBUG("NAA_TRANSPORT=auto: decided on %s for %s:%u", name.c_str(), dest.host.c_str(),
                    dest.port);
      return name;
    }
  }
  throw Error(NAA_ERR_UNSUPPORTED, "NAA_TRANSPORT=auto: no transport built into libnaa reaches " +
                                       dest.host + ":" + std::to_string(dest.port));
}

// Decides per connection, and for a listener by its address, so one process can reach an NAA
// on the RDMA fabric and another over plain TCP.
class AutoTransport : public Transport {
 public:
  explicit AutoTransport(TransportOptions options)
      : options_(std::move(options)),
        prepared_choice_(options_.prepared_choice),
        prepared_for_(options_.prepared_for) {}
  const char *name() const override { return name_.c_str(); }

  std::unique_ptr<Endpoint> connect(const std::string &host, uint16_t port,
                                    const std::string &local_ip, Deadline deadline,
                                    const std::string &private_data,
                                    const BeforeConnect &before_connect) override {
    detour_.clear();
    std::string choice;
    if (!prepared_choice_.empty() && prepared_for_ == destination_key(host, port))
      choice = std::exchange(prepared_choice_, "");
    else
      choice = auto_transport_for(host, port, local_ip, options_.device, deadline);
    NAA_LOG_INFO("NAA_TRANSPORT=auto: %s for %s:%u", choice.c_str(), host.c_str(), port);
    if (!capabilities_of(choice).same_host)
      detour_ = "no same-host transport (shared memory) serves " + host + ":" +
                std::to_string(port) + " now";
    if (capabilities_of(choice).same_host) {
      const auto limit = shm_connect_limit(deadline);
      try {
        return connect_with(choice, host, port, local_ip, Deadline::after(limit), private_data,
                            before_connect);
      } catch (const Refused &e) {
        if (!e.path_only()) throw;
        detour_ = e.what();
        choice = network_transport_for(host, local_ip, options_.device, deadline);
        NAA_LOG_INFO("NAA_TRANSPORT=auto: %s; connecting with %s instead", e.what(),
                     choice.c_str());
      } catch (const Error &e) {
        detour_ =
            "no shared-memory connection within " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(limit).count()) +
            " ms: " + e.what();
        choice = network_transport_for(host, local_ip, options_.device, deadline);
        NAA_LOG_WARN(
            "NAA_TRANSPORT=auto: no shared-memory connection to %s:%u within %.2f s (%s); "
            "connecting with %s instead",
            host.c_str(), port, std::chrono::duration<double>(limit).count(), e.what(),
            choice.c_str());
      }
    }
    return connect_with(choice, host, port, local_ip, deadline, private_data, before_connect);
  }

  std::string detour() const override { return detour_; }

  std::unique_ptr<Listener> listen(const std::string &host, uint16_t port) override {
    std::string choice;
    const Destination here{host, 0, "", "", Deadline::now()};
    for (const Registration *row : candidates(here, false)) {
      if (!choice.empty()) break;
      if (const Entry *e = admits(*row, here) ? tried(*row) : nullptr; e != nullptr)
        choice = e->listens(host);
    }
    if (choice.empty())
      throw Error(NAA_ERR_UNSUPPORTED, "no transport built into libnaa can listen on " + host);
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
    return open_transport(choice, options_)
        ->connect(host, port, local_ip, deadline, private_data, before_connect);
  }

  const TransportOptions options_;
  std::string prepared_choice_;  // for the first connection to prepared_for_ only
  const std::string prepared_for_;
  std::string name_ = "auto";
  std::string detour_;
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

std::string transport_from_environment() {
  return read_parameters().text("NAA_TRANSPORT");
}

std::vector<std::string> listen_transports(const std::string &name, const std::string &host) {
  if (!parse_name(name).is_auto) return {name};
  std::vector<std::string> names;
  for (const Registration &r : registrations()) {
    const Entry *e = usable_entry(r);
    if (e == nullptr) continue;
    std::string listening = e->listens(host);
    if (!listening.empty()) names.push_back(std::move(listening));
  }
  if (names.empty())
    throw Error(NAA_ERR_UNSUPPORTED, "no transport built into libnaa can listen on " + host);
  return names;
}

std::string auto_transport_for(const std::string &host, uint16_t port, const std::string &local_ip,
                               const std::string &device, Deadline deadline) {
  return choose(Destination{host, port, local_ip, device, deadline}, true);
}

std::string network_transport_for(const std::string &host, const std::string &local_ip,
                                  const std::string &device, Deadline deadline) {
  return choose(Destination{host, 0, local_ip, device, deadline}, false);
}

std::string prepare_transport(const std::string &name, const std::string &host, uint16_t port,
                              const std::string &local_ip, const std::string &device,
                              Deadline deadline) {
  std::string chosen = name;
  if (parse_name(name).is_auto) {
    try {
      chosen = auto_transport_for(host, port, local_ip, device, deadline);
    } catch (const Error &) {
      return "";  // the connection's own choice says why
    }
  }
  if (const Entry *e = usable_entry(*parse_name(chosen).row); e != nullptr) e->prepare();
  return chosen;
}

std::string destination_key(const std::string &host, uint16_t port) {
  return host + ":" + std::to_string(port);
}

std::unique_ptr<Transport> open_transport(const std::string &name,
                                          const TransportOptions &options) {
  const ParsedName parsed = parse_name(name);
  if (parsed.is_auto) return std::make_unique<AutoTransport>(options);
  return entry_of(parsed, name).open(parsed.variant, options);
}

}  // namespace naa::transport
