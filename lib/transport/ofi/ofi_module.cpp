// SPDX-License-Identifier: BSD-3-Clause
// libnaa-ofi.so's table (module.hpp): the rows ofi and ofi+shm of the registry.
#include <cstring>

#include "config.h"
#include "transport/module_host.hpp"

namespace naa::transport::ofi {

const Entry *ofi_entry();
const Entry *shm_entry();

namespace {

const Entry *entry(const char *row) {
  if (std::strcmp(row, "ofi") == 0) return ofi_entry();
  if (std::strcmp(row, "ofi+shm") == 0) return shm_entry();
  return nullptr;
}

}  // namespace
}  // namespace naa::transport::ofi

extern "C" __attribute__((visibility("default")))
const naa::transport::ModuleTable naa_transport_module = {
    naa::transport::kModuleAbi, PACKAGE_VERSION, "libfabric", naa::transport::bind_host,
    naa::transport::ofi::entry};
