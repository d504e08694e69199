// SPDX-License-Identifier: BSD-3-Clause
// A listener over a passive FI_EP_MSG endpoint: connection requests come as the connection
// manager's events, each with its request's endpoint. Private to lib/transport.
#pragma once

#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "wait_plan.hpp"
#include "transport/ofi/ofi_context.hpp"
#include "transport/request_pace.hpp"
#include "transport/transport.hpp"

namespace naa::transport::ofi {

class OfiListener : public Listener {
 public:
  // `options`: what the accepted endpoints split their writes at (NAA_OFI_WRITE_CHUNK), how
  // they wait for their connection.
  OfiListener(const std::string &provider, const std::string &host, uint16_t port,
              const TransportOptions &options);

  uint16_t port() const override { return port_; }
  std::unique_ptr<Endpoint> next_request(Deadline deadline) override;
  ListenerCounts counts() const override {
    ListenerCounts c = pace_.counts();
    c.stirs = stirs_;
    return c;
  }

 protected:
  bool sleeps_through() const override { return eq_fd_ >= 0; }

 private:
  static constexpr std::chrono::milliseconds kNoDescriptorNap{1};
  // Between looks while a same-host step claims the descriptors left (descriptor_gate.hpp).
  static constexpr std::chrono::milliseconds kHeldOffNap{5};
  // How long a closed connection's queues wait for the next one (ofi_queue_stock.hpp).
  static constexpr std::chrono::seconds kQueuesKept{1};

  enum class Woken { No, ByEvent, ByInterrupt };
  Woken sleep_until_event(Deadline deadline);
  void poll_for_request(bool woken);

  InfoPtr info_;
  std::shared_ptr<OfiContext> fabric_;
  FidPtr<fid_eq> eq_;
  FidPtr<fid_pep> pep_;  // closed before eq_, which it is bound to
  int eq_fd_ = -1;       // the EQ's wait descriptor, or -1
  uint16_t port_ = 0;
  const TransportOptions options_;
  // libfabric's tcp accepts a connection's socket in one read of the EQ and reads its request
  // in a later one: a libnaa client sends it right after its connect(2), so the listener
  // would sleep into a second wake-up (doc/performance.md). After a
  // wake-up that brought no request, it polls while the request is due by the wait plan
  // (twice as long as it took lately, the setup spin at least); a poll that found none (a
  // connection that sends nothing, as a flood of them would) is not made again until a
  // request has come, so such a flood finds the listener asleep.
  Deadline::Clock::time_point request_due_{};  // polling until then; the epoch: not polling
  Deadline::Clock::time_point socket_came_{};
  bool polls_pay_ = true;
  naa::Expected request_took_;  // from a wake-up without a request to the request
  RequestPace pace_;         // polls between requests that come close together (request_pace.hpp)
  unsigned long stirs_ = 0;  // ListenerCounts::stirs
};

}  // namespace naa::transport::ofi
