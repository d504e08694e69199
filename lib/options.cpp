// SPDX-License-Identifier: BSD-3-Clause
#include "options.hpp"

#include <sched.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "count.hpp"
#include "error.hpp"

namespace naa {

constexpr double kDefaultTimeoutSeconds = 60;

std::chrono::milliseconds parse_timeout(const char *text, const char *name) {
  if (text == nullptr || *text == '\0')
    return std::chrono::milliseconds(static_cast<long>(kDefaultTimeoutSeconds * 1000));
  // strtod alone would also take hex, "inf" and leading blanks.
  bool decimal = std::strspn(text, "0123456789.") == std::strlen(text);
  char *end = nullptr;
  double seconds = decimal ? std::strtod(text, &end) : 0;
  // An upper bound keeps the millisecond count far from overflow; a year is no deadline anyway.
  if (!decimal || end == text || *end != '\0' || !std::isfinite(seconds) || seconds <= 0 ||
      seconds > kMaxTimeoutSeconds)
    throw Error(NAA_ERR_CONFIG, std::string(name) + " '" + text +
                                    "' is not a number of seconds in (0, 31536000]");
  return std::chrono::milliseconds(static_cast<long>(std::ceil(seconds * 1000)));
}

std::chrono::milliseconds timeout_from_environment() {
  return parse_timeout(std::getenv("NAA_TIMEOUT"), "NAA_TIMEOUT");
}

namespace {

// A whole number of microseconds in 0..10 s, or `fallback` when the variable is unset.
std::chrono::microseconds microseconds_from_environment(const char *name,
                                                        std::chrono::microseconds fallback) {
  const char *text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  uint64_t v = 0;
  if (!parse_count(text, kMaxMicroseconds, &v))
    throw Error(NAA_ERR_CONFIG, std::string(name) + " '" + text + "' is not 0..10000000");
  return std::chrono::microseconds(v);
}

}  // namespace

Progress::Mode parse_progress_mode(const std::string &m, const char *name) {
  if (m == "spin") return Progress::Mode::Spin;
  if (m == "block") return Progress::Mode::Block;
  if (m.empty() || m == "spin-then-block") return Progress::Mode::SpinThenBlock;
  if (m == "thread") return Progress::Mode::Thread;
  if (m == "provider") return Progress::Mode::Provider;
  throw Error(NAA_ERR_CONFIG, std::string(name) + " '" + m + "' is not spin, block, "
                              "spin-then-block, thread or provider");
}

Progress progress_from_environment() {
  Progress p = progress_tuning_from_environment();
  const char *mode = std::getenv("NAA_PROGRESS");
  p.mode = parse_progress_mode(mode != nullptr ? mode : "", "NAA_PROGRESS");
  return p;
}

Progress progress_tuning_from_environment() {
  Progress p;
  p.spin = microseconds_from_environment("NAA_SPIN_US", p.spin);
  const char *cpu = std::getenv("NAA_PROGRESS_CPU");
  if (cpu != nullptr && *cpu != '\0') {
    uint64_t v = 0;
    if (!parse_count(cpu, CPU_SETSIZE - 1, &v))
      throw Error(NAA_ERR_CONFIG, std::string("NAA_PROGRESS_CPU '") + cpu + "' is not a CPU number "
                                  "0.." + std::to_string(CPU_SETSIZE - 1));
    p.cpu = static_cast<int>(v);
  }
  return p;
}

std::chrono::microseconds pacing_from_environment() {
  return microseconds_from_environment("NAA_PACING_US", kDefaultPacing);
}

std::string rdma_device_from_environment() {
  const char *device = std::getenv("NAA_RDMA_DEVICE");
  return device != nullptr ? device : "";
}

std::string local_ip_from_environment() {
  const char *ip = std::getenv("NAA_LOCAL_IP");
  return ip != nullptr ? ip : "";
}

}  // namespace naa
