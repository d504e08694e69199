// SPDX-License-Identifier: BSD-3-Clause
// A transport module of another libnaa: its table names another version and module ABI.
// modules.sh installs it as libnaa-ofi.so in an NAA_MODULE_DIR of its own; the loader must
// refuse it, naming both versions, before calling anything in it.
#include <cstdlib>

#include "transport/module.hpp"

namespace {

void bind(const naa::transport::ModuleHost *) {
  std::abort();
}
const naa::transport::Entry *entry(const char *) {
  std::abort();
}

}  // namespace

extern "C" __attribute__((visibility("default")))
const naa::transport::ModuleTable naa_transport_module = {naa::transport::kModuleAbi + 1,
                                                          "0.0.1-stale", "nothing", bind, entry};
