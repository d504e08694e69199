// SPDX-License-Identifier: BSD-3-Clause
#include "worker_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <utility>

namespace naa::server {

void WorkerPool::run(std::function<void()> job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (parked_ > jobs_.size()) {
    gap_.observe(Clock::now() - last_parked_);
    jobs_.push_back(std::move(job));
    waiting_jobs_.store(jobs_.size(), std::memory_order_release);
    wake_.notify_one();
    return;
  }
  Thread &t = threads_.emplace_back();
  try {
    t.thread = std::thread(&WorkerPool::serve, this, &t, std::move(job));
  } catch (...) {
    threads_.pop_back();  // no thread to join (stop() would throw joining it)
    throw;
  }
}

void WorkerPool::serve(Thread *self, std::function<void()> job) {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  for (;;) {
    job();
    job = nullptr;  // what it holds (the client's connection) goes before the thread parks
    lock.lock();
    if (stopping_ || parked_ >= max_parked_) break;
    ++parked_;
    // Named while parked (a client's Connection names it again), under the lock: once top -H
    // or a test (test_worker_pool) sees the name, the next client is handed to this thread.
    pthread_setname_np(pthread_self(), "naa-parked");
    last_parked_ = Clock::now();
    if (const std::chrono::nanoseconds due = gap_.due(spin_); due.count() > 0)
      poll_for_job(lock, due);
    wake_.wait_for(lock, park_time_, [this] { return stopping_ || !jobs_.empty(); });
    --parked_;
    if (stopping_ || jobs_.empty()) break;
    job = std::move(jobs_.front());
    jobs_.pop_front();
    waiting_jobs_.store(jobs_.size(), std::memory_order_release);
    lock.unlock();
  }
  self->ended = true;
  ++ended_;
  lock.unlock();
  if (ended_hook_) ended_hook_();
}

void WorkerPool::poll_for_job(std::unique_lock<std::mutex> &lock, std::chrono::nanoseconds due) {
  const Clock::time_point until = Clock::now() + due;
  lock.unlock();
  {
    naa::YieldingPoller yielding;
    yielding.poll();
    // The client's process may need this core (loopback): it moves meanwhile.
    while (waiting_jobs_.load(std::memory_order_acquire) == 0 && Clock::now() < until)
      sched_yield();
  }
  lock.lock();
}

void WorkerPool::reap() {
  std::list<Thread> ended;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Called on every pass of the accept loop: with 1000 clients, walking the list each time
    // was a tenth of an idle server's CPU.
    if (ended_ == 0) return;
    ended_ = 0;
    for (auto it = threads_.begin(); it != threads_.end();) {
      auto next = std::next(it);
      if (it->ended) ended.splice(ended.end(), threads_, it);
      it = next;
    }
  }
  for (Thread &t : ended) t.thread.join();
}

void WorkerPool::stop() {
  std::list<Thread> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    wake_.notify_all();
    all.splice(all.end(), threads_);
  }
  for (Thread &t : all) t.thread.join();
}

}  // namespace naa::server
