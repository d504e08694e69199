// SPDX-License-Identifier: BSD-3-Clause
// An OfiEndpoint's connection over a FI_EP_MSG endpoint: made and refused by libfabric's
// connection manager, its events read from the endpoint's event queue. (An RDM endpoint makes
// its connection of messages instead: ofi_endpoint_rdm.cpp.)
#include "transport/ofi/ofi_endpoint.hpp"

#include <rdma/fi_cm.h>
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "diag/log.hpp"
#include "wait_plan.hpp"

namespace naa::transport::ofi {

namespace {

// How long the process's connections took to be made, the server's acceptances and the
// clients' connects apart.
naa::SharedExpected connect_took, accept_took;

}  // namespace

void OfiEndpoint::connect(Deadline deadline, const std::string &private_data) {
  if (rdm_) return connect_by_message(deadline, private_data);
  check(fi_connect(ep_, info_->dest_addr, private_data.empty() ? nullptr : private_data.data(),
                   private_data.size()),
        "fi_connect");
  connecting_since_ = Deadline::Clock::now();
  wait_connected(deadline, "connection to " + peer_);
}

void OfiEndpoint::accept(Deadline deadline, const std::string &private_data) {
  if (rdm_ && !accept_begun_) {
    NAA_LOG_DEBUG("accepting %s from the thread that serves it (%zu bytes of private data)",
                  peer_.c_str(), private_data.size());
    return accept_by_message(private_data);
  }
  begin_accept(private_data);
  if (!connected_) wait_connected(deadline, "accepting " + peer_);
}

// libfabric 1.17's tcp sends the connection response from the connection manager that an EQ
// read runs: read once here, the response leaves now, not when the thread that takes the
// connection over reads first (naa-server's hand-over to that thread takes tens of
// microseconds, doc/performance.md).
// Over RDM the accept is a message of ours, tried for kPostSpin: a polling client takes our
// name (shm's first send to a peer fails until it has) within microseconds; one that does
// not, or does not drain its queue, is answered by accept(), on the thread that serves it, as
// the listening thread waits on no peer for long.
void OfiEndpoint::begin_accept(const std::string &private_data) {
  if (accept_begun_) return;
  if (rdm_) {
    const Deadline once = Deadline::after(kPostSpin);
    try {
      accept_by_message(private_data, &once);
      accept_begun_ = true;
    } catch (const Error &) {  // accept() tries again, and reports
    }
    return;
  }
  open_once();
  check(fi_accept(ep_, private_data.empty() ? nullptr : private_data.data(), private_data.size()),
        "fi_accept");
  connecting_since_ = Deadline::Clock::now();
  accept_begun_ = true;
  if (read_connection_event(true, Deadline::after(std::chrono::milliseconds(0)),
                            "accepting " + peer_))
    accept_took.observe(Deadline::Clock::now() - connecting_since_);
}

// What the provider says its connection messages carry (libfabric 1.17's tcp: 256 bytes), at
// most what our event reads take in; over shm what our request and accept messages carry.
// tcp and shm only: elsewhere (verbs, and PROVIDER;ofi_rxm over it) a registration pins
// memory, which naa-server must not do for a request on its listening thread.
size_t OfiEndpoint::connect_data_room() {
  if (rdm_) return std::strcmp(info_->fabric_attr->prov_name, "shm") == 0 ? control::kMaxData : 0;
  if (std::strcmp(info_->fabric_attr->prov_name, "tcp") != 0) return 0;
  open_once();
  size_t room = 0, len = sizeof room;
  if (fi_getopt(&ep_->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &room, &len) != 0) return 0;
  return std::min(room, kMaxPrivateData);
}

void OfiEndpoint::reject(const char *reason) {
  if (rdm_) return reject_by_message(reason);
  if (pep_ != nullptr)
    fi_reject(pep_, info_->handle, reason, reason != nullptr ? strlen(reason) + 1 : 0);
}

// Polls while the connection is due (TransportOptions::setup_spin), then sleeps in slices.
void OfiEndpoint::wait_connected(Deadline deadline, const std::string &what) {
  naa::SharedExpected &took = pep_ == nullptr ? connect_took : accept_took;
  const Deadline poll_until = Deadline::after(
      setup_sleeps_ ? naa::microseconds(0) : naa::wait_plan(took.value(), setup_spin_).poll);
  for (;;) {
    const bool polling = !poll_until.expired();
    if (read_connection_event(polling, deadline, what)) {
      took.observe(Deadline::Clock::now() - connecting_since_);
      return;
    }
    // The peer may need this core (loopback on a loaded host): it moves meanwhile.
    if (polling) sched_yield();
    if (deadline.expired()) throw Error(NAA_ERR_TIMEOUT, what + " timed out");
  }
}

// One read of the EQ (polling: without waiting; else a slice of sleep): true once the
// connection is made; throws where it cannot be.
bool OfiEndpoint::read_connection_event(bool polling, Deadline deadline, const std::string &what) {
  uint32_t event = 0;
  // The peer's accept data (naa-server's identity) follows the entry.
  alignas(fi_eq_cm_entry) char buf[sizeof(fi_eq_cm_entry) + kMaxPrivateData] = {};
  ssize_t rc =
      polling ? fi_eq_read(eq_, &event, buf, sizeof buf, 0)
              : fi_eq_sread(eq_, &event, buf, sizeof buf, deadline.remaining_ms(kWaitSliceMs), 0);
  if (rc == -FI_EAVAIL) raise_eq_error(what, pep_ == nullptr);
  if (rc >= 0 && event == FI_CONNECTED) {
    if (pep_ == nullptr && static_cast<size_t>(rc) > sizeof(fi_eq_cm_entry))
      peer_data_.assign(buf + sizeof(fi_eq_cm_entry),
                        static_cast<size_t>(rc) - sizeof(fi_eq_cm_entry));
    connected_ = true;
    return true;
  }
  if (rc >= 0 && event == FI_SHUTDOWN)
    throw Error(NAA_ERR_CONNECTION, what + ": peer shut down during connection setup");
  if (rc < 0 && rc != -FI_EAGAIN && rc != -FI_ETIMEDOUT && rc != -FI_EINTR)
    fail(NAA_ERR_CONNECTION, what, static_cast<int>(rc));
  return false;
}

// A refused connection may carry the peer's reason (naa-server's reject text) as error data.
// libfabric 1.17's tcp provider reports a request the peer rejected without a reason as
// EINPROGRESS: a connecting client then names the likely causes; ECONNREFUSED without a reason
// means that nothing listens there, ENOPROTOOPT (the answer was no libfabric connection
// response) that another service holds the port.
void OfiEndpoint::raise_eq_error(const std::string &what, bool connecting) {
  fi_eq_err_entry err{};
  fi_eq_readerr(eq_, &err, 0);
  const std::string reason = private_data_text(err.err_data, err.err_data_size);
  std::string why;
  if (!reason.empty())
    why = (connecting ? ": refused by the NAA (\"" : " (\"") + reason + "\")";
  else if (connecting && err.err == FI_ECONNREFUSED)
    why = ": nothing listens there (is the NAA running, on that port?)";
  else if (connecting && err.err == FI_ENOPROTOOPT)
    why = ": what answers there is not an NAA (another service on that port?)";
  else if (connecting)
    why = ": refused or dropped by the NAA (wrong or missing NAA_AUTH_KEY? too many clients?)";
  throw Error(NAA_ERR_CONNECTION, what + ": " + fi_error_text(err.err) + why);
}

}  // namespace naa::transport::ofi
