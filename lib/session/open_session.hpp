// SPDX-License-Identifier: BSD-3-Clause
// From laid-out regions to a connected Session: the part of naa_create that libnaa's API and
// the reference-compatible one (ap2.cpp) share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "protocol/regions.hpp"
#include "session/session.hpp"
#include "session/settings.hpp"

namespace naa::session {

// Opens the transport `settings` name, resolves the NAA for function_code (n_inputs is what
// NAA_SPEC's param_count must equal), connects and runs MRSP, all within one
// NAA_CONNECT_TIMEOUT. Throws Error.
std::unique_ptr<Session> open_session(uint8_t function_code, std::vector<protocol::Region> regions,
                                      size_t n_inputs, std::shared_ptr<const Settings> settings);

}  // namespace naa::session
