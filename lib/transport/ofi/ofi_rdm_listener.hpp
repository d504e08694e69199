// SPDX-License-Identifier: BSD-3-Clause
// The listener of providers that offer only FI_EP_RDM (shm, PROVIDER;ofi_rxm). Private to
// lib/transport.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "transport/ofi/ofi_endpoint.hpp"
#include "transport/ofi/ofi_context.hpp"
#include "transport/ofi/shm/bell.hpp"
#include "transport/request_pace.hpp"
#include "transport/transport.hpp"

namespace naa::transport::ofi {

// A reliable-datagram listener: an RDM endpoint at a well-known address that receives
// connection requests; each one gets an endpoint of its own (see the top of ofi.cpp): over shm
// an idle one of an ended connection, or the spare opened with the listener, where
// NAA_SHM_IDLE_ENDPOINTS allows (ofi_endpoint_reuse.cpp), else a fresh one.
class OfiRdmListener : public Listener {
 public:
  // `write_chunk`: what the accepted endpoints split their writes at (NAA_OFI_WRITE_CHUNK);
  // `idle_endpoints`: how many of them are kept for later requests (NAA_SHM_IDLE_ENDPOINTS).
  OfiRdmListener(const std::string &provider, const std::string &host, uint16_t port,
                 size_t write_chunk, size_t idle_endpoints);
  ~OfiRdmListener() override;

  uint16_t port() const override { return port_; }
  std::unique_ptr<Endpoint> next_request(Deadline deadline) override;
  ListenerCounts counts() const override {
    ListenerCounts c = pace_.counts();
    c.rung = rung_;
    return c;
  }

 protected:
  bool sleeps_through() const override { return bell_->ok(); }

 private:
  void claim_name(const std::string &name);
  void release_port();
  void dropped(const std::string &name, const std::string &why);

  static constexpr std::chrono::microseconds kListenerNapLimit{8000};
  // The longest sleep on the bell: a request whose client could not ring it (from another
  // network namespace, or out of descriptors; or a client that does not ring) is found within
  // it, before a client's 3 s wait for shm under NAA_TRANSPORT=auto (select.cpp) runs out.
  // Before the caller's deadline became its next pending housekeeping, the 200 ms slices of
  // naa-server's accept loop found such a request.
  static constexpr std::chrono::seconds kUnrungLook{2};
  static constexpr std::chrono::microseconds kRingSpacing{200};
  // How often its listener object is stamped before a read of its queue (shm::stamp_listener).
  static constexpr std::chrono::seconds kStampEvery{1};

  size_t write_chunk_;
  size_t idle_endpoints_;
  bool named_ = false;
  std::string prov_name_;
  int reserved_fd_ = -1;
  int name_fd_ = -1;
  Deadline::Clock::time_point stamped_{};
  std::shared_ptr<OfiContext> fabric_;
  std::unique_ptr<OfiEndpoint> ep_;
  std::unique_ptr<shm::Bell> bell_;  // named after the listener's object (shm/bell.hpp)
  InfoPtr fresh_info_;
  uint16_t port_ = 0;
  unsigned long dropped_ = 0;  // implausible shm requests (shm/request.hpp)
  std::chrono::steady_clock::time_point dropped_logged_{};
  RequestPace pace_;
  unsigned long rung_ = 0;
};

}  // namespace naa::transport::ofi
