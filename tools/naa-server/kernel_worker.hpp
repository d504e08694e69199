// SPDX-License-Identifier: BSD-3-Clause
// Running kernels so that a crashing or endless plugin kernel cannot take the server down.
//
// Regions live in memfd-backed shared mappings. An isolated kernel runs in a worker process
// forked per connection, which maps the same memfds (its own mapping, so registration flags such
// as MADV_DONTFORK on the parent's pages do not matter) and runs kernels on request over a
// socketpair. The connection thread waits for the answer with a deadline: a worker that dies
// yields NAA_KERNEL_RC_CRASHED, one that overruns is killed and yields 0x02 (kernel timeout);
// either way a fresh worker is forked for the next isolated invocation.
//
// Built-in kernels are ours and bounded by their region sizes, so by default they run in the
// connection thread: no context switches on the fast path. --isolate=all moves them into the
// worker as well, --isolate=none runs plugins in-process too (and gives no time limit).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/mrsp.hpp"
#include "naa_kernel.h"

namespace naa::server {

enum class Isolation { None, Plugins, All };

struct KernelPolicy {
  Isolation isolation = Isolation::Plugins;
  std::chrono::milliseconds timeout{30000};  // for isolated kernels
};

// Parses "none", "plugins" or "all"; false for anything else.
bool parse_isolation(const std::string &text, Isolation *out);

// One NAA-side region: a zero-filled memfd mapping, shared with the kernel worker.
class SharedRegion {
 public:
  SharedRegion() = default;
  SharedRegion(SharedRegion &&other) noexcept;
  SharedRegion &operator=(SharedRegion &&other) noexcept;
  ~SharedRegion();

  // 0, or the errno of what failed (*why says it). Size 0 gives an empty region.
  int allocate(size_t size, std::string *why);
  void *addr() const { return addr_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }

 private:
  void *addr_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

class KernelRunner {
 public:
  // `stop` (may be null): the server is stopping, so an isolated kernel is not waited for.
  KernelRunner(const KernelPolicy &policy, const std::atomic<bool> *stop)
      : policy_(policy), stop_(stop) {}
  ~KernelRunner() { stop(); }
  KernelRunner(const KernelRunner &) = delete;
  KernelRunner &operator=(const KernelRunner &) = delete;

  // Runs `kernel` on `parameters` (views of the non-internal `regions`), in the worker when the
  // policy says so. Returns the kernel's return code, NAA_KERNEL_RC_CRASHED or 0x02.
  uint8_t run(const naa_kernel &kernel, bool builtin, const std::vector<SharedRegion> &regions,
              const std::vector<protocol::mrsp::RequestEntry> &request,
              const std::vector<naa_kernel_region> &parameters, uint32_t user_data,
              const std::string &peer);

  void stop();  // kills the worker, if any
  // Whether a worker has mapped the regions (an isolated kernel ran).
  bool forked() const { return forked_; }

 private:
  void kill_worker() const;
  bool spawn(const std::vector<SharedRegion> &regions,
             const std::vector<protocol::mrsp::RequestEntry> &request, const std::string &peer);

  const KernelPolicy policy_;
  const std::atomic<bool> *const stop_;
  pid_t pid_ = -1;
  int sock_ = -1;
  bool forked_ = false;
};

}  // namespace naa::server
