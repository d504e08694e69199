// SPDX-License-Identifier: BSD-3-Clause
// ofi+shm endpoints that outlive a connection (ofi_idle_endpoint.hpp): an endpoint whose
// connection ended well goes to its Context (park), and the next connection of the same side
// over that Context takes it (adopt_idle) instead of opening one.
//
// What keeps an old peer's traffic out of the new connection:
// - Every completion names its source (FI_SOURCE, fi_cq_readfrom): a message, a receive or a
//   write-with-immediate from another endpoint than the connection's peer is dropped with a
//   log line (a receive it consumed is posted again), and so is a goodbye.
// - A client parks only after it said goodbye, with none of its own operations outstanding
//   and no reply due; it keeps the old server endpoint in its address vector until that
//   endpoint's goodbye, which the server sends after everything else it sent (shm delivers one
//   sender's messages in order), has come: what the old peer sent before is read and dropped
//   then, before the endpoint is connected anew (settle_old_peer). That goodbye may come while
//   the client still waits for its own to complete, or while it parks (a slow client: under
//   a sanitizer, one connection in four): the endpoint parks settled then. The entry stays
//   until the next peer's is in (kFreshSlots), or serves again when the next peer is the same
//   endpoint: what the old peer sends later names the old peer as its source, and is dropped.
// - A server endpoint parks only after its client's goodbye (the client's last message) and
//   its own answer; it keeps the client's entry in the same way.
// - Before the old peer's entry is removed, the messages of its that no receive took are taken
//   and dropped (drain_unexpected): shm names a queued message's source only when a receive
//   takes it, by a slot of its peer map that the next peer may have by then (test_shm_reuse
//   shows such a message otherwise reaching the next client's receive).
// - The receives still posted are cancelled before it parks (their buffers belong to the
//   connection that ended), and an endpoint whose completion failed is closed, never parked.
// What it does not stop: the old peer's RMA writes land where its keys still point (a client
// waits for its old peer's last message before a new connection starts, and parks only with
// no reply due); and a request naming an idle client endpoint, made by a process of the same
// user, makes naa-server send to it, after which libfabric 1.17 crashes the client that reads
// it once that server endpoint is closed (as it would a live one's).
#include <rdma/fi_cm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "diag/log.hpp"
#include "process_id.hpp"
#include "transport/descriptor_gate.hpp"
#include "transport/ofi/ofi.hpp"
#include "transport/ofi/ofi_endpoint.hpp"
#include "transport/ofi/shm/names.hpp"
#include "transport/ofi/shm/request.hpp"

namespace naa::transport::ofi {
namespace {

std::atomic<unsigned long> endpoints_opened{0};
std::atomic<unsigned long> endpoints_reused{0};
std::atomic<unsigned long> addresses_inserted{0};
std::atomic<unsigned long> addresses_kept{0};
std::atomic<unsigned long> ropes_made{0};
std::atomic<unsigned long> ropes_kept{0};
std::atomic<unsigned long> listeners_kept{0};
std::atomic<unsigned long> listeners_dropped{0};
std::atomic<unsigned long> pidfds_opened{0};
std::atomic<unsigned long> pidfds_kept{0};

// libfabric 1.17's shm keeps, for each slot of an endpoint's peer map, the id the peer gave
// it (which slot of the peer's map is ours) and whether our name was sent; fi_av_remove
// clears neither. A peer put in a slot another had before is then sent to under the old
// peer's id, without the name exchange that would correct both sides, and the peer takes
// the messages for another endpoint's (base 9c4ee50: a warm naa_create loop over shm timed
// out after ~255 creates, when the client's slots came round: "message from another endpoint
// than this connection's peer (address 0) dropped"). An exchange happens when either side
// puts the other in a slot never used: so a kept endpoint keeps its last peer's entry until
// the next peer's is in (shm takes the slot after the last one given while that one is
// occupied, a never-used one while fewer than 256 were given), and is closed, not kept, once
// it made kFreshSlots entries (a few slots spare for what shm inserts of itself).
constexpr unsigned kFreshSlots = 240;

// How long a client waits for its old peer's goodbye before it opens a fresh endpoint instead
// (which costs 5-16 ms): the goodbye comes when the server's connection thread next looks,
// within microseconds of an active connection's end, up to its nap after a long idle one.
constexpr auto kSettleWait = std::chrono::milliseconds(2);

}  // namespace

OfiEndpointCounts ofi_endpoint_counts() {
  return {endpoints_opened.load(), endpoints_reused.load(),  addresses_inserted.load(),
          addresses_kept.load(),   ropes_made.load(),        ropes_kept.load(),
          listeners_kept.load(),   listeners_dropped.load(), pidfds_opened.load(),
          pidfds_kept.load()};
}

// An idle endpoint keeps its bell (a page and a socket, ~30 us to make anew at its next
// connection) while descriptors are spare when it parks: one socket per idle endpoint, at most
// NAA_SHM_IDLE_ENDPOINTS a side. A step that finds descriptors short drops them all
// (OfiContext::drop_idle_bells): naa-server may run with few (test_hostile: 48).
void keep_bell_if_spare(IdleRdm &idle) {
  std::lock_guard<std::mutex> gate(descriptor_gate());
  if (descriptors_spare(kSpareDescriptors)) return;
  idle.bell.reset();
  idle.peer_bell.reset();
}

// The kept endpoint met the same peer endpoint again (both sides' Contexts take the newest idle
// one): its rope serves again while the peer's bell page is the one it maps.
std::unique_ptr<shm::BellRope> OfiEndpoint::rope_for(const std::string &peer_name) {
  const std::string object = shm::bell_object(peer_name);
  std::unique_ptr<shm::BellRope> kept = std::move(kept_peer_bell_);
  const bool again = kept && kept->still_for(object);
  ++(again ? ropes_kept : ropes_made);
  return again ? std::move(kept) : std::make_unique<shm::BellRope>(object);
}

void OfiEndpoint::count_opened() {
  ++endpoints_opened;
}
void OfiEndpoint::count_address(bool kept) {
  ++(kept ? addresses_kept : addresses_inserted);
}
void OfiEndpoint::count_listener(bool kept) {
  ++(kept ? listeners_kept : listeners_dropped);
}
void OfiEndpoint::count_pidfd(bool kept) {
  ++(kept ? pidfds_kept : pidfds_opened);
}

// After the next peer's entry is in: the last one's goes, unless it is the same endpoint.
void OfiEndpoint::forget_previous_peer() {
  const fi_addr_t previous = previous_peer_;
  previous_peer_ = FI_ADDR_UNSPEC;
  if (previous != FI_ADDR_UNSPEC && previous != peer_addr_) forget_address(previous);
}

bool OfiEndpoint::from_peer(fi_addr_t source) const {
  return !settling_ && peer_addr_ != FI_ADDR_UNSPEC && source == peer_addr_;
}

void OfiEndpoint::drop_stale(const fi_cq_data_entry &e, fi_addr_t source) {
  // A receive it consumed was the connection's: posted again for the peer's message.
  if (e.flags & FI_RECV) {
    const uint64_t context = reinterpret_cast<uint64_t>(e.op_context);
    for (const PostedRecv &r : posted_recvs_)
      if (r.context == context) {
        retry_post("fi_recv", [&] {
          return fi_recv(ep_, r.buf, r.length, r.desc, FI_ADDR_UNSPEC, e.op_context);
        });
        break;
      }
  }
  ++stale_dropped_;
  const auto now = std::chrono::steady_clock::now();
  if (now - stale_logged_ < std::chrono::seconds(1)) return;  // a flood: one line a second
  stale_logged_ = now;
  NAA_LOG_WARN(
      "%s: %s from another endpoint than this connection's peer (address %llu) "
      "dropped (%lu so far)",
      peer_.c_str(), (e.flags & FI_REMOTE_CQ_DATA) ? "write with immediate" : "message",
      static_cast<unsigned long long>(source), stale_dropped_);
}

void OfiEndpoint::forget_recv(uint64_t context) {
  for (auto i = posted_recvs_.begin(); i != posted_recvs_.end(); ++i)
    if (i->context == context) {
      posted_recvs_.erase(i);
      return;
    }
}

// A message that found no receive waits in shm's queue of unexpected messages, and shm names
// its source when a receive takes it, by the sender's slot in our peer map, which a peer
// inserted later may have taken over: left there, a message of the old peer would pass for the
// new one's. Receives into a scratch slot take them until one is cancelled unmatched.
bool OfiEndpoint::drain_unexpected() {
  uint8_t *slot = control_slot(kControlSlots);  // a send slot: no control send is pending
  const Deadline deadline = Deadline::after(kControlFlush);
  for (unsigned taken = 0; taken < 256; ++taken) {
    sink_done_ = sink_cancelled_ = false;
    retry_post("fi_recv", [&] {
      return fi_recv(ep_, slot, control::kMaxMessage, fi_mr_desc(control_mr_), FI_ADDR_UNSPEC,
                     &sink_context_);
    });
    Completion c[8];
    read_cq(c, 8);
    if (!sink_done_) fi_cancel(&ep_->fid, &sink_context_);
    while (!sink_done_ && !deadline.expired()) read_cq(c, 8);
    if (!sink_done_) return false;
    if (sink_cancelled_) {
      if (taken > 0)
        NAA_LOG_INFO("%s: %u message(s) of the connection that ended dropped unread", peer_.c_str(),
                     taken);
      return true;
    }
  }
  return false;
}

// The fabric objects (and what belongs to them) from an idle endpoint, and back.
void OfiEndpoint::take_objects(IdleRdm &idle) {
  std::swap(ep_, idle.ep);
  std::swap(cq_, idle.cq);
  std::swap(av_, idle.av);
  std::swap(control_mr_, idle.control_mr);
  std::swap(control_buf_, idle.control_buf);  // the posted receives' slots move with it
  std::swap(control_send_next_, idle.control_send_next);
  std::swap(wait_fd_, idle.wait_fd);
  std::swap(av_names_, idle.av_names);
  std::swap(av_inserted_, idle.av_inserted);
  std::swap(bell_, idle.bell);
  std::swap(kept_peer_bell_, idle.peer_bell);
  std::swap(listener_, idle.listener);
  std::swap(listener_object_, idle.listener_object);
}

bool OfiEndpoint::adopt_idle() {
  if (reuse_ == Reuse::No || idle_bound_ == 0 || !sources_) return false;
  const bool client = reuse_ == Reuse::Client;
  for (size_t tries = context_->idle_endpoints(); tries > 0; --tries) {
    std::unique_ptr<IdleRdm> idle = context_->take(client);
    if (!idle) return false;
    take_objects(*idle);  // ours empty: the idle one is left with nothing to close
    // libfabric's shm removes the process's regions from /dev/shm in its SIGINT and SIGTERM
    // handler, which then calls the program's: a program that handles the signal and goes on
    // (Python's KeyboardInterrupt) keeps endpoints no peer can map any more.
    const std::string object = shm::region_object(own_name());
    struct stat st;
    if (!object.empty() && ::stat(shm::object_path(object).c_str(), &st) != 0) {
      NAA_LOG_INFO(
          "an idle shm endpoint's region %s is gone (removed by libfabric's signal "
          "handler?): closing it",
          object.c_str() + 1);
      take_objects(*idle);  // back to it: closed with it
      continue;
    }
    if (!client) {
      Completion c[8];
      while (read_cq(c, 8) > 0) {  // what the old client sent last is dropped (no peer yet)
      }
      previous_peer_ = idle->old_peer;
    }
    if (!client || settle_old_peer(*idle)) {
      ++endpoints_reused;
      NAA_LOG_DEBUG("reusing an idle shm endpoint (%s)", client ? "client" : "server");
      return true;
    }
    take_objects(*idle);  // back to it: closed with it, or parked again
    if (failed_) {
      failed_ = false;
      continue;
    }
    // Its old peer has not said goodbye yet: back to the Context, behind the others.
    context_->park(std::move(idle), idle_bound_, true);
  }
  return false;
}

// Reads (and drops) what the old server endpoint sent until its goodbye, or its process's end,
// for at most kSettleWait; then the endpoint is as a fresh one.
bool OfiEndpoint::settle_old_peer(const IdleRdm &idle) {
  peer_addr_ = idle.old_peer;
  peer_name_ = idle.old_peer_name;
  peer_pid_ = idle.old_peer_pid;
  peer_pidfd_ = idle.old_peer_pidfd;
  connected_ = settling_ = true;
  peer_left_ = false;
  peer_goodbye_ = idle.old_peer_goodbye;
  const Deadline deadline = Deadline::after(kSettleWait);
  bool settled = false;
  try {
    for (;;) {
      Completion c[8];
      read_cq(c, 8);  // nothing of the old connection passes while settling
      if (peer_goodbye_) break;
      if (peer_process_gone()) {
        read_cq(c, 8);
        remove_dead_peer_region();
        break;
      }
      if (deadline.expired()) throw Error(NAA_ERR_TIMEOUT, "no goodbye");
      std::this_thread::yield();
    }
    if (!drain_unexpected()) throw Error(NAA_ERR_TIMEOUT, "unexpected messages not drained");
    settled = !failed_;
  } catch (const Error &e) {
    NAA_LOG_DEBUG("idle shm endpoint not reused yet: %s", e.what());
  }
  if (settled && peer_pidfd_ >= 0) {  // for a next peer in the same process (watch_process)
    kept_pidfd_ = peer_pidfd_;
    kept_pidfd_pid_ = peer_pid_;
  }
  const_cast<IdleRdm &>(idle).old_peer_pidfd = settled ? -1 : peer_pidfd_;
  previous_peer_ = settled ? idle.old_peer : FI_ADDR_UNSPEC;
  peer_pidfd_ = -1;
  peer_pid_ = 0;
  peer_addr_ = FI_ADDR_UNSPEC;
  peer_name_.clear();
  connected_ = settling_ = peer_left_ = peer_goodbye_ = false;
  stash_.clear();
  control_in_.clear();
  return settled;
}

void OfiEndpoint::park_unused() {
  if (reuse_ != Reuse::Server || idle_bound_ == 0 || !sources_ || ep_ == nullptr) return;
  auto idle = std::make_unique<IdleRdm>();
  take_objects(*idle);
  keep_bell_if_spare(*idle);
  context_->park(std::move(idle), idle_bound_);
}

// Whether the endpoint went to the Context: only an shm one whose connection ended well (see
// the top of this file), with nothing of its own in flight. A client's peer may have left
// only after it, with its goodbye answering ours (`peer_left_first` is whether it had left
// before).
bool OfiEndpoint::park(bool peer_left_first) noexcept {
  if (reuse_ == Reuse::No || idle_bound_ == 0 || !sources_ || ep_ == nullptr || failed_ ||
      !connected_)
    return false;
  const bool client = reuse_ == Reuse::Client;
  if (av_inserted_ >= kFreshSlots) {
    NAA_LOG_DEBUG("shm endpoint closed, not reused: %u peers addressed", av_inserted_);
    return false;
  }
  // A server of this process sends no goodbye back (see ~OfiEndpoint): it would never settle.
  if (client && (peer_left_first || (peer_left_ && !peer_goodbye_) ||
                 imms_received_ != imms_sent_ || peer_pid_ == naa::this_process()))
    return false;
  if (!client && !peer_goodbye_) return false;
  try {
    parking_ = true;
    for (const PostedRecv &r : std::vector<PostedRecv>(posted_recvs_))
      fi_cancel(&ep_->fid, reinterpret_cast<void *>(r.context));
    const Deadline deadline = Deadline::after(kControlFlush);
    auto busy = [&] {
      return !posted_recvs_.empty() || tx_pending_ > 0 || control_sends_pending_ > 0 ||
             fence_pending_ > 0;
    };
    while (busy() && !deadline.expired()) {
      Completion c[8];
      read_cq(c, 8);
    }
    if (busy() || failed_) return false;
    if (!client && !drain_unexpected()) return false;
    // All but the peer's (kFreshSlots) and a client's listener's, while the object behind its
    // name was known (address_listener looks again before it is used). A listener never sends
    // to its clients: a slot of ours used before does it no harm.
    const bool keep_listener = client && listener_object_.has_value();
    std::vector<fi_addr_t> others;
    for (const auto &entry : av_names_)
      if (entry.second != peer_addr_ && !(keep_listener && entry.first == listener_))
        others.push_back(entry.second);
    for (fi_addr_t addr : others) forget_address(addr);
  } catch (const std::exception &e) {
    NAA_LOG_DEBUG("shm endpoint closed, not reused: %s", e.what());
    return false;
  }
  auto idle = std::make_unique<IdleRdm>();
  idle->client = client;
  kept_peer_bell_ = std::move(peer_bell_);
  take_objects(*idle);
  idle->old_peer = peer_addr_;
  if (client) {
    idle->old_peer_goodbye = peer_goodbye_;
    idle->old_peer_name = peer_name_;
    idle->old_peer_pid = peer_pid_;
    idle->old_peer_pidfd = peer_pidfd_;
    peer_pidfd_ = -1;
  }
  keep_bell_if_spare(*idle);
  context_->park(std::move(idle), idle_bound_);
  return true;
}

}  // namespace naa::transport::ofi
