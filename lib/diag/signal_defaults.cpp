// SPDX-License-Identifier: BSD-3-Clause
#include "diag/signal_defaults.hpp"

#include <dlfcn.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <iterator>
#include <string>

#include "diag/log.hpp"

namespace naa::diag {
namespace {

constexpr int kTaken[] = {SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGILL, SIGABRT};
static_assert(std::size(kTaken) == 6, "TakenSignals keeps one action per signal of kTaken");

// One bit per signal number given back; read by report_signal_defaults.
std::atomic<unsigned long> restored{0};
std::atomic<bool> reported{false};

// Whether `handler` is code of libinfinipath (by the file its address lies in).
bool infinipath_handler(void *handler) {
  Dl_info where{};
  if (dladdr(handler, &where) == 0 || where.dli_fname == nullptr) return false;
  const char *base = std::strrchr(where.dli_fname, '/');
  return std::strncmp(base != nullptr ? base + 1 : where.dli_fname, "libinfinipath.so", 16) == 0;
}

}  // namespace

namespace {

// Gives each signal whose handler lies in libinfinipath the action `to(sig)`.
template <typename To>
void give_back(To to) noexcept {
  for (size_t i = 0; i < std::size(kTaken); ++i) {
    const int sig = kTaken[i];
    struct sigaction now {};
    if (sigaction(sig, nullptr, &now) != 0) continue;
    void *handler = (now.sa_flags & SA_SIGINFO) ? reinterpret_cast<void *>(now.sa_sigaction)
                                                : reinterpret_cast<void *>(now.sa_handler);
    if (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN || !infinipath_handler(handler))
      continue;
    if (sigaction(sig, &to(i), nullptr) != 0) continue;
    restored.fetch_or(1UL << sig);
  }
}

}  // namespace

void restore_signal_defaults() noexcept {
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  give_back([&](size_t) -> const struct sigaction & { return fallback; });
}

TakenSignals::TakenSignals() noexcept {
  for (size_t i = 0; i < std::size(kTaken); ++i) sigaction(kTaken[i], nullptr, &before_[i]);
}

void TakenSignals::give_back() const noexcept {
  diag::give_back([&](size_t i) -> const struct sigaction & { return before_[i]; });
}

void report_signal_defaults() {
  // Called by every naa_create: a plain load for all but the first.
  const unsigned long mask = restored.load();
  if (mask == 0 || reported.load(std::memory_order_relaxed) || reported.exchange(true)) return;
  std::string names;
  for (int sig : kTaken)
    if (mask & (1UL << sig))
      names += std::string(names.empty() ? "" : ", ") + "SIG" + sigabbrev_np(sig);
  NAA_LOG_INFO(
      "%s back to their default actions: libinfinipath.so, loaded with libfabric, had "
      "taken them with a handler that calls exit() (IPATH_NO_BACKTRACE=1 keeps it "
      "from doing so)",
      names.c_str());
}

}  // namespace naa::diag
