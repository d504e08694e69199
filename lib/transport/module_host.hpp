// SPDX-License-Identifier: BSD-3-Clause
// For a transport module's table (module.hpp): hands the module the loading program's core.
#pragma once

#include "transport/module.hpp"

namespace naa::transport {

// ModuleTable::bind of every module: module_host.cpp forwards to `host` from then on.
void bind_host(const ModuleHost *host);

}  // namespace naa::transport
