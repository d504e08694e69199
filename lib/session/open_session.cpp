// SPDX-License-Identifier: BSD-3-Clause
#include "session/open_session.hpp"

#include "diag/signal_defaults.hpp"
#include "transport/transport.hpp"

namespace naa::session {

std::unique_ptr<Session> open_session(uint8_t function_code, std::vector<protocol::Region> regions,
                                      size_t n_inputs, std::shared_ptr<const Settings> settings) {
  // One deadline for everything naa_create waits for: opening the transport counts too, the
  // process's one-time initialisation of libfabric (up to seconds) does not: a short
  // NAA_CONNECT_TIMEOUT would be spent before the first attempt.
  diag::report_signal_defaults();
  auto target = settings->target(function_code, n_inputs);
  transport::TransportOptions options = settings->transport_options();
  options.prepared_choice = transport::prepare_transport(
      settings->transport, target->host(), target->port(), settings->local_ip, settings->device,
      Deadline::after(settings->connect_timeout));
  options.prepared_for = transport::destination_key(target->host(), target->port());
  const Deadline deadline = Deadline::after(settings->connect_timeout);
  auto transport = transport::open_transport(settings->transport, options);
  return std::make_unique<Session>(std::move(transport), function_code, std::move(regions),
                                   std::move(target), std::move(settings), deadline);
}

}  // namespace naa::session
