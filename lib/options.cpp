#include "options.hpp"

#include <sched.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "count.hpp"
#include "error.hpp"

namespace naa {

constexpr double kDefaultTimeoutSeconds = 60;

std::chrono::milliseconds timeout_from_environment() {
  const char *text = std::getenv("NAA_TIMEOUT");
  if (text == nullptr || *text == '\0')
    return std::chrono::milliseconds(static_cast<long>(kDefaultTimeoutSeconds * 1000));
  // strtod alone would also take hex, "inf" and leading blanks.
  bool decimal = std::strspn(text, "0123456789.") == std::strlen(text);
  char *end = nullptr;
  double seconds = decimal ? std::strtod(text, &end) : 0;
  // An upper bound keeps the millisecond count far from overflow; a year is no deadline anyway.
  if (!decimal || end == text || *end != '\0' || !std::isfinite(seconds) || seconds <= 0 ||
      seconds > 31536000)
    throw Error(NAA_ERR_CONFIG, std::string("NAA_TIMEOUT '") + text +
                                    "' is not a number of seconds in (0, 31536000]");
  return std::chrono::milliseconds(static_cast<long>(std::ceil(seconds * 1000)));
}

namespace {

// A whole number of microseconds in 0..10 s, or `fallback` when the variable is unset.
std::chrono::microseconds microseconds_from_environment(const char *name,
                                                        std::chrono::microseconds fallback) {
  const char *text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  uint64_t v = 0;
  if (!parse_count(text, 10000000, &v))
    throw Error(NAA_ERR_CONFIG, std::string(name) + " '" + text + "' is not 0..10000000");
  return std::chrono::microseconds(v);
}

}  // namespace

Progress progress_from_environment() {
  Progress p;
  const char *mode = std::getenv("NAA_PROGRESS");
  std::string m = mode != nullptr ? mode : "";
  if (m == "spin") p.mode = Progress::Mode::Spin;
  else if (m == "block") p.mode = Progress::Mode::Block;
  else if (m.empty() || m == "spin-then-block") p.mode = Progress::Mode::SpinThenBlock;
  else if (m == "thread") p.mode = Progress::Mode::Thread;
  else if (m == "provider") p.mode = Progress::Mode::Provider;
  else throw Error(NAA_ERR_CONFIG, "NAA_PROGRESS '" + m + "' is not spin, block, spin-then-block, "
                                   "thread or provider");
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

std::string local_ip_from_environment() {
  const char *ip = std::getenv("NAA_LOCAL_IP");
  return ip != nullptr ? ip : "";
}

}  // namespace naa
