// SPDX-License-Identifier: BSD-3-Clause
// The completion queues of a verbs Context, shared by all its queue pairs (doc/transport.md,
// "One completion queue for many queue pairs"). Private to lib/transport.
//
// A work completion names its queue pair (qp_num), so whoever polls a shared CQ hands each
// completion to its queue pair's CqMember, and rings that member's bell (an eventfd) when its
// endpoint is armed for a sleep. A thread that sleeps must be woken whoever's completion comes,
// and a thread that armed an endpoint may never sleep on it (naa_waitany leaves the handles it
// did not return armed), so no sleeper can be trusted to poll for the others: the CQs' one
// completion channel is watched by a thread of the Context's own, started by the first arming,
// which polls the CQ that signalled and rings whom it concerns. It sleeps while no endpoint is
// armed (the CQs are then not asked for events), so polling endpoints never wake it, and
// while the CQ is polled anyway it asks again only after a quiet spell (CqSet below).
#pragma once

#include <infiniband/verbs.h>

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "transport/verbs/verbs_cm.hpp"

namespace naa::transport::verbs {

class SharedCq;

// One queue pair's share of a CQ: the completions found for it by whoever polled, and the
// bell its thread sleeps on.
class CqMember {
 public:
  CqMember(SharedCq &cq, uint32_t slots);
  ~CqMember();  // leaves the CQ, if leave() did not
  CqMember(const CqMember &) = delete;
  CqMember &operator=(const CqMember &) = delete;

  ibv_cq *cq() const;
  int wait_fd() const { return bell_; }

  // Once its queue pair exists: from now on its completions are kept for it.
  void attach(uint32_t qp_num);
  // Destroys the queue pair (`destroy_qp`) and takes what is left of its completions off the
  // CQ, both under the CQ's lock, so that a queue pair created later with the same number never
  // gets them.
  template <typename DestroyQp>
  void leave(DestroyQp destroy_qp);

  // Up to `max` of its completions: those found for it already, else what the CQ has now.
  size_t poll(ibv_wc *out, size_t max);
  // Endpoint::arm_wait(): false when a completion is there already; true when the bell will
  // ring for the next one. Armed until a poll() returns something.
  bool arm();

 private:
  friend class SharedCq;
  void leave_locked();

  SharedCq &cq_;
  const uint32_t slots_;  // CQ entries reserved for the queue pair's work requests
  uint32_t qp_num_ = 0;
  bool attached_ = false;
  bool left_ = false;
  // Under the CQ's lock:
  std::vector<ibv_wc> found_;  // completions taken off the CQ for this member, from found_head_
  size_t found_head_ = 0;
  bool armed_ = false;
  bool rung_ = false;
  int bell_ = -1;  // eventfd
};

// One CQ, shared by the queue pairs of members that reserved entries for their work requests:
// the CQ never holds more completions than it has entries, since a queue pair in error flushes
// every posted request, signalled or not.
class SharedCq {
 public:
  SharedCq(ibv_context *device, ibv_comp_channel *channel, int max_cqe, uint32_t first_slots);
  ~SharedCq();
  SharedCq(const SharedCq &) = delete;
  SharedCq &operator=(const SharedCq &) = delete;

  ibv_cq *get() const { return cq_.get(); }
  // Reserves `slots` entries, growing the CQ (ibv_resize_cq) when needed; false when it cannot.
  bool reserve(uint32_t slots);
  // The completion channel said this CQ signalled (the Context's thread). True when it did not
  // ask for the next event, since endpoints poll it anyway: recheck() after kRecheck then.
  bool signalled();
  // Asks for the next event if nobody polled the CQ since signalled() or the last recheck();
  // true while it still waits for that.
  bool recheck();

 private:
  friend class CqMember;
  // Everything on the CQ to its members; `self` (the member polling) is not rung. How many
  // completions it took off.
  size_t drain_locked(const CqMember *self);
  void hand_over(const ibv_wc &wc, const CqMember *self);
  void ask_for_event_locked();

  std::mutex mu_;
  Owned<ibv_cq, ibv_destroy_cq> cq_;
  const int max_cqe_;
  uint32_t reserved_ = 0;                             // under mu_
  std::unordered_map<uint32_t, CqMember *> members_;  // by qp_num; under mu_
  unsigned armed_ = 0;                                // members armed; under mu_
  bool event_asked_ = false;           // ibv_req_notify_cq since the last event; under mu_
  bool polled_ = false;                // an unarmed member drained the CQ; under mu_
  std::atomic<bool> deferred_{false};  // no event asked, for the polls: recheck(); set under mu_
};

// A Context's CQs and their completion channel, and the thread that watches it.
//
// A CQ's event is for any completion: asked for again at once while one endpoint is armed, it
// would wake the thread for every completion of the others, which their own polls hand to the
// armed one anyway. So while the CQ is polled the thread asks again only once kRecheck has
// passed without a poll: a polling thread that stops without arming (it got its completion
// and went back to the program) leaves an armed endpoint's completion unnoticed for at most
// twice that.
class CqSet {
 public:
  explicit CqSet(ibv_context *device);
  ~CqSet();  // after every member left
  CqSet(const CqSet &) = delete;
  CqSet &operator=(const CqSet &) = delete;

  // A place on a CQ with room for `slots` completions (one more CQ when none has it).
  std::unique_ptr<CqMember> join(uint32_t slots);
  // Before an endpoint can sleep: the channel's thread runs.
  void watch();

 private:
  static constexpr std::chrono::milliseconds kRecheck{1};

  void run();
  bool recheck_all();

  ibv_context *const device_;
  const pid_t pid_;  // a forked child's copy has no thread to stop
  int max_cqe_ = 0;
  Owned<ibv_comp_channel, ibv_destroy_comp_channel> channel_;
  int stop_ = -1;  // eventfd: the thread ends
  std::mutex mu_;
  std::vector<std::unique_ptr<SharedCq>> cqs_;  // under mu_
  std::thread thread_;                          // under mu_
  std::atomic<bool> watched_{false};            // thread_ runs
};

template <typename DestroyQp>
void CqMember::leave(DestroyQp destroy_qp) {
  std::lock_guard<std::mutex> lock(cq_.mu_);
  destroy_qp();
  leave_locked();
}

}  // namespace naa::transport::verbs
