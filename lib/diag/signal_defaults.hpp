// SPDX-License-Identifier: BSD-3-Clause
// Signals a library loaded with libfabric takes over. Debian's libfabric 1.17 links its psm
// provider against libinfinipath.so.4, whose constructor installs one handler for SIGINT,
// SIGTERM, SIGSEGV, SIGBUS, SIGILL and SIGABRT in every process that loads libfabric, with
// InfiniPath hardware or without, unless IPATH_NO_BACKTRACE is set. That handler prints a
// backtrace and calls exit(1): atexit handlers and library destructors then run inside the
// signal handler, and libfabric's destructor waits for the lock that an interrupted
// fi_getinfo holds. A client sent SIGTERM (scancel, a job's time limit, a test's kill) while
// it opened its first handle hung until SIGKILL; a crash ended with status 1 and no core; a
// handler the program had before it loaded libnaa (dlopen: Python's SIGINT) was replaced.
#pragma once

#include <csignal>

namespace naa::diag {

// Gives each of those signals whose handler lies in libinfinipath its default action back.
// libnaa runs it when it is loaded (before the program's main,
// or from dlopen), naa-server first thing in main: a handler the program installs later is
// not touched.
void restore_signal_defaults() noexcept;

// The actions of those signals now, to give back after loading a library that may bring
// libinfinipath (a transport module, which loads libfabric): give_back() puts back each one
// whose handler then lies in libinfinipath, so that the program's own handlers (naa-server's
// stop, Python's SIGINT) survive the load.
class TakenSignals {
 public:
  TakenSignals() noexcept;
  void give_back() const noexcept;

 private:
  struct sigaction before_[6];
};

// Logs (info), once per process, which signals restore_signal_defaults gave back.
void report_signal_defaults();

}  // namespace naa::diag
