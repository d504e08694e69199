// SPDX-License-Identifier: BSD-3-Clause
// Bounds every TCP connection to the server's port by a deadline from its first byte until
// the server answers it (accept or reject). libfabric 1.17's tcp provider keeps a connection
// that never completes its request open for ever, and blocks in recv() on one that announces
// private data it does not send (issue 18.2, 18.3); neither can be reached through the
// libfabric API. The sweeper finds such sockets among this process's descriptors: on our
// port, not listening, nothing ever sent by us, older than the deadline. It shuts them down,
// which ends the provider's wait and lets it free them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

#include <dirent.h>
#include <sys/types.h>

namespace naa::server {

class HandshakeSweeper {
 public:
  HandshakeSweeper(uint16_t port, std::chrono::milliseconds timeout);
  ~HandshakeSweeper();
  HandshakeSweeper(const HandshakeSweeper &) = delete;
  HandshakeSweeper &operator=(const HandshakeSweeper &) = delete;

 private:
  void run();
  void sweep();

  const uint16_t port_;
  const std::chrono::milliseconds timeout_;
  // Opened once: when the descriptors run out, the sweep is what frees them (18.3).
  DIR *const fd_dir_;
  std::map<ino_t, std::chrono::steady_clock::time_point> first_seen_;  // sweeper thread only
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace naa::server
