// SPDX-License-Identifier: BSD-3-Clause
// The libfabric transport. `provider` names a libfabric provider ("tcp", "shm", "tcp;ofi_rxm",
// ...) or is empty to take the first provider that offers FI_EP_MSG with RMA and remote CQ data.
// A provider without FI_EP_MSG endpoints is spoken to over FI_EP_RDM.
#pragma once

#include "transport/transport.hpp"

namespace naa::transport::ofi {

// `options.provider_progress`: only providers that move data without our calls (FI_PROGRESS_AUTO).
std::unique_ptr<Transport> open_ofi_transport(const std::string &provider,
                                              const TransportOptions &options);

// libfabric initialises every provider it was built with at the process's first fi_getinfo,
// whatever the hints (or FI_PROVIDER) name: 1.17's verbs provider alone reads /proc/kallsyms
// through twice (up to seconds on a loaded host, doc/performance.md), with no RDMA device. Made
// here once (later calls return at once); the time it took goes to the log (info).
void initialise_libfabric();

// The libfabric providers that offer what libnaa needs (FI_EP_MSG or FI_EP_RDM, RMA, remote CQ
// data), one line each: "tcp  msg  fabric 127.0.0.1/32  domain lo"; empty if none.
std::vector<std::string> list_ofi_providers();

// Whether `provider` (e.g. "shm") is there and offers what libnaa needs.
bool ofi_provider_available(const std::string &provider);

// ofi+shm endpoints this process opened, and how many connections took an idle one instead
// (for tests: see ofi_idle_endpoint.hpp).
struct OfiEndpointCounts {
  unsigned long opened;
  unsigned long reused;
  unsigned long addresses_inserted;  // shm entries made in address vectors (each maps a region)
  unsigned long addresses_kept;      // peers found in an address vector already (none mapped)
  unsigned long ropes_made;          // ropes to a peer's bell made (shm/bell.hpp)
  unsigned long ropes_kept;          // a kept endpoint's rope that served its next peer again
  unsigned long listeners_kept;      // a client's kept listener entry that served again
  unsigned long listeners_dropped;   // one dropped: another object behind the name by then
  unsigned long pidfds_opened;       // pidfds opened to watch a same-host peer's process
  unsigned long pidfds_kept;         // a kept client endpoint's that watched its next peer
};
OfiEndpointCounts ofi_endpoint_counts();

// The version of the libfabric library loaded at run time, e.g. "1.17".
std::string ofi_runtime_version();
// True for the libfabric versions (1.17) whose tcp provider one crafted packet from a peer
// crashes (a tagged-op header, or an ACK with no pending operation): see naa(7), SECURITY.
bool ofi_tcp_crashable_by_peers();

}  // namespace naa::transport::ofi
