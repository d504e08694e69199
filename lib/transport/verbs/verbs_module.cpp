// SPDX-License-Identifier: BSD-3-Clause
// libnaa-verbs.so's table (module.hpp): the row verbs of the registry.
#include <cstring>

#include "config.h"
#include "transport/module_host.hpp"

namespace naa::transport::verbs {

const Entry *verbs_entry();

namespace {

const Entry *entry(const char *row) {
  return std::strcmp(row, "verbs") == 0 ? verbs_entry() : nullptr;
}

}  // namespace
}  // namespace naa::transport::verbs

extern "C" __attribute__((visibility("default")))
const naa::transport::ModuleTable naa_transport_module = {
    naa::transport::kModuleAbi, PACKAGE_VERSION, "rdma-core (librdmacm + libibverbs)",
    naa::transport::bind_host, naa::transport::verbs::entry};
