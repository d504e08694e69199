// SPDX-License-Identifier: BSD-3-Clause
// A transport built as a module of its own (libnaa-ofi.so, libnaa-verbs.so in $(pkglibdir)):
// the registry's row for it loads it on first use (registry.cpp), so that a process that opens
// no transport of that kind never maps its libraries (libfabric, rdma-core) nor runs their
// constructors.
//
// A module exports one symbol, kModuleSymbol: a ModuleTable. The loader refuses a module whose
// table was built for another ABI or another libnaa version (a stale module from an earlier
// install), naming both. A module takes nothing from libnaa's internals by linking: whatever of
// the loading program's core it needs (the log, the descriptor gate, host names, wait plans)
// it gets through the ModuleHost the loader hands it, so the same module serves libnaa.so and
// the programs that link the core statically (naa-server, naa-info), each with its own state.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include <netinet/in.h>

#include "naa.h"
#include "deadline.hpp"
#include "diag/log.hpp"
#include "wait_plan.hpp"

namespace naa::transport {

class Entry;
class DescriptorClaim;

// Raised whenever ModuleHost, ModuleTable, Entry, Transport, Endpoint or Listener change.
inline constexpr uint32_t kModuleAbi = 4;
inline constexpr const char *kModuleSymbol = "naa_transport_module";

// What the loading program lends a module: its own core's functions.
struct ModuleHost {
  uint32_t abi;
  diag::log::Level (*log_threshold)();
  void (*log_write)(diag::log::Level level, const char *fmt, ...);
  naa::WaitPlan (*wait_plan)(std::chrono::nanoseconds expected, std::chrono::microseconds spin,
                             bool woken);
  std::chrono::microseconds (*idle_nap)(std::chrono::nanoseconds idle);
  std::chrono::microseconds (*idle_slice)(std::chrono::nanoseconds idle);
  void (*yielding_pollers_add)(int delta);
  std::mutex &(*descriptor_gate)();
  bool (*descriptors_spare)(size_t count);
  bool (*accepts_spare)();
  void (*claim_hold)(DescriptorClaim *claim, bool waiting);
  sockaddr_in (*resolve_ipv4)(const std::string &host, uint16_t port, naa_error_t code);
  void (*require_resolvable)(const std::string &host);
  in_addr (*local_ipv4)(const std::string &local_ip);
  bool (*is_local_host)(const std::string &host);
  std::string (*private_data_text)(const void *data, size_t length);
};

// The one symbol a module exports.
struct ModuleTable {
  uint32_t abi;           // kModuleAbi of the module's build
  const char *version;    // PACKAGE_VERSION of the module's build
  const char *libraries;  // what it links, for naa-info ("libfabric", "rdma-core")
  // Called once, before entry: the host's functions the module uses from then on.
  void (*bind)(const ModuleHost *host);
  // The Entry of the registry row named `row` ("ofi", "ofi+shm"), nullptr if not this module's.
  const Entry *(*entry)(const char *row);
};

// The file module `module` ("ofi") was loaded from, or is to be: NAA_MODULE_DIR/libnaa-MODULE.so
// where that variable is set, else the build tree's lib/.libs for a libnaa that runs from its
// build tree, else $(pkglibdir).
std::string module_path(const std::string &module);

// The Entry of `row` in module `module`, loading the module on first use. A module that is
// missing, cannot be loaded (a library it needs is not installed) or is stale is
// NAA_ERR_UNSUPPORTED naming the file and the loader's message, logged once per module.
const Entry &module_entry(const std::string &module, const char *row);

}  // namespace naa::transport
