// SPDX-License-Identifier: BSD-3-Clause
// The one wake-up of ofi+shm: a bell for a thread asleep on an shm endpoint's completion queue
// or on an shm listener's queue of connection requests. libfabric 1.17's shm wakes nobody when
// a peer writes (fi_shm(7): manual progress only; a peer's message sets a flag in our region),
// so a connection of naa-server that had nothing to do napped, and an invocation after a pause
// waited for the rest of its nap: up to 1/16 of the pause, 0.5 s after a long one; 64 idle
// clients woke it 230 times a second; a listener found a connection request only after its
// nap. Each shm endpoint and each named shm listener therefore has a bell: an abstract Unix
// datagram socket to sleep on, and a word in a small shared page that says whether it sleeps.
// The sleeper raises the word before it looks at its queue for the last time; the peer, after
// every post, looks at the word and rings (one datagram) only when it is raised: a sender that
// keeps its peer busy pays one atomic read-modify-write per post, and a sleeper cannot miss a
// post (both sides change the word with read-modify-writes, which order each side's queue
// access against the other's).
// A second word, on a cache line of its own, holds the CPU the endpoint's thread last raised the
// first on or polled on, plus one (0: not known, as in an older libnaa's page): where it will
// likely be woken, and where it runs while it polls.
//
// Both are named after the shm object of what sleeps: an endpoint's region ("/PID-HEX" becomes
// "/PID-HEX.bell"), a listener's object ("/naa-UID-PORT.bell"), so a peer finds them from the
// address it already has, and a peer whose page is there is a libnaa that rings (an older one
// has none, and its peers keep napping for it). Private to lib/transport.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "deadline.hpp"

namespace naa::transport::ofi::shm {

// The words of a bell page: the sleep flag, and (kBellCpuWord words in) the CPU + 1.
inline constexpr size_t kBellCpuWord = 16;

// Ours: made with the endpoint or listener, gone with it (the page unlinked; a killed process's
// page is removed by the peer that sees it die, as its region is, and a killed server's by the
// next server at its port or the sweep of leftovers, shm/leftovers.hpp).
class Bell {
 public:
  // The bell page `object` (bell_object, listener_bell_object), which must not exist;
  // ok() is false when `object` is empty, and (logged) when the page or the socket cannot be
  // made: its owner then naps as before.
  explicit Bell(const std::string &object);
  ~Bell();
  Bell(const Bell &) = delete;
  Bell &operator=(const Bell &) = delete;

  bool ok() const { return word_ != nullptr && fd_ >= 0; }
  int fd() const { return fd_; }  // readable when rung
  // Before the last look at the queue: from here on, a peer's post rings. Publishes the
  // calling thread's CPU.
  void raise();
  // After the sleep: takes the rings that came and lowers the word.
  void lower();
  enum class Woken { No, ByRing, ByInterrupt };
  // Raised: sleeps until rung, `interrupt` (-1: none) is readable or `timeout` passes, then
  // lowers. Without a bell (!ok()), a nap that only `interrupt` ends.
  Woken sleep(Deadline::Clock::duration timeout, int interrupt);
  // On a poll that found nothing: publishes the calling thread's CPU where it changed (a peer
  // reads it only now and then, so an unchanged line is not written).
  void publish_cpu() noexcept {
    const int cpu = sched_getcpu();  // glibc reads it from rseq or the vDSO: no system call
    const uint32_t word = cpu < 0 ? 0u : static_cast<uint32_t>(cpu) + 1;
    if (word_[kBellCpuWord].load(std::memory_order_relaxed) != word)
      word_[kBellCpuWord].store(word, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint32_t> *word_ = nullptr;
  int fd_ = -1;
  std::string object_;
};

// The peer's, for ringing it.
class BellRope {
 public:
  // For the bell page `object` of a peer; rings() is false where it has no bell (not shm, or
  // an older libnaa).
  explicit BellRope(const std::string &object);
  ~BellRope();
  BellRope(const BellRope &) = delete;
  BellRope &operator=(const BellRope &) = delete;

  bool rings() const { return has_bell_; }
  // Whether this rope is still the one for the bell page `object`: the same page (its inode)
  // is there under that name. A kept endpoint's peer drops its bell while short of descriptors
  // and makes a new page under the same name later, a server started anew at a port makes a
  // new listener's page: a rope to the old page would never wake them.
  bool still_for(const std::string &object) const;
  // After a post to the peer: rings if it sleeps (always, where its page could not be mapped).
  // The read is a read-modify-write, as is the sleeper's raise: the two are ordered on the
  // word, so a post before our read is seen by a sleeper whose raise came after it.
  void pull() noexcept {
    if (!has_bell_) return;
    if (word_ != nullptr && word_->fetch_and(0, std::memory_order_seq_cst) == 0) return;
    ring();
  }
  // While awaiting the peer (no post of ours to order against): a plain look at the word on
  // each empty read, the read-modify-write only when the peer sleeps.
  void nudge() noexcept {
    if (word_ != nullptr && word_->load(std::memory_order_relaxed) != 0) pull();
  }
  // Whether the peer's bell is down: its thread is not asleep on it (or was rung already).
  bool peer_awake() const noexcept {
    return word_ != nullptr && word_->load(std::memory_order_relaxed) == 0;
  }
  // The CPU the peer last raised its bell or polled on, -1 where it never did or did not say.
  int cpu() const noexcept {
    if (word_ == nullptr) return -1;
    return static_cast<int>(word_[kBellCpuWord].load(std::memory_order_relaxed)) - 1;
  }

 private:
  void ring() noexcept;

  bool has_bell_ = false;
  std::atomic<uint32_t> *word_ = nullptr;
  std::string object_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;  // of the page mapped (0: none)
  std::string socket_name_;
  int fd_ = -1;  // unbound, for sending
};

// The bell page of the endpoint named `name` ("fi_shm://..."; "" when not shm).
std::string bell_object(const std::string &name);
// The bell page of the listener at `address` ("fi_ns://SERVICE"; "" for any other address).
std::string listener_bell_object(const std::string &address);

}  // namespace naa::transport::ofi::shm
