// SPDX-License-Identifier: BSD-3-Clause
// Everything one naa_create decides from outside the program's arguments, resolved once:
// from the naa_attr_t (naa_create_attr), else the environment (naa(7), RUNTIME PARAMETERS),
// else the default. The session and its transport take their settings from here, so one
// process can give each handle its own NAA, transport, deadline and key without setenv.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "naa.h"
#include "config/options.hpp"
#include "config/params.hpp"
#include "rm/resolver.hpp"
#include "transport/transport.hpp"

namespace naa::session {

struct Settings {
  std::string naa_host;  // from attr->naa: the NAA itself, no resolution; empty otherwise
  uint16_t naa_port = 0;
  std::string transport;                         // NAA_TRANSPORT
  std::chrono::milliseconds timeout{0};          // NAA_TIMEOUT: each wait
  std::chrono::milliseconds connect_timeout{0};  // NAA_CONNECT_TIMEOUT: connect + MRSP
  unsigned reconnect = 0;                        // NAA_RECONNECT: 0 never, else on
  config::Progress progress;
  std::chrono::microseconds pacing{0};
  bool pacing_adaptive = true;  // NAA_PACING_ADAPTIVE
  std::string auth_key;         // "" sends none
  std::string local_ip;
  std::string device;  // NAA_RDMA_DEVICE
  // Not a runtime parameter: naa-info --kernels asks the NAA for its kernels from this function
  // code on (doc/protocol.md §3.6); 0 asks for none.
  uint8_t list_kernels_from = 0;
  config::params::Values params;  // every runtime parameter, attr->params applied: the resolver's
                                  // and the transport's source

  // `attr` may be null (everything from the environment). A field wins over attr->params, which
  // wins over the environment. Throws Error: NAA_ERR_INVALID_ARGUMENT for a malformed attr
  // field, header or params entry, NAA_ERR_CONFIG for a malformed variable.
  static Settings resolve(const naa_attr_t *attr);
  // The same, shared: a program creating handle after handle from unchanged sources gets the
  // settings kept from the last resolution, not a copy of every parameter (naa_create's path).
  static std::shared_ptr<const Settings> resolve_shared(const naa_attr_t *attr);
  // How many resolve() calls read and checked every source, rather than finding the last
  // settings kept for the same environment and attr values (for tests).
  static unsigned long resolved_anew();

  // What the transport of this handle takes from these settings (from `params`, as resolve()
  // left them).
  transport::TransportOptions transport_options() const { return transport_options_; }

  // The NAA for function_code: attr->naa, else NAA_SPEC or Slurm (rm::resolve).
  std::unique_ptr<rm::Target> target(uint8_t function_code, size_t n_inputs) const;

 private:
  transport::TransportOptions transport_options_;  // parsed once: 1-1.5 us at each create
};

}  // namespace naa::session
