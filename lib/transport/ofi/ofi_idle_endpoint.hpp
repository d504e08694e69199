// SPDX-License-Identifier: BSD-3-Clause
// An ofi+shm endpoint between two connections, kept by its Context for the next one
// (OfiContext::park/take): libfabric 1.17's shm provider zero-fills a 16 MiB region for every
// endpoint it enables (5-16 ms) and unmaps and unlinks it at close (1-8 ms), which made
// every naa_create and naa_finalize over shm cost that, on both sides (doc/performance.md).
// What an idle endpoint holds: its fabric objects, its control receives (still posted into
// control_buf) and, on a client's, the address of the server endpoint it was connected to.
// Private to lib/transport.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/ofi/shm/bell.hpp"
#include "transport/ofi/shm/names.hpp"

namespace naa::transport::ofi {

// How many a Context keeps, per side, is NAA_SHM_IDLE_ENDPOINTS (TransportOptions); each holds
// a 16 MiB object in /dev/shm. Beyond it the oldest is closed.
struct IdleRdm;
void keep_bell_if_spare(IdleRdm &idle);  // ofi_endpoint_reuse.cpp

struct IdleRdm {
  IdleRdm() = default;
  ~IdleRdm();  // closes what it holds
  IdleRdm(const IdleRdm &) = delete;
  IdleRdm &operator=(const IdleRdm &) = delete;

  bool client = false;  // a client's (its old server endpoint may still talk: see settle)
  fid_ep *ep = nullptr;
  fid_cq *cq = nullptr;
  fid_av *av = nullptr;
  fid_mr *control_mr = nullptr;
  std::vector<uint8_t> control_buf;  // the control receives point into it
  unsigned control_send_next = 0;
  int wait_fd = -1;
  std::map<std::string, fi_addr_t> av_names;  // what the address vector holds
  unsigned av_inserted = 0;                   // entries it ever made (see kFreshSlots)
  // The peer of the connection that ended, still in the address vector: until the next
  // peer's entry is made (fresh slots, ofi_endpoint_reuse.cpp), and the same entry again
  // when the next connection is with the same peer endpoint. A client's waits for its goodbye
  // first (OfiEndpoint::settle_old_peer).
  fi_addr_t old_peer = FI_ADDR_UNSPEC;
  bool old_peer_goodbye = false;  // a client's: the old peer's goodbye came before it parked
  std::string old_peer_name;
  pid_t old_peer_pid = 0;
  int old_peer_pidfd = -1;
  // Client: the listener it asked last, still in the address vector, and the object that was
  // behind its name then (OfiEndpoint::address_listener).
  std::string listener;
  std::optional<shm::Object> listener_object;
  // While descriptors were spare when it parked, and none has run short since: its bell (one
  // socket), so that the next connection does not make it anew (a page in /dev/shm and a
  // socket, ~30 us). Dropped when a step finds descriptors short (OfiContext::drop_idle_bells):
  // naa-server may run with few (test_hostile runs it with 48).
  std::unique_ptr<shm::Bell> bell;
  // Kept with it, the same way: the rope to the old peer's bell, for a next connection with the
  // same peer endpoint (OfiEndpoint::rope_for; one socket).
  std::unique_ptr<shm::BellRope> peer_bell;
};

}  // namespace naa::transport::ofi
