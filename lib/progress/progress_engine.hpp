// SPDX-License-Identifier: BSD-3-Clause
// The asynchronous progress engine of NAA_PROGRESS=thread: one library thread that posts
// every thread-mode handle's invocations and reads their completions, so that the caller's
// naa_invoke only enqueues and naa_test only reads a flag, and the data moves while the host
// computes, even where the transport moves it in software (libfabric tcp, Soft-RoCE).
//
// The engine knows no protocol: it is a thread running the progress driver (progress/driver.hpp)
// over its Clients (Sessions), each turn stepping every one of them. When none of them has
// anything to do it polls briefly (only with work in flight), dozes (longer while its callers
// take every invocation back at once), then sleeps: without work on an eventfd alone, with work
// in flight on the endpoints' wait descriptors too, until the earliest client timer (a paced
// final write). It runs while at least one handle holds it.
#pragma once

#include <poll.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "progress/driver.hpp"

namespace naa::progress {

class ProgressEngine : private progress::Work {
 public:
  static constexpr char kThreadName[] = "naa-progress";

  class Client {
   public:
    enum class Step {
      Idle,     // nothing happened; the endpoint is armed: sleeping on wait_fd() is safe
      Moved,    // something happened: step again before sleeping
      Settled,  // the invocation ended (done or failed): the engine drops the client
    };
    // Called on the engine thread only, never for two clients at once.
    virtual Step step() = 0;
    // Called after step() returned Settled, once the engine has dropped the client: tells the
    // application. The engine touches nothing of the client after it.
    virtual void announce() = 0;
    // A descriptor that becomes readable when step() may find something, or -1.
    virtual int wait_fd() const = 0;
    // When step() has something to do without news (a paced final write), or max() for never.
    virtual std::chrono::steady_clock::time_point due() const = 0;

   protected:
    ~Client() = default;
  };

  // The process's engine, started on first use; it stops when the last holder lets go. `cpu`
  // (NAA_PROGRESS_CPU, -1 for none) pins the thread, `spin` (NAA_SPIN_US) is the least it polls
  // with work in flight after the last thing happened; only the holder that starts it decides.
  static std::shared_ptr<ProgressEngine> acquire(int cpu, std::chrono::microseconds spin);
  ~ProgressEngine();
  ProgressEngine(const ProgressEngine &) = delete;
  ProgressEngine &operator=(const ProgressEngine &) = delete;

  // Drives `c` until its step() returns Settled. Takes no lock the thread holds while it steps
  // and makes a system call only to wake the thread when it sleeps (not when it dozes).
  void submit(Client *c);
  // Returns once the engine no longer drives `c` and is not inside any of its calls.
  void withdraw(Client *c);
  // True in a child process forked after the engine started: its thread is not there.
  bool orphaned() const;

 private:
  ProgressEngine(int cpu, std::chrono::microseconds spin);
  void run(int cpu, std::chrono::microseconds spin);
  void take_requests();
  bool withdrawn_since_taken() const;
  void leave_current();
  void track_busy();
  void wake();
  // The driver's side (progress::Work).
  bool done() override { return stop_.load(); }
  progress::Turn turn() override;
  bool woken() override { return all_have_fds_; }
  progress::Armed arm(std::vector<pollfd> &fds) override;
  void woke() override;
  bool background() const override { return true; }
  naa::WaitPlan plan(naa::WaitPlan planned) const override;

  // Requests from the application's threads, taken by the thread between steps; mu_ is never
  // held across a step.
  std::mutex mu_;
  std::condition_variable released_;  // current_ left a client: withdraw() may be waiting
  struct Submitted {
    Client *client;
    naa::Clock::time_point at;
  };
  std::vector<Submitted> submitted_;
  std::vector<Client *> withdrawn_;
  std::atomic<uint64_t> withdrawals_{0};         // how many withdraw() calls ever: checked per step
  std::atomic<bool> requests_{false};            // submitted_ or withdrawn_ changed since taken
  std::atomic<bool> sleeping_{false};            // the thread is (about to be) in poll(2) for good
  std::atomic<uint64_t> submits_{0}, wakes_{0};  // for the log: how many hand-overs woke it
  std::atomic<uint64_t> taken_back_{0};          // for the log: withdrawn before it looked
  std::atomic<Client *> current_{nullptr};       // the client inside step() or announce()
  std::atomic<unsigned> withdrawers_{0};         // withdraw() calls waiting for current_ to change
  std::atomic<bool> stop_{false};
  // Hand-overs withdrawn within kQuick (progress_engine.cpp) of their submit and before the
  // thread took them, since it last took one or one was withdrawn later (written under mu_,
  // read by plan()).
  std::atomic<unsigned> taken_back_in_a_row_{0};

  // The thread's own.
  std::vector<Client *> active_;
  uint64_t withdrawals_taken_ = 0;
  std::vector<pollfd> idle_fds_;  // of the clients the last turn found idle, armed
  bool all_have_fds_ = true;
  naa::Clock::time_point due_ = naa::Clock::time_point::max();
  progress::Policy policy_;  // its expected: how long the engine was busy last (about a round trip)
  naa::Expected busy_for_;
  bool busy_ = false;
  naa::Clock::time_point busy_since_{};

  const int wake_fd_;
  const uint64_t fork_generation_;
  std::thread thread_;
};

}  // namespace naa::progress
