// SPDX-License-Identifier: BSD-3-Clause
// One handle's life: connected -> (MRSP) -> ready -> running -> ready ... A wait that times
// out leaves the invocation running. A lost connection (or naa_cancel) leaves it disconnected:
// the lost invocation reports NAA_ERR_CONNECTION once and is never sent again (at most once),
// the next invoke connects again (attempts until NAA_CONNECT_TIMEOUT runs out). Other errors,
// and a lost connection with NAA_RECONNECT=0, leave it failed (sticky: later calls report it
// until naa_finalize or naa_cancel).
// Everything an invocation needs (registered memory, both write chains, the immediate) is built
// here once, so that invoke() only posts. With NAA_PROGRESS=thread, invoke() only hands the
// session to the progress engine, whose thread posts and completes it through step(): the
// protocol stays here, the engine only decides when to call.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "error.hpp"
#include "protocol/energy_report.hpp"
#include "protocol/kernel_list.hpp"
#include "protocol/mrsp.hpp"
#include "config/options.hpp"
#include "protocol/pacing.hpp"
#include "naa.h"
#include "progress/driver.hpp"
#include "wait_plan.hpp"
#include "progress/wait_set.hpp"
#include "progress/progress_engine.hpp"
#include "protocol/regions.hpp"
#include "rm/resolver.hpp"
#include "session/settings.hpp"
#include "transport/transport.hpp"

namespace naa::session {

class Session : private progress::ProgressEngine::Client {
 public:
  // Connects (from settings.local_ip, with settings.auth_key) and runs MRSP by `deadline`
  // (naa_create's NAA_CONNECT_TIMEOUT, counted from its start). settings.pacing guards the final
  // write of each invocation unless the NAA identifies itself as a libnaa server. Keeps the
  // transport for reconnecting. Throws Error.
  Session(std::unique_ptr<transport::Transport> transport, uint8_t function_code,
          std::vector<protocol::Region> regions, std::unique_ptr<rm::Target> target,
          std::shared_ptr<const Settings> settings, Deadline deadline);
  ~Session();

  // The naa_* semantics, returning naa_error_t codes. A cancel() from another thread ends a
  // wait() or test() in progress on the invocation it cancels with NAA_ERR_CANCELED, waking
  // it, and does not wait for its end (see cancel()).
  int invoke();
  int test(bool *flag, naa_status *status);
  int wait(naa_status *status);
  int cancel();

  // For completion over many handles (lib/session/completion.cpp), which sleeps on the
  // waiting thread's set of descriptors (progress/wait_set.hpp), kept across its calls:
  // the number of the invocation in flight (0: none), which the caller then names to the
  // calls below, so that an invocation that ended elsewhere (naa_cancel, another thread's
  // naa_wait) is never mistaken for the one started after it; whether end() would now end it,
  // done or failed (ends nothing itself); ending it as test() does; taking it from the
  // progress engine so that the caller drives it as wait() does, and giving it back; arming
  // the endpoint and registering its descriptor in the set, with armed->ready telling that
  // something may be there already and armed->due lowered to the pacing timer; and what
  // wait() returns when the deadline has passed.
  uint64_t in_flight();
  bool done(uint64_t invocation);
  int end(uint64_t invocation, bool *flag, naa_status *status);
  // How the waiter looks at the handle: no descriptor (shm) or none the set took: poll it
  // every turn; a descriptor in the set but not armed (a paced final write, news): poll it;
  // armed and in the set: nothing until its descriptor fires. Inactive: nothing in flight;
  // Idle: nothing in flight, and in the set, which naa_invoke tells (WaitSet::touched). The
  // set is told too when a Watched handle stops being so (polled, moved, gone): its thread
  // may keep both across calls without asking the handle again.
  enum class Watch { None, Polled, Watched, Inactive, Idle };
  // join_wait: whether anything is in flight (else Inactive or Idle), takes it back, tells how
  // to wait for it and whether an earlier arm() left it Watched in `set` with nobody polling it
  // since (else Polled); one lock for them all.
  Watch join_wait(progress::Policy *policy, const progress::WaitSet *set, uint64_t *invocation);
  void give_back();
  Watch arm(progress::Armed *armed, const std::shared_ptr<progress::WaitSet> &set);
  int expire(uint64_t invocation, naa_status *status);
  std::chrono::milliseconds timeout() const { return timeout_; }
  const config::Progress &progress() const { return progress_; }
  const std::string &peer() const { return ep_->peer(); }  // "host:port" of the NAA
  void describe(naa_handle_info_t *info);                  // naa_handle_info(3)
  // Whether the NAA of the last connection named itself naa-server in its accept (doc/protocol.md
  // §1), and, where settings.list_kernels_from asked for them, the kernels it listed (§3.6):
  // nothing from an NAA that does not list them.
  bool naa_is_libnaa_server() const { return libnaa_server_; }
  const std::optional<protocol::kernel_list::Page> &naa_kernels() const { return naa_kernels_; }
  // When the last completed invocation's stages were seen, for NAA_STATS and NAA_TRACE (the
  // C entry layer asks after the call that completed it): naa_invoke began, our writes were
  // seen complete, the final write-with-immediate was posted, the NAA's reply was polled.
  // A stage is seen when progress is driven: a program that computes between naa_invoke and
  // naa_wait (NAA_PROGRESS=manual) sees the writes and the reply at once.
  // With NAA_ENERGY, the NAA's joules over the kernel run that made the reply, where the NAA
  // reports them (doc/protocol.md §3.5): naa_uj, when naa_measured; naa_source: what its
  // counters count.
  struct Stages {
    Deadline::Clock::time_point invoked, written, final_posted, final_post_returned, replied;
    bool naa_measured;
    uint64_t naa_uj;
    std::string naa_source;
  };
  Stages last_stages();

 private:
  // Lost: the connection went while an invocation was in flight, which has yet to report it.
  enum class State { Ready, Running, Lost, Disconnected, Failed };
  // How far the invocation in flight got (State::Running); Idle in every other State. Written
  // only by whoever drives it (Owner below). Our writes' completion and the NAA's reply are
  // two completions, polled in either order where they come through two queues (verbs).
  enum class Phase : uint8_t {
    Idle,      // nothing in flight
    Unposted,  // handed to the engine, nothing posted yet: its step() or a take-back posts it
    Paced,     // the data writes are posted; chain_'s final write waits for the pacing guard
    Posted,    // every write is posted; neither their completion nor the reply is polled
    Written,   // our writes completed; the reply is awaited
    Overdue,   // Written, and a wait ran out: the NAA may have lost the request (§4.4)
    Answered,  // the reply came; our writes' completion is still to be polled
    Done,      // both polled: complete() reports the reply
    Broken,    // the engine's post or poll threw engine_error_, which fail() reports
  };

  void connect(Deadline deadline);
  void connect_first(Deadline deadline);
  void disconnect();
  int reconnect();
  int look_before_invoking(Deadline::Clock::time_point now);
  void check_single_send();
  bool fail_over();
  int reported(int rc);
  Deadline::Clock::time_point final_write_not_before() const;
  int test_locked(bool *flag, naa_status *status);
  int wait_locked(naa_status *status);
  bool cancel_asked() const;
  bool take_cancel();
  void close_connection();
  int cancelled();
  int ended_elsewhere(uint64_t invocation);
  void waited_from(const std::shared_ptr<progress::WaitSet> &set);
  progress::WaitSet *sleeping();
  void register_buffers(transport::Endpoint &ep);
  size_t encode_request();
  size_t asks_size() const;
  void take_energy_answer(const uint8_t *msg, size_t len, size_t advert_len);
  void take_kernel_list(const uint8_t *msg, size_t len, size_t offset);
  void exchange_memory_regions(size_t request_len, Deadline deadline);
  void take_reply(const uint8_t *msg, size_t len);
  void build_chains();
  void post_invocation();
  naa::Clock::time_point final_write_due();
  void absorb(const transport::Completion &c, bool first_of_poll);
  void writes_through();
  void replied(const transport::Completion &c);
  size_t poll_once();
  bool finished() const { return phase_ == Phase::Done; }
  int complete(naa_status *status);
  int fail(const Error &e);
  int writes_timed_out() const;
  int unanswered();
  void abandon();

  // NAA_PROGRESS=thread.
  Step step() override;
  void announce() override;
  int wait_fd() const override { return ep_->wait_fd(); }
  naa::Clock::time_point due() const override;
  int settled(naa_status *status);
  progress::Policy policy_locked() const;
  int wait_on_endpoint(naa_status *status);
  int timed_out();
  void take_back_locked();
  void give_back_locked();

  std::mutex mu_;
  // Invocations are numbered from 1 on; the number of the last one started, written under
  // mu_, read also without it by cancel().
  std::atomic<uint64_t> invocation_{0};
  // naa_cancel from another thread, which must not wait for mu_ while a wait() holds it: the
  // highest invocation number a cancel() asked to end, and the sets of the threads that may
  // be waiting for the handle (each thread registers its set as it goes to sleep on it; kept,
  // not undone, as a wake of a thread that no longer waits costs it one look), under wake_mu_.
  // Whoever holds mu_ first ends the invocation asked for (take_cancel()).
  std::atomic<uint64_t> cancel_asked_{0};
  uint64_t last_cancelled_ = 0;  // the number of the last invocation a cancel ended
  std::mutex wake_mu_;
  std::vector<std::weak_ptr<progress::WaitSet>> waiters_;
  // What a wait over many handles asks each of them (join_wait), next to the lock: a thousand
  // handles cost a thousand cache lines, not several thousand.
  const std::chrono::milliseconds timeout_;
  const config::Progress progress_;
  State state_ = State::Ready;
  bool armed_ = false;  // arm() found the endpoint empty, nobody polled it since
  // The set its endpoint's descriptor is registered in (at most one), and that set's count of
  // drops when it was last known to be there.
  std::shared_ptr<progress::WaitSet> watch_set_;
  uint64_t watch_drops_ = 0;
  // How long round trips take, for the wait plan (wait_plan.hpp).
  naa::Expected round_trip_;
  // Whether polling paid in its recent waits (NAA_PROGRESS=adaptive); the waits update it.
  mutable progress::SpinBudget spin_budget_;

  // Shared with the settings kept for the next naa_create (Settings::resolve_shared).
  const std::shared_ptr<const Settings> settings_;
  // Destroyed after everything below: endpoints may hold on to what it opened.
  const std::unique_ptr<transport::Transport> transport_;
  const uint8_t function_code_;
  const std::vector<protocol::Region> regions_;
  std::unique_ptr<rm::Target> target_;
  std::string transport_name_;  // as connected ("verbs", "ofi+tcp", "auto: ofi+shm", ...)
  int failed_code_ = NAA_SUCCESS;
  std::string peer_;  // the NAA's address, also while disconnected

  // Declared before everything registered with it: members are destroyed in reverse order,
  // and memory must be deregistered before its endpoint goes.
  std::unique_ptr<transport::Endpoint> ep_;
  std::array<uint8_t, 2 * protocol::mrsp::kBufferSize> mrsp_buf_{};  // [receive | send]
  std::unique_ptr<transport::MemoryRegion> mrsp_mr_;
  std::vector<std::unique_ptr<transport::MemoryRegion>> region_mrs_;
  // NAA energy (doc/protocol.md §3.5), asked for with NAA_ENERGY: whether this connection's
  // NAA agreed, and what it counts; the last completed invocation's figure.
  bool naa_energy_ = false;
  std::string naa_energy_source_;
  std::optional<uint64_t> naa_uj_;
  bool libnaa_server_ = false;
  std::optional<protocol::kernel_list::Page> naa_kernels_;
  std::vector<protocol::mrsp::AdvertEntry> naa_regions_;
  std::unique_ptr<transport::WriteChain> first_chain_;   // every input
  std::unique_ptr<transport::WriteChain> steady_chain_;  // inputs without single-send
  bool first_invoked_ = false;
  // Checksums of the single-send inputs that are not in place, as first sent.
  bool single_send_summed_ = false;
  std::vector<uint64_t> single_send_sums_;
  uint32_t request_imm_;

  bool watched_by(const progress::WaitSet *set);
  bool watch(const std::shared_ptr<progress::WaitSet> &set);
  void unwatch();
  void disarm();

  Deadline::Clock::time_point invoked_at_{};
  Deadline::Clock::time_point completed_at_{};  // the last invocation's end, or the connection's
  Deadline::Clock::time_point writes_completed_{};  // for Stages
  Deadline::Clock::time_point seen_at_{};           // when the poll absorb() is handling returned

  Phase phase_ = Phase::Idle;
  transport::WriteChain *chain_ = nullptr;  // the invocation's: first_chain_ or steady_chain_
  transport::Completion reply_{};

  // Pacing (doc/protocol.md §4.4): the next final write-with-immediate goes no earlier than
  // pacing_.guard() after the NAA's last message was polled. Off for a libnaa server.
  protocol::Pacing pacing_;
  Deadline::Clock::time_point naa_message_polled_{};
  Deadline::Clock::time_point final_write_posted_{};  // for Stages
  Deadline::Clock::duration
      exchange_took_{};  // the memory-region exchange's round trip, for pacing_
  // When that post returned, with what it copied itself (NAA_STATS' transfer).
  Deadline::Clock::time_point final_write_returned_{};

  // NAA_PROGRESS=thread: who drives the invocation in flight. Always Caller in the other modes
  // and outside State::Running. Caller: the application's thread holding mu_. Engine: the
  // progress thread alone uses the endpoint and the invocation's fields (phase_, reply_,
  // naa_message_polled_, engine_error_), from hand_over() until release_from_engine().
  // Settled: the engine ended it (phase_ Done or Broken, announce()) and let go; the next call
  // that looks collects it (collect()). Only announce() writes it off mu_, Engine -> Settled.
  // The combinations that occur: outside Running, Caller and Phase::Idle; in Running, Caller
  // with Paced to Done (take_back_locked() posts an Unposted one), Engine with Unposted to
  // Broken, Settled with Done or Broken.
  enum class Owner : uint8_t { Caller, Engine, Settled };
  std::shared_ptr<progress::ProgressEngine> engine_;
  std::atomic<Owner> owner_{Owner::Caller};
  std::optional<Error> engine_error_;  // set with Phase::Broken
  void hand_over();
  void release_from_engine();
  void collect();
};

}  // namespace naa::session
