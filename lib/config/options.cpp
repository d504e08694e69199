// SPDX-License-Identifier: BSD-3-Clause
#include "config/options.hpp"

#include <sched.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "config/count.hpp"
#include "error.hpp"

namespace naa::config {

std::chrono::milliseconds parse_timeout(const std::string &text, const std::string &source) {
  // Digits with an optional fraction: strtod alone would also take hex, "inf", signs and blanks.
  const size_t dot = text.find('.');
  const std::string whole = text.substr(0, dot);
  const std::string fraction = dot == std::string::npos ? "" : text.substr(dot + 1);
  uint64_t ignored = 0;
  bool decimal = (whole.empty() || parse_count(whole.c_str(), UINT64_MAX, &ignored)) &&
                 (fraction.empty() || parse_count(fraction.c_str(), UINT64_MAX, &ignored)) &&
                 !(whole.empty() && fraction.empty());
  const double seconds = decimal ? std::strtod(text.c_str(), nullptr) : 0;
  // An upper bound keeps the millisecond count far from overflow; a year is no deadline anyway.
  if (!decimal || !std::isfinite(seconds) || seconds <= 0 || seconds > kMaxTimeoutSeconds)
    throw Error(NAA_ERR_CONFIG,
                source + " '" + text + "' is not a number of seconds in (0, 31536000]");
  return std::chrono::milliseconds(static_cast<long>(std::ceil(seconds * 1000)));
}

std::chrono::microseconds parse_microseconds(const std::string &text, const std::string &source) {
  uint64_t v = 0;
  if (!parse_count(text.c_str(), kMaxMicroseconds, &v))
    throw Error(NAA_ERR_CONFIG, source + " '" + text + "' is not 0..10000000");
  return std::chrono::microseconds(v);
}

bool parse_switch(const std::string &text, const std::string &source) {
  if (text == "1") return true;
  if (text == "0") return false;
  throw Error(NAA_ERR_CONFIG, source + " '" + text + "' is not 0 or 1");
}

unsigned parse_reconnect(const std::string &text, const std::string &source) {
  uint64_t v = 0;
  if (!parse_count(text.c_str(), kMaxReconnect, &v))
    throw Error(NAA_ERR_CONFIG,
                source + " '" + text + "' is not 0.." + std::to_string(kMaxReconnect));
  return static_cast<unsigned>(v);
}

namespace {
const struct {
  const char *name;
  Progress::Mode mode;
} kProgressModes[] = {{"spin", Progress::Mode::Spin},
                      {"block", Progress::Mode::Block},
                      {"spin-then-block", Progress::Mode::SpinThenBlock},
                      {"adaptive", Progress::Mode::Adaptive},
                      {"thread", Progress::Mode::Thread},
                      {"provider", Progress::Mode::Provider}};
}  // namespace

Progress::Mode parse_progress_mode(const std::string &m, const std::string &source) {
  if (m.empty()) return Progress::Mode::Adaptive;
  for (const auto &p : kProgressModes)
    if (m == p.name) return p.mode;
  throw Error(NAA_ERR_CONFIG, source + " '" + m +
                                  "' is not spin, block, "
                                  "spin-then-block, adaptive, thread or provider");
}

const char *progress_name(Progress::Mode mode) {
  for (const auto &p : kProgressModes)
    if (mode == p.mode) return p.name;
  return "?";
}

int parse_cpu(const std::string &text, const std::string &source) {
  if (text.empty()) return -1;
  uint64_t v = 0;
  if (!parse_count(text.c_str(), CPU_SETSIZE - 1, &v))
    throw Error(NAA_ERR_CONFIG, source + " '" + text + "' is not a CPU number 0.." +
                                    std::to_string(CPU_SETSIZE - 1));
  return static_cast<int>(v);
}

size_t parse_idle_endpoints(const std::string &text, const std::string &source) {
  uint64_t v = 0;
  if (!parse_count(text.c_str(), 16, &v))
    throw Error(NAA_ERR_CONFIG, source + " '" + text + "' is not a count from 0 to 16");
  return static_cast<size_t>(v);
}

size_t parse_trace_buffer(const std::string &text, const std::string &source) {
  uint64_t v = 0;
  if (!parse_count(text.c_str(), kMaxTraceBuffer, &v) || v == 0)
    throw Error(NAA_ERR_CONFIG, source + " '" + text + "' is not a count of events from 1 to " +
                                    std::to_string(kMaxTraceBuffer));
  return static_cast<size_t>(v);
}

size_t parse_write_chunk(const std::string &text, const std::string &source) {
  if (text.empty()) return SIZE_MAX;
  uint64_t v = 0;
  if (!parse_count(text.c_str(), SIZE_MAX, &v) || v < 4096)
    throw Error(NAA_ERR_CONFIG, source + " '" + text + "' is not a number of bytes >= 4096");
  return static_cast<size_t>(v);
}

}  // namespace naa::config
