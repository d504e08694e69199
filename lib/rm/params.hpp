// SPDX-License-Identifier: BSD-3-Clause
// The resolver's runtime parameters (config/params.hpp): where the NAAs of a function code are
// found and how the processes of a job spread over them.
#pragma once

#include "config/params.hpp"

namespace naa::rm {

// NAA_SPEC, NAA_CONF, NAA_SPREAD.
const config::params::Table &parameters();

}  // namespace naa::rm
