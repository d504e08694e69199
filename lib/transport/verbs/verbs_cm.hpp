// SPDX-License-Identifier: BSD-3-Clause
// What the files of the verbs transport (verbs*.cpp) share: owners of rdma_cm and verbs objects,
// error reporting, rdma_cm's event channel read with a deadline, address and route resolution
// with the spec's connection parameters, address and GID text. Private to lib/transport.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cstdint>
#include <memory>
#include <string>

#include "deadline.hpp"
#include "naa.h"

namespace naa::transport::verbs {

inline constexpr int kWaitSliceMs = 1000;

std::string errno_text(int err);

// Every rdma_cm and verbs object is held by one of these, so that whatever throws half way
// through building a connection or a listener releases what was built (in reverse order).
template <auto Destroy>
struct Destroyer {
  template <typename T>
  void operator()(T *p) const {
    Destroy(p);
  }
};
template <typename T, auto Destroy>
using Owned = std::unique_ptr<T, Destroyer<Destroy>>;
using CmId = Owned<rdma_cm_id, rdma_destroy_id>;
// Acking an event is what rdma_destroy_id waits for.
using CmEvent = Owned<rdma_cm_event, rdma_ack_cm_event>;

[[noreturn]] void fail_errno(naa_error_t code, const std::string &what);

void set_nonblocking(int fd, const char *what);

std::string addr_name(const sockaddr *sa);

std::string gid_text(const ibv_gid &gid);

// An rdma_cm event channel whose events are read with a deadline.
class CmChannel {
 public:
  CmChannel();

  rdma_event_channel *get() const { return ch_.get(); }
  int fd() const { return ch_->fd; }

  // The next event, or nullptr when none arrives before the deadline (never, if `deadline`
  // has passed: then only an event already queued is returned) or once `interrupt` (-1: none)
  // is readable; with one, it sleeps to the deadline in one go.
  rdma_cm_event *next(Deadline deadline, int interrupt = -1);

 private:
  Owned<rdma_event_channel, rdma_destroy_event_channel> ch_;
};

// Waits for `want` on `id`; any other outcome is an error naming `what`.
// Returns the event's private data (the peer's accept data, for ESTABLISHED on the client).
std::string expect_event(CmChannel &ch, rdma_cm_event_type want, Deadline deadline,
                         const std::string &what);

// Carries `private_data`, which must outlive the rdma_connect or rdma_accept it is for; more
// than rdma_cm's 56 bytes is a libnaa bug (NAA_ERR_INTERNAL).
rdma_conn_param spec_conn_param(const std::string &private_data);

CmId create_id(CmChannel &ch);

// An id on `ch` with its address and route to `host`:`port` resolved, from NAA_LOCAL_IP's address
// or NAA_RDMA_DEVICE's (neither: rdma_cm's choice).
CmId resolved_id(CmChannel &ch, const std::string &host, uint16_t port, const std::string &local_ip,
                 const std::string &device, Deadline deadline, const std::string &what);

}  // namespace naa::transport::verbs
